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
