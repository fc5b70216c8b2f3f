package pipeline_test

import (
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
