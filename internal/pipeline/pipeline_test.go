package pipeline_test

import (
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
)

const input = `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: isolate, namespace: shop}
spec: {podSelector: {}}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: bad}
spec:
  priority: 1001
  subject: {namespaces: {}}
  ingress: [{name: r, action: Allow, from: [{namespaces: {}}]}]
`

// TestSkipInvalid: by default one invalid object fails the build; with
// SkipInvalid the build leaves it out, keeps the rest, and reports it.
func TestSkipInvalid(t *testing.T) {
	dec := &source.Decoder{}
	objs := dec.Decode("input.yaml", []byte(input))
	if _, _, err := pipeline.Build(objs, dec.Diags, pipeline.Options{}); err == nil {
		t.Fatal("build with an out-of-range priority succeeded")
	}
	e, diags, err := pipeline.Build(objs, dec.Diags, pipeline.Options{SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	errs := diags.Errors()
	if len(errs) != 1 || errs[0].Object != "AdminNetworkPolicy bad" || errs[0].Field != "spec.priority" {
		t.Fatalf("findings %v, want one error on AdminNetworkPolicy bad spec.priority", errs)
	}
	if n := len(e.Policies().Admin); n != 0 {
		t.Errorf("%d admin policies built, want 0", n)
	}
	if n := len(e.Policies().NetworkPolicies); n != 1 {
		t.Errorf("%d NetworkPolicies built, want 1 (isolate)", n)
	}
}

// TestSkipInvalidUnknownField: an admin policy with an unknown field (port:
// for ports:) is invalid: it fails the build, and SkipInvalid (the agent in
// a cluster) leaves it out instead of enforcing it without the field.
func TestSkipInvalidUnknownField(t *testing.T) {
	const in = `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: dns-only}
spec:
  priority: 5
  subject: {namespaces: {}}
  egress: [{name: dns, action: Allow, to: [{networks: [198.19.0.0/16]}], port: [{portNumber: {port: 53, protocol: UDP}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: fine}
spec:
  priority: 6
  subject: {namespaces: {}}
  egress: [{name: deny, action: Deny, to: [{networks: [198.19.0.0/16]}]}]
`
	dec := &source.Decoder{}
	objs := dec.Decode("input.yaml", []byte(in))
	if _, _, err := pipeline.Build(objs, dec.Diags, pipeline.Options{}); err == nil ||
		!strings.Contains(err.Error(), "input.yaml (document 2): AdminNetworkPolicy dns-only: spec.egress[0].port: unknown field") {
		t.Fatalf("build error %v, want one naming spec.egress[0].port of AdminNetworkPolicy dns-only", err)
	}
	e, diags, err := pipeline.Build(objs, dec.Diags, pipeline.Options{SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	errs := diags.Errors()
	if len(errs) != 1 || errs[0].Object != "AdminNetworkPolicy dns-only" || errs[0].Field != "spec.egress[0].port" {
		t.Fatalf("findings %v, want one error on AdminNetworkPolicy dns-only spec.egress[0].port", errs)
	}
	var names []string
	for _, p := range e.Policies().Admin {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "fine" {
		t.Errorf("admin policies built: %q, want [fine]", names)
	}
}
