package lab

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/netpol/netpol/internal/source"
)

// The lab's manifests are one YAML stream that the agents read. apply and
// delete edit it as kubectl edits a cluster: by kind, namespace and name.

type document struct {
	key  string // Kind namespace/name; "" for a document that names nothing
	text []byte
}

func documents(data []byte) ([]document, error) {
	var out []document
	for i, doc := range source.SplitDocuments(data) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		var h struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &h); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		d := document{text: bytes.TrimSpace(doc)}
		if h.Kind != "" && h.Metadata.Name != "" {
			d.key = h.Kind + " " + h.Metadata.Namespace + "/" + h.Metadata.Name
		}
		out = append(out, d)
	}
	return out, nil
}

func join(docs []document) []byte {
	var b bytes.Buffer
	for _, d := range docs {
		b.WriteString("---\n")
		b.Write(d.text)
		b.WriteString("\n")
	}
	return b.Bytes()
}

// ApplyManifests returns current with every object of more added, or
// replacing the object of the same kind, namespace and name in place.
func ApplyManifests(current, more []byte) ([]byte, error) {
	docs, err := documents(current)
	if err != nil {
		return nil, fmt.Errorf("lab manifests: %w", err)
	}
	add, err := documents(more)
	if err != nil {
		return nil, err
	}
	index := map[string]int{}
	for i, d := range docs {
		if d.key != "" {
			index[d.key] = i
		}
	}
	for _, d := range add {
		if i, ok := index[d.key]; ok && d.key != "" {
			docs[i] = d
			continue
		}
		index[d.key] = len(docs)
		docs = append(docs, d)
	}
	return join(docs), nil
}

// DeleteManifests returns current without the objects named in gone (only
// kind, namespace and name are read). Naming an object that is not there is
// an error, as for kubectl delete, and nothing is removed.
func DeleteManifests(current, gone []byte) ([]byte, error) {
	docs, err := documents(current)
	if err != nil {
		return nil, fmt.Errorf("lab manifests: %w", err)
	}
	del, err := documents(gone)
	if err != nil {
		return nil, err
	}
	drop := map[string]bool{}
	for _, d := range del {
		if d.key == "" {
			return nil, fmt.Errorf("an object to delete needs kind and metadata.name")
		}
		drop[d.key] = true
	}
	var kept []document
	for _, d := range docs {
		if drop[d.key] {
			delete(drop, d.key)
			continue
		}
		kept = append(kept, d)
	}
	if len(drop) > 0 {
		missing := make([]string, 0, len(drop))
		for key := range drop {
			missing = append(missing, key)
		}
		sort.Strings(missing)
		return nil, fmt.Errorf("%s is not in the lab", strings.Join(missing, ", "))
	}
	return join(kept), nil
}
