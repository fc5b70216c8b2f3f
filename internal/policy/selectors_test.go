package policy_test

import (
	"testing"

	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
)

// TestRepeatedSelectors: a selector compiled once serves every policy that
// repeats it (policy.Normalize compiles each distinct one once), and an
// invalid one is still reported at each place it is written; selectors
// that differ only in the order of their matchLabels are one.
func TestRepeatedSelectors(t *testing.T) {
	const doc = preamble + `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: a, namespace: x}
spec:
  podSelector: {matchLabels: {app: web, tier: front}}
  ingress: [{from: [{podSelector: {matchLabels: {"bad key!": x}}}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: b, namespace: x}
spec:
  podSelector: {matchLabels: {tier: front, app: web}}
  egress: [{to: [{podSelector: {matchExpressions: [{key: app, operator: In, values: [db, cache]}]}}, {podSelector: {matchLabels: {"bad key!": x}}}]}]
`
	dec := &source.Decoder{}
	objs := dec.Decode(validateFile, []byte(doc))
	if err := dec.Diags.Err(); err != nil {
		t.Fatal(err)
	}
	_, diags := policy.Normalize(objs)
	var got [][2]string
	for _, d := range diags.Errors() {
		got = append(got, [2]string{d.Object, d.Field})
	}
	want := [][2]string{
		{"NetworkPolicy x/a", "spec.ingress[0].from[0].podSelector"},
		{"NetworkPolicy x/b", "spec.egress[0].to[1].podSelector"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("errors at %v, want %v", got, want)
	}

	// Without the invalid peers both are valid, and their subjects one.
	const valid = preamble + `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: a, namespace: x}
spec: {podSelector: {matchLabels: {app: web, tier: front}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: b, namespace: x}
spec: {podSelector: {matchLabels: {tier: front, app: web}}}
`
	dec = &source.Decoder{}
	set, diags := policy.Normalize(dec.Decode(validateFile, []byte(valid)))
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	a, b := set.NetworkPolicies[0].Subject.Pods, set.NetworkPolicies[1].Subject.Pods
	if a.Text != "app=web,tier=front" || b.Text != a.Text {
		t.Errorf("subjects %q and %q, want both app=web,tier=front", a.Text, b.Text)
	}
}

// TestSelectorsApart: selectors compiled once per distinct content are
// kept apart by every part of it: an operator, a value, a value list's
// length, matchLabels against a matchExpression of the same pair. Each
// subject keeps its own text (a cache keyed on less would give two of
// them one).
func TestSelectorsApart(t *testing.T) {
	subjects := []string{
		`{matchExpressions: [{key: app, operator: In, values: [a]}]}`,
		`{matchExpressions: [{key: app, operator: NotIn, values: [a]}]}`,
		`{matchExpressions: [{key: app, operator: In, values: [b]}]}`,
		`{matchExpressions: [{key: app, operator: In, values: [a, b]}]}`,
		`{matchLabels: {app: a}}`,
		`{matchExpressions: [{key: app, operator: Exists}]}`,
	}
	doc := preamble
	for i, s := range subjects {
		doc += "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p" + string(rune('0'+i)) + ", namespace: x}\nspec: {podSelector: " + s + "}\n---\n"
	}
	dec := &source.Decoder{}
	set, diags := policy.Normalize(dec.Decode(validateFile, []byte(doc)))
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"app in (a)", "app notin (a)", "app in (b)", "app in (a,b)", "app=a", "app"}
	if len(set.NetworkPolicies) != len(want) {
		t.Fatalf("%d policies, want %d", len(set.NetworkPolicies), len(want))
	}
	for i, p := range set.NetworkPolicies {
		if got := p.Subject.Pods.Text; got != want[i] {
			t.Errorf("%s selects %q, want %q", p.Ref.Name, got, want[i])
		}
	}
}
