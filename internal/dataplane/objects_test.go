package dataplane_test

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/dataplane"
)

// TestLabObjects lists a table's chains, sets and maps over netlink: the
// kinds of set the renderer makes (interval, concatenated, dynamic with
// timeouts, learned), a verdict map, not another table's of the family,
// not a rule's anonymous set (nft cannot name it: a flush of __set0
// fails), and ErrNoTable once the table is gone.
func TestLabObjects(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) {
		ruleset := `
table inet netpol {
	set addrs-4 { type ipv4_addr; flags interval; elements = { 198.18.0.0/24 } }
	set ends-6 { type ipv6_addr . inet_proto . inet_service; elements = { fd00::1 . tcp . 80 } }
	set seen-4 { type ipv4_addr . ipv4_addr . inet_proto . inet_service; flags dynamic,timeout; timeout 10s; size 65536; }
	set learned-6 { type ipv6_addr; flags timeout; }
	map ingress-4 { type ipv4_addr : verdict; elements = { 198.18.0.1 : jump in-1 } }
	chain in-1 { drop; }
	chain forward { type filter hook forward priority filter; policy accept; ip daddr vmap @ingress-4; icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert } accept; }
}
table inet other {
	set not-ours { type ipv4_addr; }
	chain not-ours { counter; }
}
`
		load := exec.Command("nft", "-f", "-")
		load.Stdin = strings.NewReader(ruleset)
		if out, err := load.CombinedOutput(); err != nil {
			t.Fatalf("nft -f: %v\n%s", err, out)
		}
		objects := dataplane.Objects{Family: unix.NFPROTO_INET, Table: "netpol"}
		chains, sets, maps, err := objects.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range [][]string{chains, sets, maps} {
			slices.Sort(l)
		}
		if want := []string{"forward", "in-1"}; !slices.Equal(chains, want) {
			t.Errorf("chains %v, want %v", chains, want)
		}
		if want := []string{"addrs-4", "ends-6", "learned-6", "seen-4"}; !slices.Equal(sets, want) {
			t.Errorf("sets %v, want %v", sets, want)
		}
		if want := []string{"ingress-4"}; !slices.Equal(maps, want) {
			t.Errorf("maps %v, want %v", maps, want)
		}
		if out, err := exec.Command("nft", "delete", "table", "inet", "netpol").CombinedOutput(); err != nil {
			t.Fatalf("nft delete table: %v\n%s", err, out)
		}
		if _, _, _, err := objects.List(context.Background()); !errors.Is(err, dataplane.ErrNoTable) {
			t.Errorf("the table gone: %v, want ErrNoTable", err)
		}
	})
}
