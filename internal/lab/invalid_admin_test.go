package lab_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/netpol/netpol/internal/l4"
)

// denyClient80 denies the server's ingress on 80/tcp from every namespace.
const denyClient80 = `
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: guard}
spec:
  priority: 10
  subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: server}}}}
  ingress:
  - {name: no-80, action: Deny, from: [{namespaces: {}}], ports: [{portNumber: {protocol: TCP, port: 80}}]}
`

// TestLabAdversarialInvalidAdminPolicyKeepsDenying: with real packets,
// an admin policy that gains a rule netpol refuses (protocol "udp", which
// the CRDs store) keeps denying what it denied: the agents enforce it
// failed closed (the invalid Deny rule denies all the server's ingress),
// where they used to drop the policy and open port 80. The agents say so
// in their status.
func TestLabAdversarialInvalidAdminPolicyKeepsDenying(t *testing.T) {
	requireLab(t)
	l := upLab(t, labName("inv"), twoPods+denyClient80)
	client, server := l.Pods[0], l.Pods[1]
	expect := func(when string, port uint16, want bool) {
		t.Helper()
		got, err := l.ProbeSure(client, server.IP, l4.Port{Proto: l4.TCP, Num: port})
		if err != nil || got != want {
			t.Errorf("%s: client -> server %d/tcp connected=%v (%v), want %v", when, port, got, err, want)
		}
	}
	expect("as written", 80, false)
	expect("as written", 81, true)

	typo := denyClient80 + `  - {name: no-dns, action: Deny, from: [{namespaces: {}}], ports: [{portNumber: {protocol: udp, port: 53}}]}
`
	if err := l.WriteManifests([]byte(twoPods + typo)); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	st, err := l.AgentStatus("node-2")
	if err != nil {
		t.Fatal(err)
	}
	const why = `AdminNetworkPolicy guard: spec.ingress[1].ports[0].portNumber.protocol: unsupported value "udp"`
	if len(st.FailedClosed) != 1 || !strings.Contains(st.FailedClosed[0], why) {
		t.Errorf("agent of node-2: failed closed %q, want one entry containing %q", st.FailedClosed, why)
	}
	expect("with the invalid rule", 80, false)
	expect("with the invalid rule (failed closed: it denies everything)", 81, false)
}
