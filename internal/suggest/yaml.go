package suggest

import "github.com/netpol/netpol/internal/manifest"

// Document is p as it is written out (manifest.Document).
func Document(p Policy) (map[string]any, error) { return manifest.Document(p) }

// YAML writes policies as one YAML stream, in their order.
func YAML(policies []Policy) ([]byte, error) { return manifest.YAML(policies) }
