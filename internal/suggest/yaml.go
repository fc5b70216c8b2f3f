package suggest

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// Document is p as it is written out: the admin APIs' Go types carry a
// status (conditions: null) that nobody writes into a manifest, so it is
// left out.
func Document(p Policy) (map[string]any, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", p.GetName(), err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("policy %s: %w", p.GetName(), err)
	}
	delete(doc, "status")
	return doc, nil
}

// YAML writes policies as one YAML stream, in their order.
func YAML(policies []Policy) ([]byte, error) {
	docs := make([]string, 0, len(policies))
	for _, p := range policies {
		doc, err := Document(p)
		if err != nil {
			return nil, err
		}
		b, err := yaml.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", p.GetName(), err)
		}
		docs = append(docs, string(b))
	}
	return []byte(strings.Join(docs, "---\n")), nil
}
