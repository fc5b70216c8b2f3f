package compile

// SetShortHash replaces the hash that names sets, tables and audits, and
// returns the function that puts the real one back.
func SetShortHash(f func(string) string) (restore func()) {
	was := shortHash
	shortHash = f
	return func() { shortHash = was }
}

// ShortHash is the real hash.
var ShortHash = shortHash
