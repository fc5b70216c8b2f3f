package compile_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// sharedCluster: namespaces a, b and c each have a pod on n1 and a policy
// whose one rule admits the pods of every env=prod namespace (six pods) and
// one app of its own namespace. The prod selection is one set that the
// three rules share, not three unions that copy its six addresses.
func sharedCluster() string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Node\nmetadata: {name: n1}\nstatus: {addresses: [{type: InternalIP, address: 198.19.255.1}]}\n")
	for i, ns := range []string{"a", "b", "c"} {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {env: prod}}\n", ns)
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: server, namespace: %s, labels: {app: server}}\nspec: {nodeName: n1, containers: [{name: c, image: x}]}\nstatus: {phase: Running, podIP: 198.18.0.%d}\n", ns, 10+i)
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: client, namespace: %s, labels: {app: client}}\nspec: {nodeName: n2, containers: [{name: c, image: x}]}\nstatus: {phase: Running, podIP: 198.18.0.%d}\n", ns, 20+i)
		fmt.Fprintf(&b, `---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: %s}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress:
  - from:
    - namespaceSelector: {matchLabels: {env: prod}}
    - podSelector: {matchLabels: {app: client}}
    ports: [{port: 80}]
`, ns)
	}
	return b.String()
}

func TestPeerSetsShared(t *testing.T) {
	ir := compileNode(t, sharedCluster())
	var keys []string
	elements := 0
	for _, s := range ir.Sets {
		keys = append(keys, s.Key)
		elements += len(s.Prefixes)
	}
	slices.Sort(keys)
	want := []string{"pods ns(env=prod)", "pods ns=a app=client", "pods ns=b app=client", "pods ns=c app=client"}
	if !slices.Equal(keys, want) {
		t.Errorf("sets %q, want %q", keys, want)
	}
	// Six prod pods, one client in each namespace.
	if elements != 9 {
		t.Errorf("%d set elements, want 9", elements)
	}
	// Each table: the prod set's rule, then its own clients' rule.
	for _, tb := range ir.Tables {
		var peers []string
		for _, r := range tb.Rules {
			peers = append(peers, r.Peer)
		}
		if len(peers) != 2 {
			t.Errorf("table %s has rules over sets %q, want two", tb.Name, peers)
		}
	}
}

// TestPeerSetsSplitBounded: a rule splits into a kernel rule per peer set
// only while peers x ports stays small; three peers on three ports keep
// one rule over the union of their addresses, as a tenant's large rule
// must (TestAdversarialPeersPortsLinear).
func TestPeerSetsSplitBounded(t *testing.T) {
	ir := compileNode(t, `
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Pod
metadata: {name: server, namespace: a, labels: {app: server}}
spec: {nodeName: n1}
status: {phase: Running, podIP: 198.18.0.10}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: a}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: x}}}, {podSelector: {matchLabels: {app: w}}}, {podSelector: {matchLabels: {app: z}}}]
    ports: [{port: 80}, {port: 443}, {port: 8080}]
`)
	if len(ir.Tables) != 1 || len(ir.Tables[0].Rules) != 1 || len(ir.Sets) != 1 {
		t.Fatalf("%d tables, %d rules, %d sets; want one rule over one set", len(ir.Tables), len(ir.Tables[0].Rules), len(ir.Sets))
	}
}
