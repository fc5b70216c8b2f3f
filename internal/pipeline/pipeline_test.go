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

// unknownField is an admin policy with an unknown field (port: for ports:),
// beside a valid one: read without the field, its Allow would allow every
// port.
const unknownField = `
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

// invalidNP has a protocol that the API server refuses in a NetworkPolicy
// (files only), beside a valid one.
const invalidNP = `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: bad, namespace: shop}
spec: {podSelector: {}, ingress: [{ports: [{protocol: ICMP, port: 80}]}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: fine, namespace: shop}
spec: {podSelector: {}}
`

// TestSkipInvalid: by default one invalid object fails the build; with
// SkipInvalid (the agent) the build keeps the rest and reports it: an
// invalid NetworkPolicy is left out, an invalid admin policy is kept in
// its fail-closed form (its Allow rule then matches nothing), and an admin
// policy the decoder could not read refuses the input (leaving it out
// could lift its denies).
func TestSkipInvalid(t *testing.T) {
	cases := []struct {
		name, in string
		err      string // the build's error, and with SkipInvalid the one finding
		object   string
		field    string
		admin    string // the admin policies built with SkipInvalid
		nps      int    // and the NetworkPolicies
		refused  bool   // SkipInvalid refuses the input all the same
	}{
		{"out-of-range priority", input, "input.yaml (document 4): AdminNetworkPolicy bad: spec.priority: must be between 0 and 1000",
			"AdminNetworkPolicy bad", "spec.priority", "bad", 1, false},
		{"invalid NetworkPolicy", invalidNP, "input.yaml (document 2): NetworkPolicy shop/bad: spec.ingress[0].ports[0].protocol: unsupported value",
			"NetworkPolicy shop/bad", "spec.ingress[0].ports[0].protocol", "", 1, false},
		{"unknown field", unknownField, "input.yaml (document 2): AdminNetworkPolicy dns-only: spec.egress[0].port: unknown field",
			"AdminNetworkPolicy dns-only", "spec.egress[0].port", "", 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dec := &source.Decoder{}
			objs := dec.Decode("input.yaml", []byte(c.in))
			if _, _, err := pipeline.Build(objs, dec.Diags, pipeline.Options{}); err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("build error %v, want %q", err, c.err)
			}
			e, diags, err := pipeline.Build(objs, dec.Diags, pipeline.Options{SkipInvalid: true})
			if c.refused {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("SkipInvalid: error %v, want the input refused with %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			errs := diags.Errors()
			if len(errs) != 1 || errs[0].Object != c.object || errs[0].Field != c.field {
				t.Fatalf("findings %v, want one error on %s %s", errs, c.object, c.field)
			}
			var admin []string
			for _, p := range e.Policies().Admin {
				admin = append(admin, p.Name)
			}
			if strings.Join(admin, ",") != c.admin {
				t.Errorf("admin policies built: %q, want %q", admin, c.admin)
			}
			if n := len(e.Policies().NetworkPolicies); n != c.nps {
				t.Errorf("%d NetworkPolicies built, want %d", n, c.nps)
			}
		})
	}
}

// TestSkipInvalidRefusesANestedList: a List inside a List is not read; what
// it held (policies, maybe) is unknown, so it refuses the input as any
// document that is not an object does, instead of vanishing as an invalid
// object named after the list's kind.
func TestSkipInvalidRefusesANestedList(t *testing.T) {
	dec := &source.Decoder{}
	objs := dec.Decode("in.yaml", []byte(`
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: List
  items:
  - {apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: deny, namespace: x}, spec: {podSelector: {}}}
`))
	if _, _, err := pipeline.Build(objs, dec.Diags, pipeline.Options{SkipInvalid: true}); err == nil {
		t.Error("built an engine without the nested list's objects, want the input refused")
	}
}
