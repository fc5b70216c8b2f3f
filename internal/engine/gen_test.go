package engine

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/netpol/netpol/internal/synth"
)

func TestGenerateCounts(t *testing.T) {
	objs := synth.Cluster(synth.Size1k)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.Kind]++
	}
	want := map[string]int{"Namespace": 50, "Pod": 1000, "NetworkPolicy": 990, "AdminNetworkPolicy": 10, "BaselineAdminNetworkPolicy": 1}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Errorf("object kinds = %v, want %v", kinds, want)
	}

	c, set := benchSnapshot(t, objs)
	got := [5]int{len(c.Namespaces), len(c.Pods), len(set.NetworkPolicies), len(set.Admin), len(set.Baseline)}
	if got != [5]int{50, 1000, 990, 10, 1} {
		t.Errorf("namespaces, pods, NetworkPolicies, admin, baseline = %v, want [50 1000 990 10 1]", got)
	}
	for _, p := range c.Pods {
		if ip, ok := p.IP(netip.Addr{}); !ok || !ip.Is4() {
			t.Fatalf("pod %s has no IPv4 address: %v", p.Key(), p.IPs)
		}
	}
}
