package engine_test

import (
	"net/netip"
	"testing"

	"github.com/netpol/netpol/internal/engine"
)

// TestNameEndpointStandIn: a flow to a DNS name takes an address outside
// the cluster that no ipBlock narrower than everything names, so that a
// rule for one range does not decide every name; when the first
// documentation range is named, the next one serves.
func TestNameEndpointStandIn(t *testing.T) {
	e := semEngine(t, `
apiVersion: v1
kind: Namespace
metadata: {name: app}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: app}
spec: {containers: [{name: c}]}
status: {podIPs: [{ip: 198.18.1.1}, {ip: "fd00::1"}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: egress, namespace: app}
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress: [{to: [{ipBlock: {cidr: 203.0.113.0/24}}, {ipBlock: {cidr: 0.0.0.0/0}}]}]
`, engine.Options{})
	ep, err := e.Endpoint("API.Example.com.")
	if err != nil {
		t.Fatal(err)
	}
	if ep.IP != netip.MustParseAddr("198.51.100.1") || len(ep.Names) != 1 || ep.Names[0] != "api.example.com" || ep.String() != "api.example.com" {
		t.Errorf("endpoint of API.Example.com. = %v %v %q, want 198.51.100.1 named api.example.com", ep.IP, ep.Names, ep)
	}
	if ep6 := e.NameEndpoint("api.example.com", netip.MustParseAddr("fd00::1")); ep6.IP != netip.MustParseAddr("2001:db8::1") {
		t.Errorf("IPv6 stand-in = %v, want 2001:db8::1", ep6.IP)
	}
	if _, err := e.Endpoint("client"); err == nil || err.Error() != `"client": want namespace/pod, node/NAME, an IP address or a DNS name` {
		t.Errorf("a bare word: %v", err)
	}
}
