package nft

import (
	"strings"

	"sigs.k8s.io/knftables"
)

// commentText is the one way user text (policy and rule names, selector
// keys, domain patterns) reaches nft: as the characters of a comment and
// never as syntax. knftables writes a comment with Go's %q, but nft's
// quoted strings have no escapes and end at the first '"': a rule name
// holding `x" ; insert rule ...` would end the comment and be read as
// commands, and a name that %q expands past nft's 128 bytes would fail the
// whole transaction. So only printable ASCII other than '"' and '\' is
// kept (the bytes %q writes as they are and nft reads as they are); every
// other character, or byte of invalid UTF-8, becomes '?', and the result
// is cut to nft's limit, which on ASCII never splits a character.
func commentText(s string) string {
	const ellipsis = "..."
	var b strings.Builder
	for _, c := range s {
		if b.Len() == knftables.CommentLengthMax {
			out := b.String()
			return out[:len(out)-len(ellipsis)] + ellipsis
		}
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			c = '?'
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}
