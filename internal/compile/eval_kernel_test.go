package compile_test

import (
	"net/netip"
	"testing"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
)

// TestAdversarialEvaluatorDecidesAsKernel: the evaluator the agent's cut
// decides with matches what the kernel's rules match: a domainNames rule
// the addresses its domain set learned (and nothing before), and a ping
// only the rules without ports.
func TestAdversarialEvaluatorDecidesAsKernel(t *testing.T) {
	client, learned, web, open := netip.MustParseAddr("198.18.1.1"), netip.MustParseAddr("198.18.3.1"), netip.MustParseAddr("198.18.2.5"), netip.MustParseAddr("198.18.4.1")
	ir := &compile.IR{
		Pods: []compile.LocalPod{{Pod: "app/client", IPs: []netip.Addr{client}, Egress: "eg"}},
		Tables: []*compile.Table{{Name: "eg", Dir: policy.Egress, Default: compile.Drop, Rules: []compile.Rule{
			{Action: compile.Accept, Domains: "d-1", Ports: []l4.Range{{Proto: l4.TCP, First: 443, Last: 443}}},
			{Action: compile.Accept, Peer: "web", Ports: []l4.Range{{Proto: l4.TCP, First: 80, Last: 80}}},
			{Action: compile.Accept, Peer: "all"},
		}}},
		Sets: []*compile.AddrSet{
			{Name: "web", Prefixes: []netip.Prefix{netip.MustParsePrefix("198.18.2.0/24")}},
			{Name: "all", Prefixes: []netip.Prefix{netip.MustParsePrefix("198.18.4.0/24")}},
		},
		DomainSets: []*compile.DomainSet{{Name: "d-1", Patterns: []string{"*.allowed.test"}}},
	}
	ev := ir.Evaluator()
	https, ping := l4.Port{Proto: l4.TCP, Num: 443}, l4.Port{Proto: l4.ICMP}
	for _, c := range []struct {
		what    string
		dst     netip.Addr
		port    l4.Port
		learned bool
		want    bool
	}{
		{"a domain address before it is learned", learned, https, false, false},
		{"a domain address once learned", learned, https, true, true},
		{"a learned address on another port", learned, l4.Port{Proto: l4.TCP, Num: 80}, true, false},
		{"a ping to a peer allowed on a port only", web, ping, true, false},
		{"a ping to a peer allowed on every port", open, ping, true, true},
	} {
		ev.Learned = nil
		if c.learned {
			ev.Learned = map[string]map[netip.Addr]bool{"d-1": {learned: true}}
		}
		if eg, _ := ev.Decide(client, c.dst, c.port); eg.Allowed != c.want {
			t.Errorf("%s (%s %s): allowed %v, want %v", c.what, c.dst, c.port, eg.Allowed, c.want)
		}
	}
}

// TestAdversarialInterfaceNames: the names that reach nft as pod
// interfaces are refused when they could be syntax (a quote, a space, a
// backslash, past IFNAMSIZ), and globs match by prefix only at their end.
func TestAdversarialInterfaceNames(t *testing.T) {
	for name, want := range map[string]bool{"veth1a2b": true, "cali-x.1@2": true, "cni0": true, `veth"`: false, "veth 1": false,
		`veth\1`: false, "": false, "..": false, "sixteen-chars-xx": false, "veth*": false} {
		if got := compile.ValidInterface(name); got != want {
			t.Errorf("ValidInterface(%q) = %v, want %v", name, got, want)
		}
	}
	globs := []string{"veth*", "cni0"}
	for name, want := range map[string]bool{"veth0": true, "veth": true, "cni0": true, "cni01": false, "xveth0": false, "fab": false} {
		if got := compile.MatchInterface(globs, name); got != want {
			t.Errorf("MatchInterface(%q) = %v, want %v", name, got, want)
		}
	}
}
