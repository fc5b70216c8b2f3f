package engine_test

import (
	"net/netip"
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/source"
)

// TestPodFlowFamilies: pods talk over IPv4 when both have it, else over
// IPv6 when both have that, else not at all.
func TestPodFlowFamilies(t *testing.T) {
	e := semEngineFrom(t, dualStack+`
---
apiVersion: v1
kind: Pod
metadata: {name: d, namespace: x}
spec: {containers: [{name: c}]}
status: {podIPs: [{ip: 198.18.1.4}]}
`, source.Options{}, engine.Options{})
	c := e.Cluster()
	for _, tc := range []struct {
		src, dst string
		want     string // "src -> dst", or "" for no connection
	}{
		{"x/a", "x/b", "198.18.1.1 -> 198.18.1.2"},
		{"x/a", "x/c", "fd00:198:18:1::1 -> fd00:198:18:2::3"},
		{"x/c", "x/b", "fd00:198:18:2::3 -> fd00:198:18:1::2"},
		{"x/c", "x/d", ""},
		{"x/d", "x/c", ""},
	} {
		f, ok := e.PodFlow(c.Pod(tc.src), c.Pod(tc.dst), l4.Port{Proto: l4.TCP, Num: 80})
		got := ""
		if ok {
			got = f.Src.IP.String() + " -> " + f.Dst.IP.String()
		}
		if got != tc.want {
			t.Errorf("%s -> %s: %q, want %q", tc.src, tc.dst, got, tc.want)
		}
	}
}

// TestFamiliesOfNamedAddresses: an end named by its address keeps its
// family, destination as well as source, and a Service's backends are
// reached over the family of the connection: an IPv4 source named by its
// address reaches no backend through an IPv6 cluster IP.
func TestFamiliesOfNamedAddresses(t *testing.T) {
	e := semEngineFrom(t, dualStack+`
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: x}
spec:
  selector: {app: a}
  ipFamilies: [IPv4, IPv6]
  clusterIPs: [198.18.200.10, "fd00:198:18:200::10"]
  ports: [{port: 80}]
`, source.Options{}, engine.Options{})
	src, err := e.Endpoint("198.18.1.2") // x/b by its IPv4 address
	if err != nil {
		t.Fatal(err)
	}
	dst, err := e.Endpoint("fd00:198:18:1::1") // x/a by its IPv6 address
	if err != nil {
		t.Fatal(err)
	}
	if f, err := e.NewFlow(src, dst, l4.PortSpec{Num: 80}); err == nil {
		t.Errorf("NewFlow %s -> %s: no error, want no address family in common", f.Src.IP, f.Dst.IP)
	}
	svc, _, err := e.ServiceName("svc/x/web")
	if err != nil {
		t.Fatal(err)
	}
	v := e.DecideService(src, svc, &svc.Ports[0], netip.MustParseAddr("fd00:198:18:200::10"))
	if len(v.Backends) != 0 {
		t.Errorf("IPv4 source through the IPv6 cluster IP: %d backends, want none (src judged as %s)", len(v.Backends), v.Backends[0].Flow.Src.IP)
	}
	v = e.DecideService(src, svc, &svc.Ports[0], netip.MustParseAddr("198.18.200.10"))
	if len(v.Backends) != 1 || v.Backends[0].Flow.Src.IP.String() != "198.18.1.2" || v.Backends[0].Flow.Dst.IP.String() != "198.18.1.1" {
		t.Errorf("IPv4 through the IPv4 cluster IP: %+v, want x/b 198.18.1.2 -> x/a 198.18.1.1", v.Backends)
	}
}
