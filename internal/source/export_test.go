package source

// FastYAMLToJSON exposes the fast converter to the external tests, which
// may import the synthetic clusters (synth imports source).
func FastYAMLToJSON(doc []byte) ([]byte, bool) {
	var c yamlToJSON
	return c.convert(doc)
}
