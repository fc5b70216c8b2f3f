package engine_test

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

// randomCluster writes a small random cluster with every policy API.
func randomCluster(r *rand.Rand) string {
	pick := func(xs ...string) string { return xs[r.Intn(len(xs))] }
	sel := func() string {
		switch r.Intn(4) {
		case 0:
			return "{}"
		case 1:
			return fmt.Sprintf("{matchLabels: {app: %s}}", pick("a", "b", "c"))
		case 2:
			return fmt.Sprintf("{matchExpressions: [{key: app, operator: %s, values: [a]}]}", pick("In", "NotIn"))
		}
		return fmt.Sprintf("{matchLabels: {team: %s}}", pick("red", "blue"))
	}
	var b strings.Builder
	nodes := []string{"n1", "n2"}
	for _, n := range nodes {
		fmt.Fprintf(&b, "---\n{apiVersion: v1, kind: Node, metadata: {name: %s, labels: {zone: %s}}}\n", n, pick("a", "b"))
	}
	nss := []string{"ns1", "ns2", "ns3"}[:2+r.Intn(2)]
	for _, ns := range nss {
		fmt.Fprintf(&b, "---\n{apiVersion: v1, kind: Namespace, metadata: {name: %s, labels: {team: %s}}}\n", ns, pick("red", "blue"))
	}
	for i := 0; i < 3+r.Intn(6); i++ {
		host := r.Intn(6) == 0
		fmt.Fprintf(&b, "---\n{apiVersion: v1, kind: Pod, metadata: {name: p%d, namespace: %s, labels: {app: %s}}, spec: {nodeName: %s, hostNetwork: %v, containers: [{name: c, ports: [{name: http, containerPort: %s}, {name: dns, containerPort: 53, protocol: UDP}]}]}}\n",
			i, pick(nss...), pick("a", "b", "c"), pick(nodes...), host, pick("80", "8080"))
	}
	for i := 0; i < r.Intn(4); i++ {
		fmt.Fprintf(&b, "---\n{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: np%d, namespace: %s}, spec: {podSelector: %s, policyTypes: [%s], ingress: [{from: [{podSelector: %s}, {ipBlock: {cidr: 198.18.0.0/15, except: [198.18.128.0/17]}}], ports: [{port: %s}]}], egress: [{to: [{namespaceSelector: %s}]}]}}\n",
			i, pick(nss...), sel(), pick("Ingress", "Egress", "Ingress, Egress"), sel(), pick("http", "80", "53, protocol: UDP"), sel())
	}
	for i := 0; i < r.Intn(3); i++ {
		fmt.Fprintf(&b, "---\n{apiVersion: policy.networking.k8s.io/v1alpha1, kind: AdminNetworkPolicy, metadata: {name: anp%d}, spec: {priority: %d, subject: {namespaces: %s}, ingress: [{action: %s, from: [{pods: {namespaceSelector: %s, podSelector: %s}}]}], egress: [{action: %s, to: [{nodes: {matchLabels: {zone: a}}}]}, {action: %s, to: [{networks: [198.18.0.0/16]}], ports: [{portRange: {protocol: TCP, start: 80, end: 8080}}]}]}}\n",
			i, r.Intn(3), sel(), pick("Allow", "Deny", "Pass"), sel(), sel(), pick("Allow", "Deny"), pick("Allow", "Deny", "Pass"))
	}
	if r.Intn(2) == 0 {
		fmt.Fprintf(&b, "---\n{apiVersion: policy.networking.k8s.io/v1alpha1, kind: BaselineAdminNetworkPolicy, metadata: {name: default}, spec: {subject: {namespaces: %s}, ingress: [{action: %s, from: [{namespaces: %s}], ports: [{namedPort: http}]}]}}\n",
			sel(), pick("Allow", "Deny"), sel())
	}
	if r.Intn(2) == 0 {
		fmt.Fprintf(&b, "---\n{apiVersion: policy.networking.k8s.io/v1alpha2, kind: ClusterNetworkPolicy, metadata: {name: cnp}, spec: {tier: %s, priority: 1, subject: {namespaces: %s}, ingress: [{action: %s, from: [{namespaces: %s}], protocols: [{udp: {destinationPort: {number: 53}}}]}]}}\n",
			pick("Admin", "Baseline"), sel(), pick("Accept", "Deny", "Pass"), sel())
	}
	return b.String()
}

// TestExplainMatrixAgree checks the class-based matrix against one Decide per
// pair on random clusters: classes must never merge pods that behave apart.
func TestExplainMatrixAgree(t *testing.T) {
	ports := []l4.Port{{Proto: l4.TCP, Num: 80}, {Proto: l4.TCP, Num: 8080}, {Proto: l4.UDP, Num: 53}}
	for seed := int64(1); seed <= 200; seed++ {
		text := randomCluster(rand.New(rand.NewSource(seed)))
		dec := &source.Decoder{}
		c, diags := state.Build(dec.Decode("random.yaml", []byte(text)), state.Options{})
		set, more := policy.Normalize(c.Policies)
		if err := append(append(dec.Diags, diags...), more...).Err(); err != nil {
			t.Fatalf("seed %d: generator wrote invalid input: %v\n%s", seed, err, text)
		}
		e := engine.New(c, set, engine.Options{})
		m := e.Matrix(c.Pods, c.Pods, ports)
		for i, s := range c.Pods {
			for j, d := range c.Pods {
				for k, p := range ports {
					src, _ := e.Endpoint(s.Key())
					dst, _ := e.Endpoint(d.Key())
					f, err := e.NewFlow(src, dst, l4.PortSpec{Num: p.Num, Proto: p.Proto})
					if err != nil {
						t.Fatal(err)
					}
					if want := e.Decide(f).Allowed; m.Allowed(i, j, k) != want {
						t.Fatalf("seed %d: %s -> %s %s: matrix %v, explain %v\n%s", seed, s.Key(), d.Key(), p, m.Allowed(i, j, k), want, text)
					}
				}
			}
		}
	}
}
