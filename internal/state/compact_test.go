package state_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

const variedPods = `
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
  labels: {app: web}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f, uid: u1, controller: true}]
spec:
  nodeName: n1
  containers:
  - {name: main, image: x, ports: [{name: http, containerPort: 8080}, {name: dns, containerPort: 53, protocol: UDP}]}
  - {name: side, image: x}
  - {name: metrics, image: x, ports: [{name: metrics, containerPort: 9090}]}
  - {name: broken, image: x, ports: [{name: bad, containerPort: 70000}]}
status:
  phase: Running
  podIPs: [{ip: 198.18.0.10}, {ip: "fd00::10"}]
  conditions: [{type: Ready, status: "False"}]
---
apiVersion: v1
kind: Pod
metadata: {name: old, namespace: shop}
spec: {nodeName: n1}
status: {phase: Running, podIP: 198.18.0.11}
---
apiVersion: v1
kind: Pod
metadata: {name: agent, namespace: kube-system}
spec: {nodeName: n1, hostNetwork: true}
status: {phase: Running}
---
apiVersion: v1
kind: Pod
metadata: {name: done, namespace: shop}
spec: {nodeName: n1}
status: {phase: Succeeded, podIP: 198.18.0.12}
`

// TestCompactPodsBuildTheSamePods: pods decoded compact (the agent's
// source.Options.CompactPods) make the same snapshot as typed ones: labels,
// addresses, node, host network, named ports of every container, owner,
// readiness, finished pods left out; and the same findings, a bad port
// named in its container as the manifest numbers it (the fourth).
func TestCompactPodsBuildTheSamePods(t *testing.T) {
	build := func(compact bool) (*state.Cluster, string) {
		dec := &source.Decoder{Options: source.Options{CompactPods: compact}}
		objs := dec.Decode("p.yaml", []byte(variedPods))
		if compact {
			for _, o := range objs {
				if _, ok := o.Value.(*source.Pod); o.Kind == "Pod" && !ok {
					t.Fatalf("compact decoding gave %T for %s", o.Value, o.Ref())
				}
			}
		}
		c, diags := state.Build(objs, state.Options{Observed: true})
		return c, fmt.Sprint(diags)
	}
	typed, typedDiags := build(false)
	compact, compactDiags := build(true)
	if typedDiags != compactDiags {
		t.Errorf("findings differ:\n typed:   %s\n compact: %s", typedDiags, compactDiags)
	}
	if !strings.Contains(compactDiags, "spec.containers[3].ports[0].containerPort") {
		t.Errorf("findings %s: want the bad port of spec.containers[3]", compactDiags)
	}
	show := func(c *state.Cluster) (out []string) {
		for _, p := range c.Pods {
			out = append(out, fmt.Sprintf("%s labels=%v ips=%v node=%s host=%v ports=%v owner=%q notReady=%v",
				p.Key(), p.Labels, p.IPs, p.Node, p.HostNetwork, p.Ports, p.Owner, p.NotReady))
		}
		return out
	}
	want, got := show(typed), show(compact)
	if fmt.Sprint(want) != fmt.Sprint(got) {
		t.Errorf("pods differ:\n typed:   %v\n compact: %v", want, got)
	}
	// The cases above, as the typed decoding builds them.
	for _, w := range []string{
		// The controller is named as written: without the pod-template-hash
		// label, a ReplicaSet is not taken for a Deployment's.
		"shop/web-1 labels=app=web ips=[198.18.0.10 fd00::10] node=n1 host=false ports=[http=8080/tcp dns=53/udp metrics=9090/tcp] owner=\"ReplicaSet web-5d8f\" notReady=true",
		"shop/old labels= ips=[198.18.0.11] node=n1 host=false ports=[] owner=\"\" notReady=false",
		"kube-system/agent labels= ips=[] node=n1 host=true ports=[] owner=\"\" notReady=false",
	} {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			t.Errorf("no pod %s in %v", w, got)
		}
	}
}
