package agent_test

import (
	"context"
	"net/netip"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/observed"
	"github.com/netpol/netpol/internal/render/nft"
)

// namesRecorder keeps the last naming the agent handed it.
type namesRecorder struct{ endpointOf func(netip.Addr) string }

func (r *namesRecorder) Update(f func(netip.Addr) string) { r.endpointOf = f }
func (r *namesRecorder) Stats() observed.Stats            { return observed.Stats{} }

// TestPassRecords: an agent with a recorder programs the record chains and
// tells the recorder, every pass, how addresses map to workloads: a
// controller's pod by its controller, a bare pod by its name, any other
// address by nothing.
func TestPassRecords(t *testing.T) {
	dir := t.TempDir()
	owned := `
---
apiVersion: v1
kind: Pod
metadata:
  name: api-0
  namespace: x
  labels: {app: api}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: api, uid: u1, controller: true}]
spec: {nodeName: node-1}
status: {podIP: 198.18.1.3}
`
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode + owned, "deny-web.yaml": denyWeb})
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	rec := &namesRecorder{}
	a := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{dir}}, Record: rec}, nft.New(fake), nil)
	if err := a.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rec.endpointOf == nil {
		t.Fatal("the recorder was not updated")
	}
	for ip, want := range map[string]string{"198.18.1.1": "x/web", "198.18.1.3": "x/StatefulSet/api", "198.19.0.1": ""} {
		if got := rec.endpointOf(netip.MustParseAddr(ip)); got != want {
			t.Errorf("%s is named %q, want %q", ip, got, want)
		}
	}
	if got := keysOf(t, fake, "set", "record-local-4"); got != "198.18.1.1,198.18.1.2,198.18.1.3" {
		t.Errorf("record-local-4 = %q, want the node's three pods", got)
	}
}
