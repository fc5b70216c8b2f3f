// Package manifest writes API objects as the manifests users apply: YAML
// streams without the fields nobody writes by hand. It sits beside the
// front ends that write policies (suggest, convert) and imports nothing of
// netpol.
package manifest

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Object is an API object with its metadata.
type Object interface {
	metav1.Object
	runtime.Object
}

// Document is o as it is written out: the admin APIs' Go types carry a
// status (conditions: null) and every object an empty creationTimestamp,
// which nobody writes into a manifest, so both are left out.
func Document(o Object) (map[string]any, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
	}
	delete(doc, "status")
	if meta, ok := doc["metadata"].(map[string]any); ok && meta["creationTimestamp"] == nil {
		delete(meta, "creationTimestamp")
	}
	return doc, nil
}

// YAML writes objects as one YAML stream, in their order.
func YAML[T Object](objects []T) ([]byte, error) {
	docs := make([]string, 0, len(objects))
	for _, o := range objects {
		doc, err := Document(o)
		if err != nil {
			return nil, err
		}
		b, err := yaml.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
		docs = append(docs, string(b))
	}
	return []byte(strings.Join(docs, "---\n")), nil
}
