package dataplane_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/netnstest"
)

// TestLabElements writes elements over netlink into sets that nft made and
// filled, and reads them back with nft: both must agree on every element,
// including the ones the other wrote (the agent programs with both).
func TestLabElements(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) {
		ctx := context.Background()
		tx := nf.NewTransaction()
		tx.Add(&knftables.Table{})
		tx.Add(&knftables.Set{Name: "a4", Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.IntervalFlag}})
		tx.Add(&knftables.Set{Name: "a6", Type: "ipv6_addr", Flags: []knftables.SetFlag{knftables.IntervalFlag}})
		tx.Add(&knftables.Set{Name: "e4", Type: "ipv4_addr . inet_proto . inet_service"})
		tx.Add(&knftables.Map{Name: "m4", Type: "ipv4_addr : verdict"})
		tx.Add(&knftables.Chain{Name: "c"})
		tx.Add(&knftables.Chain{Name: "d"})
		tx.Add(&knftables.Element{Set: "a4", Key: []string{"198.18.0.1"}})
		tx.Add(&knftables.Element{Set: "a4", Key: []string{"198.18.0.2"}})
		tx.Add(&knftables.Element{Set: "a6", Key: []string{"fd00::1"}})
		tx.Add(&knftables.Element{Set: "e4", Key: []string{"198.18.0.1", "tcp", "80"}})
		tx.Add(&knftables.Element{Map: "m4", Key: []string{"198.18.0.1"}, Value: []string{"jump c"}})
		if err := nf.Run(ctx, tx); err != nil {
			t.Fatal(err)
		}
		w := dataplane.Elements{Family: unix.NFPROTO_INET, Table: "netpol"}
		err := w.Write([]dataplane.Element{
			{Set: "a4", Delete: true, Interval: true, Prefix: pfx("198.18.0.2/32")}, // nft's
			{Set: "a4", Interval: true, Prefix: pfx("198.18.0.3/32")},
			{Set: "a4", Interval: true, Prefix: pfx("198.18.1.0/24")},
			{Set: "a4", Interval: true, Prefix: pfx("255.255.255.255/32")}, // no end element
			{Set: "a6", Delete: true, Interval: true, Prefix: pfx("fd00::1/128")},
			{Set: "a6", Interval: true, Prefix: pfx("fd00:1::/64")},
			{Set: "e4", Proto: l4.UDP, Port: 53, Prefix: pfx("198.18.0.1/32")},
			{Set: "e4", Proto: l4.SCTP, Port: 9000, Prefix: pfx("198.18.0.2/32")},
			{Set: "m4", Delete: true, Prefix: pfx("198.18.0.1/32"), Jump: "c"},
			{Set: "m4", Prefix: pfx("198.18.0.1/32"), Jump: "d"},
			{Set: "m4", Prefix: pfx("198.18.0.2/32"), Jump: "c"},
		}, dataplane.Unused{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string][]string{
			"a4": {"198.18.0.1", "198.18.0.3", "198.18.1.0/24", "255.255.255.255"},
			"a6": {"fd00:1::/64"},
			"e4": {"198.18.0.1 . tcp . 80", "198.18.0.1 . udp . 53", "198.18.0.2 . sctp . 9000"},
			"m4": {"198.18.0.1 : jump d", "198.18.0.2 : jump c"},
		}
		expectElements(t, nf, want)

		// nft deletes what netlink added.
		tx = nf.NewTransaction()
		tx.Delete(&knftables.Element{Set: "a4", Key: []string{"198.18.0.3"}})
		tx.Delete(&knftables.Element{Set: "a6", Key: []string{"fd00:1::/64"}})
		tx.Delete(&knftables.Element{Set: "e4", Key: []string{"198.18.0.2", "sctp", "9000"}})
		if err := nf.Run(ctx, tx); err != nil {
			t.Fatal(err)
		}
		want["a4"] = []string{"198.18.0.1", "198.18.1.0/24", "255.255.255.255"}
		want["a6"] = nil
		want["e4"] = []string{"198.18.0.1 . tcp . 80", "198.18.0.1 . udp . 53"}
		expectElements(t, nf, want)

		// All or nothing: a batch with one bad message changes nothing.
		err = w.Write([]dataplane.Element{
			{Set: "a4", Interval: true, Prefix: pfx("198.18.9.9/32")},
			{Set: "missing", Interval: true, Prefix: pfx("198.18.9.10/32")},
		}, dataplane.Unused{})
		if err == nil || !strings.Contains(err.Error(), "no such file or directory") {
			t.Fatalf("write into a missing set: got %v, want ENOENT", err)
		}
		expectElements(t, nf, want)

		// The batch deletes chains and sets after its elements: here the
		// element that pointed at c goes, then c; y goes although x, which
		// goes too, refers to it (rules are emptied first), and so does a6,
		// which x's rule looks up.
		tx = nf.NewTransaction()
		tx.Add(&knftables.Chain{Name: "x"})
		tx.Add(&knftables.Chain{Name: "y"})
		tx.Add(&knftables.Rule{Chain: "x", Rule: "ip6 saddr @a6 goto y"})
		if err := nf.Run(ctx, tx); err != nil {
			t.Fatal(err)
		}
		// A chain that an element still jumps to cannot go: nothing is.
		err = w.Write([]dataplane.Element{{Set: "a4", Interval: true, Prefix: pfx("198.18.9.9/32")}}, dataplane.Unused{Chains: []string{"c"}})
		if err == nil || !strings.Contains(err.Error(), "resource busy") {
			t.Fatalf("deleting a chain a map element jumps to: got %v, want EBUSY", err)
		}
		expectElements(t, nf, want)
		err = w.Write([]dataplane.Element{{Set: "m4", Delete: true, Prefix: pfx("198.18.0.2/32"), Jump: "c"}},
			dataplane.Unused{Chains: []string{"c", "y", "x"}, Sets: []string{"a6"}})
		if err != nil {
			t.Fatal(err)
		}
		chains, err := nf.List(ctx, "chain")
		if err != nil {
			t.Fatal(err)
		}
		sets, err := nf.List(ctx, "set")
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(chains)
		slices.Sort(sets)
		if strings.Join(chains, ",") != "d" || strings.Join(sets, ",") != "a4,e4" {
			t.Fatalf("after the batch: chains %v, sets %v; want d, and a4,e4", chains, sets)
		}
		want["m4"] = []string{"198.18.0.1 : jump d"}
		delete(want, "a6")
		expectElements(t, nf, want)

		// Adding an element that is there is not an error (nft's "add").
		if err := w.Write([]dataplane.Element{{Set: "a4", Interval: true, Prefix: pfx("198.18.0.1/32")}}, dataplane.Unused{}); err != nil {
			t.Fatalf("adding an existing element: %v", err)
		}
		expectElements(t, nf, want)
	})
}

func TestElementsRejectsShapesTheKernelCannotHold(t *testing.T) {
	w := dataplane.Elements{Family: unix.NFPROTO_INET, Table: "netpol"}
	for _, tc := range []struct {
		name string
		el   dataplane.Element
		want string
	}{
		{"no address", dataplane.Element{Set: "s"}, "set s: element without an address"},
		{"range outside an interval set", dataplane.Element{Set: "s", Prefix: pfx("198.18.0.0/24")}, "set s: 198.18.0.0/24: only interval sets hold ranges"},
		{"unknown protocol", dataplane.Element{Set: "s", Prefix: pfx("198.18.0.1/32"), Proto: 9, Port: 1}, "set s: 198.18.0.1/32: unknown protocol"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := w.Write([]dataplane.Element{tc.el}, dataplane.Unused{})
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

func expectElements(t *testing.T, nf knftables.Interface, want map[string][]string) {
	t.Helper()
	for name, w := range want {
		typ := "set"
		if strings.HasPrefix(name, "m") {
			typ = "map"
		}
		els, err := nf.ListElements(context.Background(), typ, name)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range els {
			s := strings.Join(e.Key, " . ")
			if len(e.Value) > 0 {
				s += " : " + strings.Join(e.Value, " ")
			}
			got = append(got, s)
		}
		slices.Sort(got)
		if !slices.Equal(got, w) {
			t.Errorf("%s %s holds %q, want %q", typ, name, got, w)
		}
	}
}

// inNewNetns runs fn with nftables in a network namespace of its own.
func inNewNetns(t *testing.T, fn func(knftables.Interface)) {
	netnstest.Run(t, func() {
		nf, err := knftables.New(knftables.InetFamily, "netpol")
		if err != nil {
			t.Fatal(err)
		}
		fn(nf)
	})
}

// TestLabElementsLargeBatch: a batch far over the socket's default buffer
// and the 64 KiB an attribute can hold (30,000 addresses: what a node's
// first sync after a slow informer list can send) goes in, and out again.
func TestLabElementsLargeBatch(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) {
		ctx := context.Background()
		tx := nf.NewTransaction()
		tx.Add(&knftables.Table{})
		tx.Add(&knftables.Set{Name: "a4", Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.IntervalFlag}})
		tx.Add(&knftables.Set{Name: "e4", Type: "ipv4_addr . inet_proto . inet_service"})
		if err := nf.Run(ctx, tx); err != nil {
			t.Fatal(err)
		}
		const n = 30000
		var add, del []dataplane.Element
		for i := range n {
			ip := netip.AddrFrom4([4]byte{198, 18, byte(100 + i/256), byte(i % 256)})
			add = append(add,
				dataplane.Element{Set: "a4", Interval: true, Prefix: netip.PrefixFrom(ip, 32)},
				dataplane.Element{Set: "e4", Proto: l4.TCP, Port: 80, Prefix: netip.PrefixFrom(ip, 32)})
			if i%2 == 0 {
				del = append(del, dataplane.Element{Set: "a4", Delete: true, Interval: true, Prefix: netip.PrefixFrom(ip, 32)})
			}
		}
		w := dataplane.Elements{Family: unix.NFPROTO_INET, Table: "netpol"}
		count := func(set string) int {
			els, err := nf.ListElements(ctx, "set", set)
			if err != nil {
				t.Fatal(err)
			}
			return len(els)
		}
		// Only the last message asks for an answer: a failure further up
		// must still fail the batch, and leave nothing applied.
		bad := append([]dataplane.Element{{Set: "missing", Interval: true, Prefix: pfx("198.18.9.9/32")}}, add...)
		if err := w.Write(bad, dataplane.Unused{}); err == nil || !strings.Contains(err.Error(), "no such file or directory") {
			t.Fatalf("a batch whose first message names a missing set: got %v, want ENOENT", err)
		}
		if a := count("a4"); a != 0 {
			t.Fatalf("after a failed batch: %d addresses, want 0", a)
		}
		if err := w.Write(add, dataplane.Unused{}); err != nil {
			t.Fatal(err)
		}
		if a, e := count("a4"), count("e4"); a != n || e != n {
			t.Fatalf("after the batch: %d addresses and %d endpoints, want %d of each", a, e, n)
		}
		if err := w.Write(del, dataplane.Unused{}); err != nil {
			t.Fatal(err)
		}
		if a := count("a4"); a != n/2 {
			t.Fatalf("after deleting every other address: %d, want %d", a, n/2)
		}
	})
}

// TestLabElementsTimeout: an element written with a timeout into a set
// with flags timeout carries it (as nft shows it), is refreshed when it is
// written again (this is how a DNS answer extends what an earlier one
// taught), and leaves the set by itself when it expires.
func TestLabElementsTimeout(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) {
		ctx := context.Background()
		tx := nf.NewTransaction()
		tx.Add(&knftables.Table{})
		tx.Add(&knftables.Set{Name: "d4", Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.TimeoutFlag}})
		tx.Add(&knftables.Set{Name: "d6", Type: "ipv6_addr", Flags: []knftables.SetFlag{knftables.TimeoutFlag}})
		if err := nf.Run(ctx, tx); err != nil {
			t.Fatal(err)
		}
		w := dataplane.Elements{Family: unix.NFPROTO_INET, Table: "netpol"}
		if err := w.Write([]dataplane.Element{
			{Set: "d4", Prefix: pfx("198.18.0.1/32"), Timeout: time.Hour},
			{Set: "d4", Prefix: pfx("198.18.0.2/32"), Timeout: time.Second},
			{Set: "d6", Prefix: pfx("fd00::1/128"), Timeout: 90 * time.Second},
		}, dataplane.Unused{}); err != nil {
			t.Fatal(err)
		}
		listed := func(set string) string {
			out, err := exec.Command("nft", "list", "set", "inet", "netpol", set).CombinedOutput()
			if err != nil {
				t.Fatalf("nft list set %s: %v: %s", set, err, out)
			}
			return string(out)
		}
		if got := listed("d4"); !strings.Contains(got, "198.18.0.1 timeout 1h expires") || !strings.Contains(got, "198.18.0.2 timeout 1s expires") {
			t.Errorf("set d4:\n%s\nwant 198.18.0.1 with timeout 1h and 198.18.0.2 with 1s", got)
		}
		if got := listed("d6"); !strings.Contains(got, "fd00::1 timeout 1m30s expires") {
			t.Errorf("set d6:\n%s\nwant fd00::1 with timeout 1m30s", got)
		}
		// Written again with a longer timeout: the element keeps its place
		// and takes the new one.
		if err := w.Write([]dataplane.Element{{Set: "d6", Prefix: pfx("fd00::1/128"), Timeout: 2 * time.Hour}}, dataplane.Unused{}); err != nil {
			t.Fatal(err)
		}
		if got := listed("d6"); !strings.Contains(got, "fd00::1 timeout 2h expires") {
			t.Errorf("set d6 after writing fd00::1 again:\n%s\nwant its timeout 2h", got)
		}
		// The one-second element expires on its own (the kernel's garbage
		// collection runs within a second or so after that).
		deadline := time.Now().Add(10 * time.Second)
		for strings.Contains(listed("d4"), "198.18.0.2") {
			if time.Now().After(deadline) {
				t.Fatalf("198.18.0.2 still in d4 10s after it expired:\n%s", listed("d4"))
			}
			time.Sleep(100 * time.Millisecond)
		}
		expectElements(t, nf, map[string][]string{"d4": {"198.18.0.1"}})
	})
}

// TestLabAdversarialElementsTimeoutRefresh: an answer that repeats the
// TTL of the one before (a zone's fixed TTL, or any TTL clamped to the
// floor) must push the element's expiry out again, or connections are
// denied mid-use. The element is put in by nft with its hour-long timeout
// already run down to its last seconds; writing it again with the same
// hour must give it back the hour, in both ways Elements refreshes (in
// place, and by deleting and adding for kernels before 6.12).
func TestLabAdversarialElementsTimeoutRefresh(t *testing.T) {
	for _, byDelete := range []bool{false, true} {
		inNewNetns(t, func(nf knftables.Interface) {
			ctx := context.Background()
			tx := nf.NewTransaction()
			tx.Add(&knftables.Table{})
			tx.Add(&knftables.Set{Name: "d4", Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.TimeoutFlag}})
			if err := nf.Run(ctx, tx); err != nil {
				t.Fatal(err)
			}
			nft := exec.Command("nft", "add", "element", "inet", "netpol", "d4", "{ 198.18.0.1 timeout 1h expires 20s }")
			if out, err := nft.CombinedOutput(); err != nil {
				t.Fatalf("nft: %v: %s", err, out)
			}
			if got := expiresIn(t, "d4", "198.18.0.1"); got > 20*time.Second {
				t.Fatalf("198.18.0.1 expires in %v after nft put it in with 20s left", got)
			}
			w := dataplane.Elements{Family: unix.NFPROTO_INET, Table: "netpol", RefreshByDelete: byDelete}
			elems := []dataplane.Element{
				{Set: "d4", Prefix: pfx("198.18.0.1/32"), Timeout: time.Hour},
				{Set: "d4", Prefix: pfx("198.18.0.2/32"), Timeout: time.Hour}, // new: the refresh must not need it there
			}
			if err := w.Write(elems, dataplane.Unused{}); err != nil {
				t.Fatalf("refresh by delete %v: %v", byDelete, err)
			}
			for _, a := range []string{"198.18.0.1", "198.18.0.2"} {
				// An hour, less what the test took: far more than 20s.
				if got := expiresIn(t, "d4", a); got < 59*time.Minute {
					t.Errorf("refresh by delete %v: %s expires in %v after it was written with a timeout of 1h, want about 1h", byDelete, a, got)
				}
			}
		})
	}
}

// expiresIn reads, with nft, how long the element addr of set has left.
func expiresIn(t *testing.T, set, addr string) time.Duration {
	t.Helper()
	out, err := exec.Command("nft", "-j", "list", "set", "inet", "netpol", set).CombinedOutput()
	if err != nil {
		t.Fatalf("nft list set %s: %v: %s", set, err, out)
	}
	var doc struct {
		Nftables []struct {
			Set *struct {
				Elem []struct {
					Elem struct {
						Val     string `json:"val"`
						Expires int    `json:"expires"`
					} `json:"elem"`
				} `json:"elem"`
			} `json:"set"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("nft -j: %v: %s", err, out)
	}
	for _, o := range doc.Nftables {
		if o.Set == nil {
			continue
		}
		for _, e := range o.Set.Elem {
			if e.Elem.Val == addr {
				return time.Duration(e.Elem.Expires) * time.Second
			}
		}
	}
	t.Fatalf("no %s in set %s: %s", addr, set, out)
	return 0
}

// TestLabFill fills a set in more than one batch, then replaces what it
// holds (Replace, one batch for all the sets it is given): the kernel holds
// every element of the fill, then only those of the replacement.
func TestLabFill(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) {
		ctx := context.Background()
		tx := nf.NewTransaction()
		tx.Add(&knftables.Table{})
		tx.Add(&knftables.Set{Name: "a4", Type: "ipv4_addr", Flags: []knftables.SetFlag{knftables.IntervalFlag}})
		tx.Add(&knftables.Element{Set: "a4", Key: []string{"198.19.9.9"}})
		if err := nf.Run(ctx, tx); err != nil {
			t.Fatal(err)
		}
		w := dataplane.Elements{Family: unix.NFPROTO_INET, Table: "netpol"}
		// Every other address of 198.18.0.0/15 from .0.0 on: no two
		// merge into one range, and they take three batches.
		n := 2*dataplane.FillBatch + 5
		var elems []dataplane.Element
		for i := 0; i < n; i++ {
			v := 2 * i
			elems = append(elems, dataplane.Element{Set: "a4", Interval: true,
				Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{198, byte(18 + v>>16), byte(v >> 8), byte(v)}), 32)})
		}
		if err := w.Fill("a4", elems); err != nil {
			t.Fatal(err)
		}
		got, err := nf.ListElements(ctx, "set", "a4")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n+1 {
			t.Errorf("after the fill a4 holds %d elements, want %d (the fill and 198.19.9.9)", len(got), n+1)
		}
		if err := w.Replace(map[string][]dataplane.Element{"a4": {{Set: "a4", Interval: true, Prefix: pfx("198.18.200.0/24")}}}); err != nil {
			t.Fatal(err)
		}
		if got, err = nf.ListElements(ctx, "set", "a4"); err != nil || len(got) != 1 || got[0].Key[0] != "198.18.200.0/24" {
			t.Errorf("after the replacement a4 holds %v (%v), want 198.18.200.0/24 alone", got, err)
		}
	})
}
