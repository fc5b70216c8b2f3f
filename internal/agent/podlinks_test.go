package agent_test

import (
	"net/netip"
	"slices"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source"
)

// TestAdversarialPodOnUncheckedInterface: a pod whose link is named by no
// --pod-interfaces glob (a CNI the defaults do not know: eni*, lxc*) is
// judged by its address only: its forged sources and the window before its
// rules are not closed. The agent must say so, by pod and interface, in its
// status, not leave it to the operator to guess; a pod whose link is not
// there yet is not such a pod.
func TestAdversarialPodOnUncheckedInterface(t *testing.T) {
	const cluster = `
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: x}
spec: {nodeName: n1, containers: [{name: c}]}
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: x}
spec: {nodeName: n1, containers: [{name: c}]}
status: {podIP: 198.18.1.2}
---
apiVersion: v1
kind: Pod
metadata: {name: c, namespace: x}
spec: {nodeName: n1, containers: [{name: c}]}
status: {podIP: 198.18.1.3}
`
	dec := &source.Decoder{}
	objs := dec.Decode("c.yaml", []byte(cluster))
	links := map[netip.Addr]string{
		netip.MustParseAddr("198.18.1.1"): "veth1",
		netip.MustParseAddr("198.18.1.2"): "eni7", // not a pod interface by the globs
	} // c's link is not there yet
	a := agent.New(agent.Config{Node: "n1", Input: objectsInput(objs), PodInterfaces: []string{"veth*"},
		PodLinks: func([]netip.Addr) (map[netip.Addr]string, error) { return links, nil }},
		nft.New(knftables.NewFake(knftables.InetFamily, nft.TableName)), nil)
	if err := a.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, want := a.Status().Unchecked, []string{"x/b on eni7"}; !slices.Equal(got, want) {
		t.Errorf("status unchecked %q, want %q", got, want)
	}
}
