package suggest

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
)

// build is the engine of a YAML stream.
func build(t *testing.T, docs string) *engine.Engine {
	t.Helper()
	dec := &source.Decoder{}
	e, _, err := pipeline.Build(dec.Decode("c.yaml", []byte(docs)), dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// suggestEnforced suggests for flows over input and returns the engine of
// input with the suggestion enforced.
func suggestEnforced(t *testing.T, input string, flows []Flow) *engine.Engine {
	t.Helper()
	return suggestTier(t, input, flows, Options{})
}

// suggestTier is suggestEnforced with options (Enforce is set).
func suggestTier(t *testing.T, input string, flows []Flow, opts Options) *engine.Engine {
	t.Helper()
	opts.Enforce = true
	ps, err := Suggest(build(t, input).Cluster(), flows, opts)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := YAML(ps)
	if err != nil {
		t.Fatal(err)
	}
	return build(t, input+"\n---\n"+string(docs))
}

// withoutJustification drops the netpol.io/suggested-from annotation (its
// key line and the lines of its block) from a YAML stream.
func withoutJustification(s string) string {
	var out []string
	in := false
	for _, line := range strings.Split(s, "\n") {
		if strings.Contains(line, "netpol.io/suggested-from:") {
			in = true
			continue
		}
		if in && strings.HasPrefix(line, "      ") {
			continue
		}
		in = false
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// TestSuggestWorkloadEnds: flows that name the Deployment web (as the
// agent records them) write the policies that flows naming its pods do;
// only the annotations, which quote the flows, differ.
func TestSuggestWorkloadEnds(t *testing.T) {
	e, _ := fixture(t)
	tcp := func(n uint16) l4.Port { return l4.Port{Proto: l4.TCP, Num: n} }
	flows := []Flow{
		{From: "app/client", To: "shop/Deployment/web", Port: tcp(8080), Count: 3},
		{From: "shop/Deployment/web", To: "198.18.200.7", Port: tcp(443), Count: 2},
	}
	nps, err := Suggest(e.Cluster(), flows, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, np := range nps {
		b, _ := yaml.Marshal(np)
		docs = append(docs, string(b))
	}
	if got, want := withoutJustification(strings.Join(docs, "---\n")), withoutJustification(wantSuggested); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	want := "app/client -> shop/Deployment/web 8080/tcp (3 times)\nshop/Deployment/web -> 198.18.200.7 443/tcp (2 times)"
	if got := nps[1].GetAnnotations()["netpol.io/suggested-from"]; got != want {
		t.Errorf("%s justified by %q, want %q", nps[1].GetName(), got, want)
	}
	for _, f := range []Flow{
		{From: "app/client", To: "shop/Deployment/api", Port: tcp(80)},
		{From: "app/client", To: "shop/StatefulSet/web", Port: tcp(80)},
	} {
		_, err := Suggest(e.Cluster(), []Flow{f}, Options{})
		if want := "flow names workload " + f.To + " (namespace/Kind/name), which the input has no pod of"; err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", f, err, want)
		}
	}
}

// denyToWebB: an admin policy that denies the client egress to the
// address of web-7d9f-b on 8080, before and after the suggestion.
const denyToWebB = `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: no-web-b}
spec:
  priority: 5
  subject: {namespaces: {matchLabels: {kubernetes.io/metadata.name: app}}}
  egress:
  - {name: web-b, action: Deny, to: [{networks: [198.18.1.2/32]}], ports: [{portNumber: {protocol: TCP, port: 8080}}]}
`

// TestVerifyWorkloadEnds: a flow to the Deployment is allowed only if it
// is to each of its pods, and marks each pair observed. The cells (pairs x
// declared ports) are client -> web-a, client -> web-b, web-a -> web-b,
// web-b -> web-a: 4; the web pods lose each other (2); the client keeps
// both web pods, which stay open unobserved unless a flow names them.
func TestVerifyWorkloadEnds(t *testing.T) {
	tcp := func(n uint16) l4.Port { return l4.Port{Proto: l4.TCP, Num: n} }
	toWeb := Flow{From: "app/client", To: "shop/Deployment/web", Port: tcp(8080), Count: 1}
	toWebA := Flow{From: "app/client", To: "shop/web-7d9f-a", Port: tcp(8080), Count: 1}
	out := Flow{From: "shop/Deployment/web", To: "198.18.200.7", Port: tcp(443), Count: 1}
	for _, tt := range []struct {
		name   string
		input  string
		flows  []Flow
		want   Report
		denied string
	}{
		{"the Deployment: both pods observed", cluster, []Flow{toWeb, out},
			Report{Flows: 2, Allowed: 2, Cells: 4, Lost: 2, OpenUnobserved: 0}, ""},
		{"one pod by name: the other open unobserved", cluster, []Flow{toWebA, out},
			Report{Flows: 2, Allowed: 2, Cells: 4, Lost: 2, OpenUnobserved: 1}, ""},
		// The admin policy denies client -> web-b before and after: the
		// flow to the Deployment is denied (for web-b), the one to web-a
		// allowed; client -> web-b was denied before already, so only
		// the web pods' two cells are lost.
		{"an admin deny for one pod denies the workload's flow", cluster + "---\n" + denyToWebB, []Flow{toWeb, toWebA},
			Report{Flows: 2, Allowed: 1, Cells: 4, Lost: 2, OpenUnobserved: 0}, "app/client -> shop/Deployment/web 8080/tcp"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := build(t, tt.input)
			after := suggestEnforced(t, tt.input, tt.flows)
			r, err := Verify(before, after, tt.flows)
			if err != nil {
				t.Fatal(err)
			}
			var denied []string
			for _, f := range r.Denied {
				denied = append(denied, f.String())
			}
			r.Denied = nil
			if !sameCounts(r, tt.want) || strings.Join(denied, "; ") != tt.denied {
				t.Errorf("report %+v denied %q, want %+v denied %q", r, denied, tt.want, tt.denied)
			}
		})
	}
}

// sameCounts compares two reports but their denied flows.
func sameCounts(a, b Report) bool {
	return a.Flows == b.Flows && a.Allowed == b.Allowed && a.Cells == b.Cells && a.Lost == b.Lost && a.OpenUnobserved == b.OpenUnobserved
}
