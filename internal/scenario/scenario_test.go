package scenario

import (
	"strings"
	"testing"
)

const webScenario = `
name: web accepts only the frontend
topology:
  namespaces: [shop]
  pods: [shop/web, shop/frontend, shop/batch]
  ports: [80/tcp]
steps:
- name: isolate web
  apply:
  - apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: web, namespace: shop}
    spec:
      podSelector: {matchLabels: {pod: web}}
      ingress: [{from: [{podSelector: {matchLabels: {pod: frontend}}}]}]
  expect:
  - ports: [80/tcp]
    default: allow
    overrides:
    - deny: "* -> shop/web"
    - allow: "shop/frontend -> shop/web"
  flows:
  - {from: shop/batch, to: 198.18.1.1, port: 80/tcp, allowed: false}
- name: policy deleted
  delete: [{kind: NetworkPolicy, namespace: shop, name: web}]
  expect:
  - ports: [80/tcp]
    default: allow
`

func TestRunPassesAndCounts(t *testing.T) {
	s, err := Parse("web.yaml", []byte(webScenario))
	if err != nil {
		t.Fatal(err)
	}
	r := Run(s, Options{})
	if !r.Passed() {
		var b strings.Builder
		WriteFailure(&b, r)
		t.Fatalf("expected pass:\n%s", b.String())
	}
	// 3 pods: 6 ordered pairs per step, plus one single flow in step 1.
	if got := r.Checked(); got != 13 {
		t.Errorf("checked %d flows, want 13", got)
	}
}

func TestRunReportsMismatchWithTrace(t *testing.T) {
	wrong := strings.Replace(webScenario, `- allow: "shop/frontend -> shop/web"`, `- allow: "shop/batch -> shop/web"`, 1)
	s, err := Parse("web.yaml", []byte(wrong))
	if err != nil {
		t.Fatal(err)
	}
	r := Run(s, Options{})
	if r.Passed() {
		t.Fatal("expected failure")
	}
	mm := r.Steps[0].Mismatches
	if len(mm) != 2 {
		t.Fatalf("want 2 mismatches (batch->web, frontend->web), got %d: %+v", len(mm), mm)
	}
	var b strings.Builder
	WriteFailure(&b, r)
	for _, want := range []string{"shop/batch -> shop/web 80/tcp: expected allowed, got denied", "isolated by NetworkPolicy shop/web"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"no name", "steps: [{}]", "name is required"},
		{"no steps", "name: x", "at least one step"},
		{"bad default", "name: x\nsteps: [{expect: [{ports: [80/tcp], default: maybe}]}]", `steps[0].expect[0].default: want allow or deny, got "maybe"`},
		{"bad port", "name: x\nsteps: [{expect: [{ports: [http], default: allow}]}]", "steps[0].expect[0].ports"},
		{"bad override", "name: x\nsteps: [{expect: [{ports: [80], default: allow, overrides: [{allow: a -> b}]}]}]", "want namespace/pod"},
		{"unknown field", "name: x\nstep: []", `unknown field "step"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(c.text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want error containing %q", err, c.want)
			}
		})
	}
}
