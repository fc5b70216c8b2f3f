package scenario

import (
	"os"
	"path/filepath"
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

// A family of scenarios shares one cluster file kept in a "_" directory:
// the walk must not read it as a scenario, and each scenario sees its objects.
func TestLoadFilesIncludesSharedCluster(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("_cluster/shop.yaml", `apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {team: shop}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c, ports: [{containerPort: 80}]}]}
status: {podIPs: [{ip: 198.18.7.1}]}
---
apiVersion: v1
kind: Pod
metadata: {name: batch, namespace: shop, labels: {app: batch}}
status: {podIPs: [{ip: 198.18.7.2}]}
`)
	write("deny.yaml", `name: web isolated
include: [_cluster/shop.yaml]
steps:
- apply:
  - apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata: {name: web, namespace: shop}
    spec: {podSelector: {matchLabels: {app: web}}}
  flows:
  - {from: shop/batch, to: shop/web, port: 80/tcp, allowed: false}
  - {from: shop/web, to: 198.18.7.2, port: 80/tcp, allowed: true}
`)
	scenarios, err := LoadFiles([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(scenarios) != 1 || scenarios[0].Name != "web isolated" {
		t.Fatalf("want only the scenario, got %d files", len(scenarios))
	}
	if got := len(scenarios[0].Objects); got != 3 {
		t.Fatalf("included %d objects, want 3", got)
	}
	r := Run(scenarios[0], Options{})
	if !r.Passed() || r.Checked() != 2 {
		var b strings.Builder
		WriteFailure(&b, r)
		t.Fatalf("want 2 passing flows, got %d:\n%s", r.Checked(), b.String())
	}

	write("broken.yaml", "name: broken\ninclude: [_cluster/missing.yaml]\nsteps: [{}]\n")
	if _, err := LoadFiles([]string{dir}); err == nil || !strings.Contains(err.Error(), "broken.yaml: include[0]") {
		t.Errorf("missing include: got %v, want an error naming the file and include[0]", err)
	}
}

// TestServiceFlowErrors: reach is for flows to Services, and a flow to a
// Service needs it; an address stays an address without it, even the
// cluster IP of a topology's Service.
func TestServiceFlowErrors(t *testing.T) {
	cases := []struct{ flow, want string }{
		{"{from: shop/batch, to: shop/web, port: 80/tcp, reach: all}",
			"steps[0].flows[0].reach: only for a flow to a Service (svc/NAMESPACE/NAME, NAME.NAMESPACE.svc or a cluster IP), and shop/web is none: use allowed"},
		{"{from: shop/batch, to: svc/shop/s-shop-web, port: 80/tcp, allowed: true}",
			"steps[0].flows[0]: svc/shop/s-shop-web is a Service: say how many backends the source reaches with reach (all, some, none or no-backends)"},
		{"{from: shop/batch, to: svc/shop/s-shop-web, port: 80/tcp, reach: most}",
			`steps[0].flows[0]: reach: "most": want none, some, all, no-backends`},
		{"{from: shop/batch, to: svc/shop/nope, port: 80/tcp, reach: all}",
			`steps[0].flows[0].to: "svc/shop/nope": no such Service`},
		{"{from: shop/batch, to: svc/shop/s-shop-web, port: 81/tcp, reach: all}",
			"steps[0].flows[0]: Service shop/s-shop-web has no port 81/tcp (it has: service-port-tcp-80=80/tcp)"},
	}
	for _, c := range cases {
		text := "name: x\ntopology: {namespaces: [shop], pods: [shop/web, shop/batch], ports: [80/tcp]}\nsteps: [{flows: [" + c.flow + "]}]"
		s, err := Parse("s.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		r := Run(s, Options{})
		if len(r.Steps) != 1 || r.Steps[0].Err == nil || !strings.Contains(r.Steps[0].Err.Error(), c.want) {
			t.Errorf("%s: got %+v, want an error containing %q", c.flow, r.Steps, c.want)
		}
	}
	// The topology Service's cluster IP as a plain address: a flow to an
	// address, allowed as before.
	text := "name: x\ntopology: {namespaces: [shop], pods: [shop/web, shop/batch], ports: [80/tcp]}\nsteps: [{flows: [{from: shop/batch, to: 198.19.1.1, port: 80/tcp, allowed: true}]}]"
	s, err := Parse("s.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if r := Run(s, Options{}); !r.Passed() {
		var b strings.Builder
		WriteFailure(&b, r)
		t.Errorf("a flow to the address of a topology Service:\n%s", b.String())
	}
}

// TestFlowPortsAsTheAPISpellsThem: a flow's port may be written as the
// Kubernetes API writes one, a number with the protocol beside it.
func TestFlowPortsAsTheAPISpellsThem(t *testing.T) {
	step := func(flow string) string {
		return "name: x\ntopology: {namespaces: [shop], pods: [shop/web, shop/batch], ports: [80, 53/udp]}\nsteps: [{apply: [{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: web, namespace: shop}, spec: {podSelector: {matchLabels: {pod: web}}, ingress: [{ports: [{port: 53, protocol: UDP}]}]}}], flows: [" + flow + "]}]"
	}
	for _, flow := range []string{
		"{from: shop/batch, to: shop/web, port: 53, protocol: UDP, allowed: true}",
		"{from: shop/batch, to: shop/web, port: 80, protocol: TCP, allowed: false}",
		"{from: shop/batch, to: shop/web, port: serve-53-udp, protocol: UDP, allowed: true}",
		"{from: shop/batch, to: shop/web, port: 53, allowed: false}", // TCP
	} {
		s, err := Parse("s.yaml", []byte(step(flow)))
		if err != nil {
			t.Errorf("%s: %v", flow, err)
			continue
		}
		if r := Run(s, Options{}); !r.Passed() {
			var b strings.Builder
			WriteFailure(&b, r)
			t.Errorf("%s:\n%s", flow, b.String())
		}
	}
	s, err := Parse("s.yaml", []byte(step("{from: shop/batch, to: shop/web, port: 53/tcp, protocol: UDP, allowed: true}")))
	if err != nil {
		t.Fatal(err)
	}
	want := `steps[0].flows[0].port: port "53/tcp" is TCP, but protocol says UDP`
	if r := Run(s, Options{}); len(r.Steps) != 1 || r.Steps[0].Err == nil || !strings.Contains(r.Steps[0].Err.Error(), want) {
		t.Errorf("a protocol that contradicts the port: %+v, want %q", r.Steps, want)
	}
}
