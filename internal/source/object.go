// Package source reads Kubernetes objects: from files, directories and stdin
// now, from the API server later, into one Object value per item. It is the top
// of the data flow (DESIGN.md): it knows YAML, JSON and API shapes, and nothing
// of what policies mean. It must not import state, policy, engine or cli.
//
// Decoding has fast paths of its own in front of sigs.k8s.io/yaml and
// sigs.k8s.io/json, measured: the two libraries were nine tenths of the
// time to read a dump (BenchmarkDecode, 1k pods: about 150 ms with them
// alone, 13 ms with the fast paths). The YAML converter (fastyaml.go) and
// the typed decoder (typed.go) give exactly what the libraries give for
// the input they take, and hand all other input to them, so results and
// messages stay theirs; fuzz tests hold each fast path to its library
// (FuzzFastYAML, FuzzFastDecode, FuzzPeekHeader) and the whole Decoder to
// one without them (FuzzFastPaths).
package source

import (
	"errors"

	"github.com/netpol/netpol/internal/diag"
)

// ErrIncomplete marks a read that returns what it knows while some kinds
// cannot be known (discovery cannot tell whether the API server serves
// them): the objects hold none of those kinds, which may exist.
var ErrIncomplete = errors.New("input incomplete")

// Object is one decoded Kubernetes object.
type Object struct {
	Origin    diag.Origin
	Kind      string // e.g. "NetworkPolicy"
	Namespace string
	Name      string
	// Value is a pointer to the typed object: *corev1.Pod, *networkingv1.NetworkPolicy,
	// *v1alpha1.AdminNetworkPolicy, *kep.AdminNetworkPolicy, *v1alpha2.ClusterNetworkPolicy, ...
	Value any
	// Unknown lists the field paths the decoder dropped because the API shape has
	// no such field, as the API server prunes them. Policy normalisation uses it
	// to fail closed on peers that only had unknown fields.
	Unknown []string
}

// Ref names the object for messages: "Kind namespace/name" or "Kind name".
func (o Object) Ref() string {
	if o.Namespace != "" {
		return o.Kind + " " + o.Namespace + "/" + o.Name
	}
	if o.Name != "" {
		return o.Kind + " " + o.Name
	}
	return o.Kind
}

// Reporter returns a reporter that files findings under this object.
func (o Object) Reporter(l *diag.List) diag.Reporter {
	return diag.Reporter{Origin: o.Origin, Object: o.Ref(), List: l}
}
