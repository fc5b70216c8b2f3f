package nft_test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/render/nft"
)

// domainCluster: pod a on node n1 may reach *.example.org on 443 and
// nothing else.
const domainCluster = `
apiVersion: v1
kind: Namespace
metadata: {name: x}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: x, labels: {app: a}}
spec: {nodeName: n1, containers: [{name: c}]}
status: {podIP: 198.18.0.1}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: names}
spec:
  priority: 10
  subject: {namespaces: {}}
  egress:
  - {name: apis, action: Allow, to: [{domainNames: ["*.example.org"]}], ports: [{portNumber: {port: 443, protocol: TCP}}]}
  - {name: rest, action: Deny, to: [{networks: [0.0.0.0/0, "::/0"]}]}
`

// TestRulesetDomainSet: a domainNames peer is a pair of timeout sets,
// declared empty, that the rule looks addresses up in.
func TestRulesetDomainSet(t *testing.T) {
	text, err := nft.Ruleset(compileYAML(t, domainCluster))
	if err != nil {
		t.Fatal(err)
	}
	ir := compileYAML(t, domainCluster)
	if len(ir.DomainSets) != 1 || !slices.Equal(ir.DomainSets[0].Patterns, []string{"*.example.org"}) {
		t.Fatalf("domain sets %+v, want one for *.example.org", ir.DomainSets)
	}
	name := ir.DomainSets[0].Name
	for _, want := range []string{
		"add set inet netpol " + name + `-4 { type ipv4_addr ; flags timeout ; comment "learned from DNS: *.example.org" ; }`,
		"add set inet netpol " + name + `-6 { type ipv6_addr ; flags timeout ; comment "learned from DNS: *.example.org" ; }`,
		"ip daddr @" + name + "-4 meta l4proto tcp th dport 443 return",
		"ip6 daddr @" + name + "-6 meta l4proto tcp th dport 443 return",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, text)
		}
	}
}

// TestLabDomainSetKeepsLearnedAddresses: in a real kernel, addresses that
// the agent learned (added here by hand, as the agent's DNS learner will)
// stay through a sync that changes other rules and through a full rewrite
// (a restarted agent, a resync), until their timeout.
func TestLabDomainSetKeepsLearnedAddresses(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) {
		ctx := context.Background()
		ir := compileYAML(t, domainCluster)
		set := ir.DomainSets[0].Name + "-4"
		r := nft.New(nf)
		if _, err := r.Sync(ctx, ir); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("nft", "add", "element", "inet", nft.TableName, set, "{ 203.0.113.7 timeout 1h }").CombinedOutput(); err != nil {
			t.Fatalf("adding a learned address: %v: %s", err, out)
		}
		learned := func(when string) {
			t.Helper()
			els, err := nf.ListElements(ctx, "set", set)
			if err != nil {
				t.Fatal(err)
			}
			if len(els) != 1 || els[0].Key[0] != "203.0.113.7" {
				t.Errorf("%s: elements of %s = %+v, want 203.0.113.7", when, set, els)
			}
		}
		other := strings.Replace(domainCluster, "port: 443", "port: 8443", 1)
		if _, err := r.Sync(ctx, compileYAML(t, other)); err != nil {
			t.Fatal(err)
		}
		learned("after a sync that changed the rule's port")
		fresh := nft.New(nf) // a restarted agent rewrites the whole table
		if _, err := fresh.Sync(ctx, compileYAML(t, other)); err != nil {
			t.Fatal(err)
		}
		learned("after a full rewrite")
	})
}
