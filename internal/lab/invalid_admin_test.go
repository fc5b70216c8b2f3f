package lab_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/kubetest"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/source/kube"
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

// TestLabAdversarialInvalidAdminPolicyKeepsDenyingKube is the same with
// the agents watching a real API server with the CRDs of deploy/: the
// update is stored (the CRD types protocol as a free string) and the
// agents keep denying.
func TestLabAdversarialInvalidAdminPolicyKeepsDenyingKube(t *testing.T) {
	requireLab(t)
	c := kubetest.Start(t)
	ctx := t.Context()
	manifests, err := kubetest.Manifests(twoPods + denyClient80)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, manifests); err != nil {
		t.Fatal(err)
	}
	l, _ := upKubeLab(t, labName("kin"), c, twoPods)
	client, server := l.Pods[0], l.Pods[1]
	// waitFor waits until the server's agent programmed an input for
	// which done holds, then probes.
	waitFor := func(what string, done func(agent.Status) bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second) // a bound on a hang, not a performance assertion
		for {
			st, err := l.AgentStatus("node-2")
			if err == nil && st.Programmed != "" && st.Programmed == st.Input && done(st) {
				return
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(l.AgentLog("node-2"))
				t.Fatalf("%s: agent of node-2 never got there: %+v, %v; its log:\n%s", what, st, err, log)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	expect := func(when string, port uint16, want bool) {
		t.Helper()
		got, err := l.ProbeSure(client, server.IP, l4.Port{Proto: l4.TCP, Num: port})
		if err != nil || got != want {
			t.Errorf("%s: client -> server %d/tcp connected=%v (%v), want %v", when, port, got, err, want)
		}
	}
	waitFor("programmed as written", func(st agent.Status) bool { return st.Tables > 0 && len(st.FailedClosed) == 0 })
	expect("as written", 80, false)
	expect("as written", 81, true)

	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	patch := []byte(`{"spec":{"ingress":[
 {"name":"no-80","action":"Deny","from":[{"namespaces":{}}],"ports":[{"portNumber":{"protocol":"TCP","port":80}}]},
 {"name":"no-dns","action":"Deny","from":[{"namespaces":{}}],"ports":[{"portNumber":{"protocol":"udp","port":53}}]}]}}`)
	if _, err := dyn.Resource(kube.ANP).Patch(ctx, "guard", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("the API server refuses the update: %v", err)
	}
	const why = `AdminNetworkPolicy guard: spec.ingress[1].ports[0].portNumber.protocol: unsupported value "udp"`
	waitFor("the invalid update", func(st agent.Status) bool {
		return len(st.FailedClosed) == 1 && strings.Contains(st.FailedClosed[0], why)
	})
	expect("with the invalid rule", 80, false)
	expect("with the invalid rule (failed closed: it denies everything)", 81, false)
}
