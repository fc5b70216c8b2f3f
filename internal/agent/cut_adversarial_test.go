package agent_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/render/nft"
)

// namesForDB lets db reach *.example.com on 443 and nothing else.
const namesForDB = `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: names}
spec:
  priority: 10
  subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: db}}}}
  egress:
  - {name: names, action: Allow, to: [{domainNames: ["*.example.com"]}], ports: [{portNumber: {port: 443, protocol: TCP}}]}
  - {name: rest, action: Deny, to: [{networks: [0.0.0.0/0]}]}
`

// TestAdversarialCutJudgesAsTheRules: the cut after a change decides each
// open connection as the kernel's rules do: the node's own connection to
// an isolated pod stays (the output hook judges nothing), a connection to
// an address the domain set learned stays, one to an address it did not
// learn goes, and a ping and a GRE tunnel to the isolated pod go too, the
// tunnel held by address pair (a ping needs no hold).
func TestAdversarialCutJudgesAsTheRules(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode, "names.yaml": namesForDB})
	fromNode := l4.Conn{Proto: l4.TCP, Src: netip.MustParseAddrPort("198.19.255.1:40000"), Dst: netip.MustParseAddrPort("198.18.1.1:80")}
	learned := l4.Conn{Proto: l4.TCP, Src: netip.MustParseAddrPort("198.18.1.2:40001"), Dst: netip.MustParseAddrPort("198.18.3.1:443")}
	unlearned := l4.Conn{Proto: l4.TCP, Src: netip.MustParseAddrPort("198.18.1.2:40002"), Dst: netip.MustParseAddrPort("198.18.3.2:443")}
	ping := l4.Conn{Proto: l4.ICMP, Src: netip.MustParseAddrPort("198.18.1.2:0"), Dst: netip.MustParseAddrPort("198.18.1.1:0")}
	gre := l4.Conn{Proto: l4.Unported, Number: 47, Src: netip.MustParseAddrPort("198.18.1.2:0"), Dst: netip.MustParseAddrPort("198.18.1.1:0")}
	ct := &fakeConntrack{}
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	a := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{dir}}, Conntrack: ct,
		LocalAddrs: func() ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr("198.19.255.1")}, nil }}, nft.New(fake), nil)
	ctx := context.Background()
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	// What a DNS answer taught the kernel.
	sets, err := fake.List(ctx, "set")
	if err != nil {
		t.Fatal(err)
	}
	tx := fake.NewTransaction()
	for _, s := range sets {
		if strings.HasPrefix(s, "d-") && strings.HasSuffix(s, "-4") {
			tx.Add(&knftables.Element{Set: s, Key: []string{"198.18.3.1"}})
		}
	}
	if tx.NumOperations() != 1 {
		t.Fatalf("sets %v: want one IPv4 domain set", sets)
	}
	if err := fake.Run(ctx, tx); err != nil {
		t.Fatal(err)
	}
	ct.entries = []l4.Conn{fromNode, learned, unlearned, ping, gre}
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode, "names.yaml": namesForDB, "deny-web.yaml": denyWeb})
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, c := range ct.entries {
		left = append(left, c.String())
	}
	if want := []string{fromNode.String(), learned.String()}; strings.Join(left, "; ") != strings.Join(want, "; ") {
		t.Errorf("entries left after the cut: %q, want %q", left, want)
	}
	if got := cutSet(t, fake, "cut-4"); got != "198.18.1.2 . 198.18.3.2 . tcp . 40002 . 443" {
		t.Errorf("cut-4 = %q, want only the unlearned connection", got)
	}
	if got := cutSet(t, fake, "cut-pairs-4"); got != "198.18.1.2 . 198.18.1.1 . 47" {
		t.Errorf("cut-pairs-4 = %q, want the tunnel's pair", got)
	}
}
