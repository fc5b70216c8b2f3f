package engine_test

import (
	"net/netip"
	"sort"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

// semEngine runs the CLI's whole pipeline on one YAML stream: decode, build
// the snapshot, normalise the policies. Input errors fail the test, and so
// does a policy object that did not make it into the set: a dropped policy
// would otherwise pass a test by accident. Warnings are fine (some cases are
// about inputs that warn, such as v1 `from: []` or fail-closed peers).
func semEngine(t *testing.T, text string, opts engine.Options) *engine.Engine {
	t.Helper()
	return semEngineFrom(t, text, source.Options{ANPShape: source.ShapeAuto}, opts)
}

// semEngineFrom is semEngine with decoding options.
func semEngineFrom(t *testing.T, text string, read source.Options, opts engine.Options) *engine.Engine {
	t.Helper()
	dec := &source.Decoder{Options: read}
	objs := dec.Decode("semantics.yaml", []byte(text))
	cluster, built := state.Build(objs, state.Options{})
	set, normalized := policy.Normalize(cluster.Policies)
	var all diag.List
	all = append(all, dec.Diags...)
	all = append(all, built...)
	all = append(all, normalized...)
	for _, d := range all {
		if d.Severity == diag.Error || strings.Contains(d.Message, "netpol does not read") {
			t.Fatalf("input: %s", d)
		}
	}
	want := 0
	for _, o := range objs {
		if strings.HasSuffix(o.Kind, "Policy") {
			want++
		}
	}
	if got := len(set.Policies()); got != want {
		t.Fatalf("input: %d policy objects decoded, %d normalised", want, got)
	}
	return engine.New(cluster, set, opts)
}

// semFlow is one flow and what must be decided about it. egress and ingress,
// when not empty, are the expected traces of the two sides in the notation
// of sideTrace; a trailing "*" compares only the prefix.
type semFlow struct {
	from, to, port  string
	allowed         bool
	egress, ingress string
}

// semGroup is a cluster (a topology and policies) with the flows to check
// in it: one row of TestSemantics.
type semGroup struct {
	item     string // the checklist item
	name     string
	topology string // semTopology when empty
	policies string
	opts     engine.Options
	// lenient reads the input as --lenient does: a fail-closed case needs
	// an admin policy with an unknown field, which is otherwise invalid.
	lenient bool
	// overlaps are PriorityOverlaps' warnings, as "object: message".
	overlaps []string
	flows    []semFlow
}

func checkSemFlows(t *testing.T, e *engine.Engine, flows []semFlow) {
	t.Helper()
	// Pod-to-pod flows are checked against the matrix too: it groups pods
	// into classes and must reach the same verdicts.
	type pair struct {
		name     string
		src, dst *state.Pod
		port     l4.Port
		allowed  bool
	}
	var pairs []pair
	defer func() {
		if len(pairs) == 0 {
			return
		}
		var ports []l4.Port
		portIndex := map[l4.Port]int{}
		for _, p := range pairs {
			if _, ok := portIndex[p.port]; !ok {
				portIndex[p.port] = len(ports)
				ports = append(ports, p.port)
			}
		}
		pods := e.Cluster().Pods
		podIndex := map[*state.Pod]int{}
		for i, p := range pods {
			podIndex[p] = i
		}
		m := e.Matrix(pods, pods, ports)
		for _, p := range pairs {
			if got := m.Allowed(podIndex[p.src], podIndex[p.dst], portIndex[p.port]); got != p.allowed {
				t.Errorf("%s: matrix says allowed=%v, want %v", p.name, got, p.allowed)
			}
		}
		// Beyond the listed flows, the matrix must agree with Decide on
		// every pair of pods (a consistency check, not an expectation).
		for i, sp := range pods {
			for j, dp := range pods {
				for k, port := range ports {
					src, dst := e.PodEndpoint(sp, netip.Addr{}), e.PodEndpoint(dp, netip.Addr{})
					f := engine.Flow{Src: src, Dst: dst, Port: port}
					if want := e.Decide(f).Allowed; m.Allowed(i, j, k) != want {
						t.Errorf("%s -> %s %s: matrix says allowed=%v, Decide says %v", sp.Key(), dp.Key(), port, m.Allowed(i, j, k), want)
					}
				}
			}
		}
	}()
	for _, c := range flows {
		name := c.from + " -> " + c.to + " " + c.port
		src, err := e.Endpoint(c.from)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		dst, err := e.Endpoint(c.to)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		spec, err := l4.ParsePortSpec(c.port)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		f, err := e.NewFlow(src, dst, spec)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		v := e.Decide(f)
		var trace strings.Builder
		engine.WriteTrace(&trace, f, v)
		if v.Allowed != c.allowed {
			t.Errorf("%s: allowed=%v, want %v\n%s", name, v.Allowed, c.allowed, trace.String())
			continue
		}
		if fast := e.Allowed(f); fast != v.Allowed {
			t.Errorf("%s: Allowed()=%v but Decide().Allowed=%v", name, fast, v.Allowed)
		}
		if strings.Contains(c.from, "/") && strings.Contains(c.to, "/") && src.Pod != nil && dst.Pod != nil {
			pairs = append(pairs, pair{name, src.Pod, dst.Pod, f.Port, c.allowed})
		}
		for _, side := range []struct {
			what, want string
			s          engine.Side
		}{{"egress", c.egress, v.Egress}, {"ingress", c.ingress, v.Ingress}} {
			if side.want == "" {
				continue
			}
			got := sideTrace(side.s)
			if !traceMatches(got, side.want) {
				t.Errorf("%s: %s trace\n  got  %q\n  want %q\n%s", name, side.what, got, side.want, trace.String())
			}
		}
	}
}

func traceMatches(got, want string) bool {
	if prefix, ok := strings.CutSuffix(want, "*"); ok {
		return strings.HasPrefix(got, prefix)
	}
	return got == want
}

// sideTrace writes the steps of a side that decided or passed something,
// joined by " > ": "Tier [KIND/[ns/]name] [rule] Action [isolatedBy=...]".
// NoMatch steps are left out; a side decided before any tier (self traffic,
// the pod's own node, a host-network pod, a non-pod endpoint) is "-".
func sideTrace(s engine.Side) string {
	var steps []string
	for _, st := range s.Steps {
		if st.Action == "NoMatch" {
			continue
		}
		words := []string{st.Tier}
		if st.Policy != nil {
			words = append(words, refText(*st.Policy))
		}
		if st.Rule != "" {
			words = append(words, st.Rule)
		}
		words = append(words, st.Action)
		if len(st.IsolatedBy) > 0 {
			var refs []string
			for _, r := range st.IsolatedBy {
				refs = append(refs, refText(r))
			}
			sort.Strings(refs)
			words = append(words, "isolatedBy="+strings.Join(refs, ","))
		}
		steps = append(steps, strings.Join(words, " "))
	}
	if len(steps) == 0 {
		return "-"
	}
	return strings.Join(steps, " > ")
}

var kindAbbrev = map[string]string{
	"NetworkPolicy":              "NP",
	"AdminNetworkPolicy":         "ANP",
	"BaselineAdminNetworkPolicy": "BANP",
	"ClusterNetworkPolicy":       "CNP",
}

func refText(r policy.Ref) string {
	kind := r.Kind
	if k, ok := kindAbbrev[kind]; ok {
		kind = k
	}
	if r.Namespace != "" {
		return kind + "/" + r.Namespace + "/" + r.Name
	}
	return kind + "/" + r.Name
}
