package secgroups_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/render/secgroups"
	"github.com/netpol/netpol/internal/source"
)

const pods = `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: x, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: x, labels: {app: client}}
status: {podIP: 198.18.1.2}
`

func render(t *testing.T, yaml string) (*secgroups.Output, error) {
	t.Helper()
	dec := &source.Decoder{}
	e, _, err := pipeline.Build(dec.Decode("in.yaml", []byte(yaml)), dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return secgroups.Render(e, "")
}

// TestRenderNetworkPolicy: peers x ports, the except split, the named port
// resolved, a remote group for the selector, allow-all for the direction
// the policy does not isolate.
func TestRenderNetworkPolicy(t *testing.T) {
	out, err := render(t, pods+`
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: x}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: client}}}, {ipBlock: {cidr: 198.18.2.0/24, except: [198.18.2.0/25]}}]
    ports: [{port: http}, {port: 53, protocol: UDP}]
`)
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, g := range out.Groups {
		for _, r := range g.Rules {
			b, _ := json.Marshal(r)
			rules = append(rules, g.Name[:min(len(g.Name), 24)]+" "+string(b))
		}
	}
	got := strings.Join(rules, "\n")
	for _, want := range []string{
		`{"direction":"egress","ethertype":"IPv4"}`,
		`"direction":"ingress","ethertype":"IPv4","protocol":"tcp","port_range_min":8080,"port_range_max":8080,"remote_group":"peer-`,
		`"direction":"ingress","ethertype":"IPv4","protocol":"udp","port_range_min":53,"port_range_max":53,"remote_group":"peer-`,
		`"direction":"ingress","ethertype":"IPv4","protocol":"tcp","port_range_min":8080,"port_range_max":8080,"remote_ip_prefix":"198.18.2.128/25"}`,
		`"direction":"ingress","ethertype":"IPv4","protocol":"udp","port_range_min":53,"port_range_max":53,"remote_ip_prefix":"198.18.2.128/25"}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no rule %s in:\n%s", want, got)
		}
	}
	// 2 ports x (group: v4+v6, CIDR: v4), and allow-all-ingress (v4, v6)
	// for client, which no policy isolates.
	if n := strings.Count(got, `"direction":"ingress"`); n != 8 {
		t.Errorf("%d ingress rules, want 8:\n%s", n, got)
	}
	ports := map[string]int{}
	for _, p := range out.Ports {
		ports[p.Pod] = len(p.Groups)
	}
	if ports["x/web"] != 2 || ports["x/client"] != 3 {
		t.Errorf("port groups %v: want web in its policy group and allow-all-egress, client in the remote group and both allow-alls", ports)
	}
}

func TestRenderRefusesDeny(t *testing.T) {
	_, err := render(t, pods+`
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: no-client}
spec:
  priority: 10
  subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: web}}}}
  ingress:
  - name: deny-client
    action: Deny
    from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: client}}}}]
`)
	if err == nil || !strings.Contains(err.Error(), "AdminNetworkPolicy no-client deny-client (Deny)") {
		t.Fatalf("err = %v, want a refusal naming AdminNetworkPolicy no-client deny-client (Deny)", err)
	}
}

// TestRenderKeepsUnisolatedPodsOpen: a pod that no policy isolates but that
// is a member of a remote group has groups, and a port with groups allows
// only what they allow: it keeps allow-all for both directions, as Kuryr
// keeps the default group on every port (matrix: unrestricted).
func TestRenderKeepsUnisolatedPodsOpen(t *testing.T) {
	out, err := render(t, pods+`
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: x}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {matchLabels: {app: client}}}]}]
`)
	if err != nil {
		t.Fatal(err)
	}
	groups := map[string]string{}
	for _, p := range out.Ports {
		groups[p.Pod] = strings.Join(p.Groups, ",")
	}
	if g := groups["x/client"]; !strings.HasPrefix(g, "allow-all-egress,allow-all-ingress,peer-") || strings.Count(g, ",") != 2 {
		t.Errorf("client's groups %q, want allow-all-egress, allow-all-ingress and its remote group", g)
	}
	if g := groups["x/web"]; !strings.HasPrefix(g, "allow-all-egress,") || strings.Contains(g, "allow-all-ingress") {
		t.Errorf("web's groups %q, want allow-all-egress and its policy's ingress group only", g)
	}
}

// TestRenderNode: with a node, only the ports of the pods on it (what that
// node's agent would program); the groups they use are all there.
func TestRenderNode(t *testing.T) {
	dec := &source.Decoder{}
	e, _, err := pipeline.Build(dec.Decode("in.yaml", []byte(`
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: x, labels: {app: web}}
spec: {nodeName: n1, containers: [{name: c}]}
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: x, labels: {app: client}}
spec: {nodeName: n2}
status: {podIP: 198.18.1.2}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: x}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {matchLabels: {app: client}}}]}]
`)), dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for node, want := range map[string]string{"": "x/client,x/web", "n1": "x/web", "n2": "x/client"} {
		out, err := secgroups.Render(e, node)
		if err != nil {
			t.Fatal(err)
		}
		var ports []string
		for _, p := range out.Ports {
			ports = append(ports, p.Pod)
		}
		if got := strings.Join(ports, ","); got != want {
			t.Errorf("node %q: ports %s, want %s", node, got, want)
		}
		if node == "n1" && len(out.Groups) != 3 { // web's policy group, allow-all-egress, the remote group
			t.Errorf("node n1: %d groups, want 3", len(out.Groups))
		}
	}
}
