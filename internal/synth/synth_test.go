package synth

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The scale clusters give every pod an address of its own from the
// benchmark ranges, the nodes included, past the 254 nodes of one /24.
func TestScaleAddressesAreDistinct(t *testing.T) {
	seen := map[netip.Addr]string{}
	claim := func(s, who string) {
		a, err := netip.ParseAddr(s)
		if err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		if !netip.MustParsePrefix("198.18.0.0/15").Contains(a) && !netip.MustParsePrefix("fd00::/8").Contains(a) {
			t.Fatalf("%s has %s, outside the benchmark ranges", who, a)
		}
		if other, ok := seen[a]; ok {
			t.Fatalf("%s and %s both have %s", who, other, a)
		}
		seen[a] = who
	}
	for i := 0; i < MaxNodes; i++ {
		claim(nodeAddress(i), NodeName(i))
	}
	v6 := 0
	for n := 0; n < Scale150k.Pods; n++ {
		ips := podAddresses(n)
		if len(ips) != 1 {
			t.Fatalf("pod %d has %d addresses", n, len(ips))
		}
		claim(ips[0].IP, "pod")
		if netip.MustParseAddr(ips[0].IP).Is6() {
			v6++
		}
	}
	// 150,000 pods less the 126,976 IPv4 addresses of 198.18.0.0/15 without
	// the nodes' 198.19.240.0/20.
	if v6 != 23024 {
		t.Errorf("%d pods have IPv6 only, want 23024", v6)
	}
	for _, want := range []struct {
		i    int
		addr string
	}{{0, "198.19.255.1"}, {253, "198.19.255.254"}, {254, "198.19.240.1"}, {MaxNodes - 1, "198.19.254.254"}} {
		if got := nodeAddress(want.i); got != want.addr {
			t.Errorf("node %d: %s, want %s", want.i, got, want.addr)
		}
	}
}

func TestScaleClusterPodsRun(t *testing.T) {
	size := Size{Name: "t", Namespaces: 5, Pods: 40, NetPols: 5, Admin: 1, Nodes: 300, Running: true}
	pods := 0
	for _, o := range Cluster(size) {
		p, ok := o.Value.(*corev1.Pod)
		if !ok {
			continue
		}
		pods++
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" || p.Spec.NodeName == "" {
			t.Fatalf("pod %s/%s: phase %q, IP %q, node %q", p.Namespace, p.Name, p.Status.Phase, p.Status.PodIP, p.Spec.NodeName)
		}
	}
	if pods != 40 {
		t.Fatalf("%d pods, want 40", pods)
	}
}
