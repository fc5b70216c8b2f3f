package nft_test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/render/nft"
)

// TestLabSyncSendsElementsOverNetlink: in a real kernel, element changes go
// over netlink after the first sync, chains go through nft only when a
// change needs a new one, and the netlink batch deletes the chains a change
// stops using. After every step the kernel holds exactly what nft loads
// from scratch for the same IR.
func TestLabSyncSendsElementsOverNetlink(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) { syncEveryWay(t, nf, false) })
}

// TestLabFaultSyncDeletesLater: the same steps with the deletions in a later
// transaction, as kernels before 6.2 need; the kernel ends every step
// holding exactly what nft loads from scratch, leftovers gone.
func TestLabFaultSyncDeletesLater(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) { syncEveryWay(t, nf, true) })
}

func syncEveryWay(t *testing.T, nf knftables.Interface, later bool) {
	r := nft.New(nf)
	r.DeleteLater(later)
	r.WriteElementsWith(dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName})
	r.ListObjectsWith(dataplane.Objects{Family: unix.NFPROTO_INET, Table: nft.TableName})
	ctx := context.Background()

	relabel := func(yaml, app string) string {
		return strings.Replace(yaml, "metadata: {name: c, namespace: x, labels: {app: c}}", "metadata: {name: c, namespace: x, labels: {app: "+app+"}}", 1)
	}
	wider := strings.Replace(cluster, "endPort: 9100", "endPort: 9200", 1)
	audited := strings.Replace(cluster, "metadata: {name: a-from-b, namespace: x}", "metadata: {name: a-from-b, namespace: x, annotations: {netpol.io/audit: all}}", 1)
	// Only pods with app=a have a table (the NetworkPolicy's). a declares
	// the named port http and c does not, so as app=a c gets a table of
	// its own: one more chain.
	for _, step := range []struct {
		name    string
		yaml    string
		netlink bool
		chains  int // chains written
	}{
		{"first sync: the ingress and egress chains and a's table; the sets filled over netlink", cluster, true, 3},
		{"c joins app=b: a set element", relabel(cluster, "b"), true, 0},
		{"c leaves app=b: a set element", cluster, true, 0},
		{"c becomes app=a: a new table chain, then its map elements", relabel(cluster, "a"), true, 1},
		{"c back: its map elements; the batch deletes its chain", cluster, true, 0},
		{"a wider port range: a new chain for a; the batch deletes the old one", wider, true, 1},
		{"the policy audited: a's chain and its log chains; the batch deletes the old chain", audited, true, 3},
		{"not audited any more: the batch deletes the log chains", cluster, true, 1},
	} {
		ir := compileYAML(t, step.yaml)
		st, err := r.Sync(ctx, ir)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if st.Netlink != step.netlink || st.Chains != step.chains || st.Operations == 0 {
			t.Errorf("%s: %+v, want netlink=%v chains=%d and some operations", step.name, st, step.netlink, step.chains)
		}
		compareWithScratch(t, step.name, ir)
	}
}

// compareWithScratch loads the IR with nft into an empty table of another
// name and checks that netpol's table holds the same.
func compareWithScratch(t *testing.T, step string, ir *compile.IR) {
	t.Helper()
	text, err := nft.Ruleset(ir)
	if err != nil {
		t.Fatal(err)
	}
	const ref = "netpolref"
	_ = exec.Command("nft", "delete", "table", "inet", ref).Run()
	load := exec.Command("nft", "-f", "-")
	load.Stdin = strings.NewReader(strings.ReplaceAll(text, " inet "+nft.TableName+" ", " inet "+ref+" "))
	if out, err := load.CombinedOutput(); err != nil {
		t.Fatalf("%s: loading the ruleset: %v\n%s", step, err, out)
	}
	defer exec.Command("nft", "delete", "table", "inet", ref).Run()
	if got, want := listTable(t, nft.TableName), listTable(t, ref); !slices.Equal(got, want) {
		t.Fatalf("%s: the kernel holds\n%s\nnft loads the same IR as\n%s", step, strings.Join(got, "\n\n"), strings.Join(want, "\n\n"))
	}
}

// listTable lists a table's sets, maps and chains as blocks in name order
// (nft lists them in the order they were made) without the table's comment.
func listTable(t *testing.T, table string) []string {
	t.Helper()
	out, err := exec.Command("nft", "list", "table", "inet", table).CombinedOutput()
	if err != nil {
		t.Fatalf("nft list: %v\n%s", err, out)
	}
	var blocks []string
	for _, b := range strings.Split(strings.TrimSpace(string(out)), "\n\n") {
		var kept []string
		for _, line := range strings.Split(b, "\n") {
			if !strings.HasPrefix(line, "table ") && !strings.HasPrefix(line, "\tcomment ") && line != "}" {
				kept = append(kept, line)
			}
		}
		blocks = append(blocks, strings.Join(kept, "\n"))
	}
	slices.Sort(blocks)
	return blocks
}

// TestLabRecordRuleset: the kernel takes the recording rules, on a first
// sync and when recording is turned on and off over netlink syncs, and
// holds what nft loads from scratch for the same IR each time.
func TestLabRecordRuleset(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) {
		r := nft.New(nf)
		r.WriteElementsWith(dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName})
		for i, record := range []bool{true, false, true} {
			ir := compileYAML(t, cluster)
			ir.Record = record
			if _, err := r.Sync(context.Background(), ir); err != nil {
				t.Fatalf("sync %d (record %v): %v", i, record, err)
			}
			compareWithScratch(t, "record", ir)
		}
	})
}

// TestLabVerifyWithObjectLister: the drift check over netlink finds the
// table intact after a sync, a chain gone, and the table gone, as it does
// through nft.
func TestLabVerifyWithObjectLister(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) {
		ctx := context.Background()
		ir := compileYAML(t, cluster)
		for _, viaNetlink := range []bool{false, true} {
			r := nft.New(nf)
			if viaNetlink {
				r.ListObjectsWith(dataplane.Objects{Family: unix.NFPROTO_INET, Table: nft.TableName})
			}
			if _, err := r.Sync(ctx, ir); err != nil {
				t.Fatal(err)
			}
			if diff, err := r.Verify(ctx); diff != "" || err != nil {
				t.Errorf("netlink %v, intact: %q, %v", viaNetlink, diff, err)
			}
			// A restarted agent reconciles over the table it finds, whose
			// base chain holds a rule's anonymous set: not one to flush.
			again := nft.New(nf)
			if viaNetlink {
				again.ListObjectsWith(dataplane.Objects{Family: unix.NFPROTO_INET, Table: nft.TableName})
			}
			if _, err := again.Sync(ctx, ir); err != nil {
				t.Fatalf("netlink %v, a restart's sync over the table: %v", viaNetlink, err)
			}
			for _, step := range []struct{ cmd, want string }{
				{"delete chain inet netpol egress", "chain egress is gone"},
				{"delete table inet netpol", "table inet netpol is gone"},
			} {
				if step.cmd == "delete chain inet netpol egress" {
					// egress is jumped to from the base chains: empty them first.
					run(t, "flush chain inet netpol forward")
					run(t, "flush chain inet netpol input")
				}
				run(t, step.cmd)
				if diff, err := r.Verify(ctx); diff != step.want || err != nil {
					t.Errorf("netlink %v, after %q: %q, %v; want %q", viaNetlink, step.cmd, diff, err, step.want)
				}
			}
		}
	})
}

func run(t *testing.T, cmd string) {
	t.Helper()
	if out, err := exec.Command("nft", strings.Fields(cmd)...).CombinedOutput(); err != nil {
		t.Fatalf("nft %s: %v\n%s", cmd, err, out)
	}
}
