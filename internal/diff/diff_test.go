package diff

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
)

func build(t *testing.T, paths ...string) *engine.Engine {
	t.Helper()
	dec := &source.Decoder{}
	objects, err := dec.Load(paths, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := pipeline.Build(objects, dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func buildYAML(t *testing.T, yaml string) *engine.Engine {
	t.Helper()
	dec := &source.Decoder{}
	objects, err := dec.Load([]string{"-"}, strings.NewReader(yaml))
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := pipeline.Build(objects, dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// lines prints a result one entry per line, for literal comparison.
func lines(r *Result) []string {
	var out []string
	for _, g := range r.Groups {
		for _, e := range g.Entries {
			l := fmt.Sprintf("%s -> %s: %s -> %s %s", g.From, g.To, strings.Join(e.From, ","), strings.Join(e.To, ","), e.Change)
			for _, p := range e.Gained {
				l += " +" + p.String()
			}
			for _, p := range e.Lost {
				l += " -" + p.String()
			}
			out = append(out, l)
		}
	}
	return out
}

// TestExample: the pull request of examples/diff moves the web tier from
// http to https, tightens the payments API to its two real clients, opens
// the ledger's metrics to monitoring and closes monitoring to everyone. The
// expectations are worked out by hand from the policies (see the README of
// examples/diff).
func TestExample(t *testing.T) {
	old := build(t, "../../examples/diff/old")
	new := build(t, "../../examples/diff/new")
	r := Compare(old, new, Options{})
	all := " -any/tcp -any/udp -any/sctp"
	want := []string{
		// Monitoring keeps its metrics port on the API and gains the ledger's.
		"monitoring -> payments: prometheus-0 -> api-0 lost -1-9089/tcp -9091-65535/tcp -any/udp -any/sctp",
		"monitoring -> payments: prometheus-0 -> ledger-0 gained +9090/tcp",
		// Every client of the web tier: https instead of http.
		"monitoring -> shop: prometheus-0 -> web-0,web-1 changed +8443/tcp -8080/tcp",
		// The admin policy closes monitoring to every pod.
		"payments -> monitoring: api-0 -> prometheus-0 lost" + all,
		"payments -> monitoring: ledger-0 -> prometheus-0 lost" + all,
		// The ledger was never a client of the API: now it is refused.
		"payments -> payments: ledger-0 -> api-0 lost" + all,
		"payments -> shop: api-0 -> web-0,web-1 changed +8443/tcp -8080/tcp",
		"payments -> shop: ledger-0 -> web-0,web-1 changed +8443/tcp -8080/tcp",
		"shop -> monitoring: batch-0 -> prometheus-0 lost" + all,
		"shop -> monitoring: web-0,web-1 -> prometheus-0 lost" + all,
		"shop -> payments: batch-0 -> api-0 lost" + all,
		// The web pods keep https on the API only.
		"shop -> payments: web-0,web-1 -> api-0 lost -1-8442/tcp -8444-65535/tcp -any/udp -any/sctp",
		"shop -> shop: batch-0 -> web-0,web-1 changed +8443/tcp -8080/tcp",
		// web-0 -> web-1 and web-1 -> web-0.
		"shop -> shop: web-0,web-1 -> web-0,web-1 changed +8443/tcp -8080/tcp",
	}
	if got := lines(r); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	s := r.Summary
	if s.Gained != 1 || s.Lost != 8 || s.Changed != 5 || s.PodPairs != 21 {
		t.Errorf("summary %+v; want gained 1, lost 8, changed 5, pod pairs 21", s)
	}
	// TCP is cut at 5432, 8080, 8443 and 9090 (each its own segment), UDP
	// and SCTP are whole: 9 + 1 + 1.
	if s.PortSegments != 11 {
		t.Errorf("%d port segments, want 11", s.PortSegments)
	}
	if len(r.AddedPods) != 0 || len(r.RemovedPods) != 0 || r.Empty() {
		t.Errorf("pods added %v, removed %v; empty %v", r.AddedPods, r.RemovedPods, r.Empty())
	}
	if again := Compare(new, new, Options{}); !again.Empty() || again.Summary.PodPairs != 0 {
		t.Errorf("NEW against itself: %v", lines(again))
	}
	// Reversed, every gain is a loss.
	rev := Compare(new, old, Options{})
	if rev.Summary.Gained != 8 || rev.Summary.Lost != 1 || rev.Summary.Changed != 5 {
		t.Errorf("reversed summary %+v; want gained 8, lost 1, changed 5", rev.Summary)
	}
}

// TestExplain: each changed range names the deciding rule on both sides,
// in OLD and in NEW.
func TestExplain(t *testing.T) {
	r := Compare(build(t, "../../examples/diff/old"), build(t, "../../examples/diff/new"), Options{Explain: true})
	var got []string
	for _, g := range r.Groups {
		for _, e := range g.Entries {
			if g.From == "payments" && g.To == "monitoring" && e.From[0] == "api-0" || g.From == "shop" && g.To == "shop" && e.From[0] == "web-0" {
				for _, x := range e.Explain {
					got = append(got, fmt.Sprintf("%s %s %s -> %s %s\n  old: %s\n  new: %s", x.Change, FormatPorts(x.Ports), x.From, x.To, x.Port, Describe(x.Old), Describe(x.New)))
				}
			}
		}
	}
	// The three protocols are lost to one rule: one explanation.
	want := []string{
		`lost all ports payments/api-0 -> monitoring/prometheus-0 1/tcp
  old: allowed; egress: Default: Allow (nothing denied it); ingress: Default: Allow (nothing denied it)
  new: denied; egress: Default: Allow (nothing denied it); ingress: AdminNetworkPolicy monitoring-closed rule deny-all-ingress: Deny`,
		`gained 8443/tcp shop/web-0 -> shop/web-1 8443/tcp
  old: denied; egress: Default: Allow (nothing denied it); ingress: NetworkPolicy: isolated by NetworkPolicy shop/web-ingress, no rule allows it: Deny
  new: allowed; egress: Default: Allow (nothing denied it); ingress: NetworkPolicy shop/web-ingress rule ingress[0]: Allow`,
		`lost 8080/tcp shop/web-0 -> shop/web-1 8080/tcp
  old: allowed; egress: Default: Allow (nothing denied it); ingress: NetworkPolicy shop/web-ingress rule ingress[0]: Allow
  new: denied; egress: Default: Allow (nothing denied it); ingress: NetworkPolicy: isolated by NetworkPolicy shop/web-ingress, no rule allows it: Deny`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

const twoPods = `
apiVersion: v1
kind: Namespace
metadata: {name: a}
---
apiVersion: v1
kind: Pod
metadata: {name: x, namespace: a, labels: {app: x}}
spec: {containers: [{name: c, ports: [{containerPort: 80}]}]}
status: {podIP: 198.18.0.1}
---
apiVersion: v1
kind: Pod
metadata: {name: w, namespace: a, labels: {app: w}}
spec: {containers: [{name: c}]}
status: {podIP: 198.18.0.2}
`

// TestPodsOnOneSide: a pod of one side only is listed, and its flows are
// not reported as gained or lost.
func TestPodsOnOneSide(t *testing.T) {
	old := buildYAML(t, twoPods)
	new := buildYAML(t, strings.Replace(twoPods, "name: w,", "name: v,", 1))
	r := Compare(old, new, Options{})
	if fmt.Sprint(r.AddedPods, r.RemovedPods) != "[a/v] [a/w]" || len(r.Groups) != 0 || r.Empty() {
		t.Errorf("added %v removed %v, entries %v", r.AddedPods, r.RemovedPods, lines(r))
	}
}

// TestDefaultDenyAndSelf: a default-deny ingress policy loses every port of
// every protocol between the pods, and nothing for a pod towards itself.
func TestDefaultDenyAndSelf(t *testing.T) {
	deny := twoPods + `---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, namespace: a}
spec: {podSelector: {}}
`
	r := Compare(buildYAML(t, twoPods), buildYAML(t, deny), Options{})
	// Nothing tells w and x apart: one class, whose entry stands for w -> x
	// and x -> w, never a pod towards itself.
	want := []string{"a -> a: w,x -> w,x lost -any/tcp -any/udp -any/sctp"}
	if got := lines(r); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r.Summary.PodPairs != 2 {
		t.Errorf("%d pod pairs, want 2", r.Summary.PodPairs)
	}
}

func TestSegments(t *testing.T) {
	ranged := twoPods + `---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: r, namespace: a}
spec:
  podSelector: {}
  ingress: [{ports: [{protocol: UDP, port: 1000, endPort: 2000}]}]
`
	var got []string
	for _, s := range Segments(buildYAML(t, twoPods), buildYAML(t, ranged)) {
		got = append(got, PortRange{s}.String())
	}
	want := "[1-79/tcp 80/tcp 81-65535/tcp 1-999/udp 1000-2000/udp 2001-65535/udp any/sctp]"
	if fmt.Sprint(got) != want {
		t.Errorf("segments %v, want %s", got, want)
	}
}

func TestPortRangeJSON(t *testing.T) {
	cases := map[string]l4.Range{
		`{"protocol":"TCP","port":80}`:                  {Proto: l4.TCP, First: 80, Last: 80},
		`{"protocol":"UDP","port":1000,"endPort":2000}`: {Proto: l4.UDP, First: 1000, Last: 2000},
		`{"protocol":"SCTP","port":1,"endPort":65535}`:  {Proto: l4.SCTP, First: 1, Last: 65535},
	}
	for want, r := range cases {
		b, err := PortRange{r}.MarshalJSON()
		if err != nil || string(b) != want {
			t.Errorf("%v: %s %v, want %s", r, b, err, want)
		}
	}
}

func TestFormatPorts(t *testing.T) {
	r := func(p l4.Protocol, first, last uint16) PortRange {
		return PortRange{l4.Range{Proto: p, First: first, Last: last}}
	}
	cases := []struct {
		ranges []PortRange
		want   string
	}{
		{[]PortRange{r(l4.TCP, 1, 65535), r(l4.UDP, 1, 65535), r(l4.SCTP, 1, 65535)}, "all ports"},
		{[]PortRange{r(l4.TCP, 1, 65535), r(l4.UDP, 1, 65535)}, "any/tcp, any/udp"},
		{[]PortRange{r(l4.TCP, 1, 8442), r(l4.TCP, 8444, 65535), r(l4.UDP, 1, 65535), r(l4.SCTP, 1, 65535)}, "any/tcp except 8443, any/udp, any/sctp"},
		{[]PortRange{r(l4.TCP, 1, 79), r(l4.TCP, 81, 442), r(l4.TCP, 444, 65535)}, "any/tcp except 80,443"},
		{[]PortRange{r(l4.TCP, 1, 79), r(l4.TCP, 90, 65535)}, "1-79/tcp, 90-65535/tcp"},
		{[]PortRange{r(l4.TCP, 8443, 8443), r(l4.UDP, 53, 53)}, "8443/tcp, 53/udp"},
		{nil, ""},
	}
	for _, c := range cases {
		if got := FormatPorts(c.ranges); got != c.want {
			t.Errorf("%v: %q, want %q", c.ranges, got, c.want)
		}
	}
}
