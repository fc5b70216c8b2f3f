package lint

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/netpol/netpol/internal/apis/kep"
	"github.com/netpol/netpol/internal/jsontext"
	"github.com/netpol/netpol/internal/source"
)

// kepFields reports every peer written in the KEP-2091 / network-policy-api
// v0.1.0–v0.1.2 shape. Clusters with the v0.1.3 or later CRDs have no such
// fields: kubectl rejects them (strict field validation), and an API server
// that prunes unknown fields silently changes what the peer selects. The
// hint shows the released spelling where there is one.
func (l *linter) kepFields() {
	for _, o := range l.e.Cluster().Policies {
		var ingress, egress []kep.Rule
		switch v := o.Value.(type) {
		case *kep.AdminNetworkPolicy:
			ingress, egress = v.Spec.Ingress, v.Spec.Egress
		case *kep.BaselineAdminNetworkPolicy:
			ingress, egress = v.Spec.Ingress, v.Spec.Egress
		default:
			continue
		}
		for i, r := range ingress {
			for j, p := range r.From {
				l.kepPeer(o, fmt.Sprintf("spec.ingress[%d].from[%d]", i, j), p)
			}
		}
		for i, r := range egress {
			for j, p := range r.To {
				l.kepPeer(o, fmt.Sprintf("spec.egress[%d].to[%d]", i, j), p)
			}
		}
	}
}

func (l *linter) kepPeer(o source.Object, field string, p kep.Peer) {
	add := func(f, msg, hint string) {
		l.add(Finding{Severity: Warning, Code: CodeKEPField, Object: parseRef(o.Ref()), Origin: o.Origin, Field: f,
			Message: msg + ", a field of the KEP-2091 / v0.1.1 shape that network-policy-api v0.1.3 and later CRDs reject",
			Hint:    hint})
	}
	switch {
	case p.Namespaces != nil:
		ns := p.Namespaces
		f := field + ".namespaces"
		if ns.NamespaceSelector != nil {
			add(f+".namespaceSelector", "namespaces.namespaceSelector",
				"released shape: namespaces: "+selectorYAML(ns.NamespaceSelector)+" (the selector itself, one level up)")
			return
		}
		l.kepRelative(add, f, ns, "")
	case p.Pods != nil:
		ns := p.Pods.Namespaces
		f := field + ".pods.namespaces"
		if ns.NamespaceSelector != nil {
			add(f, "pods.namespaces",
				"released shape: pods: {namespaceSelector: "+selectorYAML(ns.NamespaceSelector)+", podSelector: "+selectorYAML(&p.Pods.PodSelector)+"}")
			return
		}
		l.kepRelative(add, f, &ns, "pods: {namespaceSelector: ..., podSelector: "+selectorYAML(&p.Pods.PodSelector)+"}")
	}
}

// kepRelative reports the namespace relations, which have no released
// equivalent: the selection depends on the subject pod's namespace.
func (l *linter) kepRelative(add func(field, msg, hint string), field string, ns *kep.NamespacedPeer, podsShape string) {
	perNamespace := "no released equivalent: write one policy per namespace, selecting it by kubernetes.io/metadata.name"
	if podsShape != "" {
		perNamespace += " (" + podsShape + ")"
	}
	switch {
	case ns.Related != nil && *ns.Related == kep.Self:
		add(field+".related", "related: Self", perNamespace+", or use a NetworkPolicy in each namespace, which selects its own namespace by default")
	case ns.Related != nil:
		add(field+".related", "related: "+string(*ns.Related), perNamespace+" with the other namespaces in a matchExpressions NotIn")
	case ns.SameLabels != nil:
		add(field+".sameLabels", "sameLabels: ["+strings.Join(ns.SameLabels, ", ")+"]", "no released equivalent: write one policy per value of "+strings.Join(ns.SameLabels, ", ")+" with a matchLabels selector")
	case ns.NotSameLabels != nil:
		add(field+".notSameLabels", "notSameLabels: ["+strings.Join(ns.NotSameLabels, ", ")+"]", "no released equivalent: write one policy per value of "+strings.Join(ns.NotSameLabels, ", ")+" with a matchExpressions NotIn selector")
	}
}

// selectorYAML writes a label selector in YAML flow style (JSON is YAML).
func selectorYAML(s *metav1.LabelSelector) string {
	b, err := jsontext.Marshal(s)
	if err != nil {
		return "{...}"
	}
	return string(b)
}
