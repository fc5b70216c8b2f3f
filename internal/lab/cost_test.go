package lab_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/l4"
)

// TestLabAdversarialRefusedPolicyFailsClosed: with real packets, a tenant's
// NetworkPolicy past the size limit (port 81 and 10,000 more) opens
// nothing and keeps its pod isolated, while the tenant's small policy for
// the same pod (port 80) is enforced, and the server's agent names the
// refused policy in its status.
func TestLabAdversarialRefusedPolicyFailsClosed(t *testing.T) {
	requireLab(t)
	var ports strings.Builder
	ports.WriteString("{port: 81}")
	for i := range compile.DefaultMaxPolicyTerms {
		fmt.Fprintf(&ports, ", {port: %d}", 2000+i)
	}
	manifests := twoPods + `
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: small, namespace: x}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress: [{from: [{podSelector: {matchLabels: {app: client}}}], ports: [{port: 80}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: huge, namespace: x}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress: [{from: [{podSelector: {matchLabels: {app: client}}}], ports: [` + ports.String() + `]}]
`
	l := upLab(t, labName("rfs"), manifests)
	client, server := l.Pods[0], l.Pods[1]
	for _, c := range []struct {
		port    uint16
		allowed bool
	}{{80, true}, {81, false}} {
		ok, err := l.Probe(client, server.IP, l4.Port{Proto: l4.TCP, Num: c.port})
		if err != nil || ok != c.allowed {
			t.Errorf("client -> server:%d: connected=%v err=%v, want connected=%v", c.port, ok, err, c.allowed)
		}
	}
	st, err := l.AgentStatus("node-2")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Refused) != 1 || !strings.HasPrefix(st.Refused[0], "NetworkPolicy x/huge has 10002 ") {
		t.Errorf("node-2's agent reports refused %q, want NetworkPolicy x/huge", st.Refused)
	}
}
