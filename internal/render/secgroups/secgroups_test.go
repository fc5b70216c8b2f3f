package secgroups_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/engine"
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

func build(t *testing.T, yaml string) *engine.Engine {
	t.Helper()
	dec := &source.Decoder{}
	e, _, err := pipeline.Build(dec.Decode("in.yaml", []byte(yaml)), dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// summary writes groups and ports one line each: a group's rules as
// "direction ethertype protocol min-max remote", a port's groups with the
// rule hash of policy groups cut off.
func summary(out *secgroups.Output) []string {
	cut := func(name string) string {
		if i := strings.LastIndexByte(name, '-'); i > 0 && !strings.HasPrefix(name, "allow-all-") {
			return name[:i] + "-*"
		}
		return name
	}
	var lines []string
	for _, g := range out.Groups {
		for _, r := range g.Rules {
			lines = append(lines, fmt.Sprintf("group %s: %s %s %s %d-%d %s", cut(g.Name), r.Direction, r.Ethertype, r.Protocol,
				r.PortRangeMin, r.PortRangeMax, r.RemoteIPPrefix))
		}
	}
	for _, p := range out.Ports {
		var gs []string
		for _, g := range p.Groups {
			gs = append(gs, cut(g))
		}
		lines = append(lines, fmt.Sprintf("port %s %s: %s", p.Pod, strings.Join(p.IPs, ","), strings.Join(gs, ",")))
	}
	slices.Sort(lines)
	return lines
}

func expect(t *testing.T, got, want []string) {
	t.Helper()
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestRenderNetworkPolicy: peers x ports from the node's IR: the except
// subtracted, the named port resolved on the subject, the selector as its
// pod's address; allow-all for the direction the policy does not
// isolate; no group for a pod that no policy isolates.
func TestRenderNetworkPolicy(t *testing.T) {
	e := build(t, pods+`
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
	out, err := secgroups.Render(compile.Node(e, ""))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, summary(out), []string{
		"group allow-all-egress: egress IPv4  0-0 ",
		"group allow-all-egress: egress IPv6  0-0 ",
		"group networkpolicy-x-web-ingress-*: ingress IPv4 tcp 8080-8080 198.18.1.2/32",
		"group networkpolicy-x-web-ingress-*: ingress IPv4 udp 53-53 198.18.1.2/32",
		"group networkpolicy-x-web-ingress-*: ingress IPv4 tcp 8080-8080 198.18.2.128/25",
		"group networkpolicy-x-web-ingress-*: ingress IPv4 udp 53-53 198.18.2.128/25",
		"port x/web 198.18.1.1: allow-all-egress,networkpolicy-x-web-ingress-*",
	})
}

// TestRenderEgressNamedPort: an egress named port is resolved per
// destination pod, each with its own number.
func TestRenderEgressNamedPort(t *testing.T) {
	e := build(t, `
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: x, labels: {app: api}}
spec: {containers: [{name: c, ports: [{name: api, containerPort: 8080}]}]}
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: x, labels: {app: api}}
spec: {containers: [{name: c, ports: [{name: api, containerPort: 9090}]}]}
status: {podIP: 198.18.1.2}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: x, labels: {app: client}}
status: {podIP: 198.18.1.3}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: client, namespace: x}
spec:
  podSelector: {matchLabels: {app: client}}
  policyTypes: [Egress]
  egress: [{to: [{podSelector: {matchLabels: {app: api}}}], ports: [{port: api}]}]
`)
	out, err := secgroups.Render(compile.Node(e, ""))
	if err != nil {
		t.Fatal(err)
	}
	expect(t, summary(out), []string{
		"group allow-all-ingress: ingress IPv4  0-0 ",
		"group allow-all-ingress: ingress IPv6  0-0 ",
		"group networkpolicy-x-client-egress-*: egress IPv4 tcp 8080-8080 198.18.1.1/32",
		"group networkpolicy-x-client-egress-*: egress IPv4 tcp 9090-9090 198.18.1.2/32",
		"port x/client 198.18.1.3: allow-all-ingress,networkpolicy-x-client-egress-*",
	})
}

// TestRenderRefuses: groups only allow, and only addresses known when
// they are written: Deny, Pass and domainNames are refused, each named.
func TestRenderRefuses(t *testing.T) {
	e := build(t, pods+`
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
  egress:
  - name: names
    action: Allow
    to: [{domainNames: [api.example.com]}]
`)
	_, err := secgroups.Render(compile.Node(e, ""))
	want := "security groups can only allow addresses they know; these rules deny, pass or name domains:\n" +
		"  AdminNetworkPolicy no-client deny-client (Deny)\n  AdminNetworkPolicy no-client names (domainNames)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// TestRenderNode: with a node, the ports of the pods on it, from that
// node's IR (what its agent would program), with the groups they use.
func TestRenderNode(t *testing.T) {
	e := build(t, `
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
`)
	for node, want := range map[string][]string{
		"n1": {
			"group allow-all-egress: egress IPv4  0-0 ",
			"group allow-all-egress: egress IPv6  0-0 ",
			"group networkpolicy-x-web-ingress-*: ingress IPv4  0-0 198.18.1.2/32",
			"port x/web 198.18.1.1: allow-all-egress,networkpolicy-x-web-ingress-*",
		},
		"n2": nil, // the client is isolated by nothing: no group
	} {
		out, err := secgroups.Render(compile.Node(e, node))
		if err != nil {
			t.Fatal(err)
		}
		expect(t, summary(out), want)
	}
}
