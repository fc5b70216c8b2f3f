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
// change needs a new one, and a chain that a change stops using stays until
// Collect deletes it (or it is used again). After every step the
// kernel holds exactly what nft loads from scratch for the same IR, plus
// those leftovers.
func TestLabSyncSendsElementsOverNetlink(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) { syncEveryWay(t, nf) })
}

func syncEveryWay(t *testing.T, nf knftables.Interface) {
	r := nft.New(nf)
	r.WriteElementsWith(dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName})
	ctx := context.Background()

	relabel := func(yaml, app string) string {
		return strings.Replace(yaml, "metadata: {name: c, namespace: x, labels: {app: c}}", "metadata: {name: c, namespace: x, labels: {app: "+app+"}}", 1)
	}
	wider := strings.Replace(cluster, "endPort: 9100", "endPort: 9200", 1)
	// Only pods with app=a have a table (the NetworkPolicy's). a declares
	// the named port http and c does not, so as app=a c gets a table of
	// its own: one more chain.
	for _, step := range []struct {
		name          string
		yaml          string
		netlink       bool
		chains        int // chains written
		collected     int
		left, kernelX int // left over after the step; chains the kernel holds beyond the IR's
	}{
		{"first sync: the ingress and egress chains and a's table", cluster, false, 3, 0, 0, 0},
		{"c joins app=b: a set element", relabel(cluster, "b"), true, 0, 0, 0, 0},
		{"c leaves app=b: a set element", cluster, true, 0, 0, 0, 0},
		{"c becomes app=a: a new table chain, then its map elements", relabel(cluster, "a"), true, 1, 0, 0, 0},
		{"c back: its map elements; its chain is left over", cluster, true, 0, 0, 1, 1},
		{"c becomes app=a again: the leftover is used again, no nft", relabel(cluster, "a"), true, 0, 0, 0, 0},
		{"c back again", cluster, true, 0, 0, 1, 1},
		{"a wider port range: a new chain; a's old one is left over too", wider, true, 1, 0, 2, 2},
		{"c joins app=b: elements only, the leftovers stay", relabel(wider, "b"), true, 0, 0, 2, 2},
	} {
		ir := compileYAML(t, step.yaml)
		st, err := r.Sync(ctx, ir)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if st.Netlink != step.netlink || st.Chains != step.chains || st.Collected != step.collected || st.Left != step.left || st.Operations == 0 {
			t.Errorf("%s: %+v, want netlink=%v chains=%d collected=%d left=%d and some operations",
				step.name, st, step.netlink, step.chains, step.collected, step.left)
		}
		compareWithScratch(t, step.name, ir, step.kernelX)
	}
	if err := r.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	compareWithScratch(t, "after Collect", compileYAML(t, relabel(wider, "b")), 0)
	if err := r.Collect(ctx); err != nil { // nothing left: no nft run, no error
		t.Fatal(err)
	}
}

// compareWithScratch loads the IR with nft into an empty table of another
// name and checks that netpol's table holds the same, plus extra chains
// that nothing refers to.
func compareWithScratch(t *testing.T, step string, ir *compile.IR, extra int) {
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
	got, want := listTable(t, nft.TableName), listTable(t, ref)
	var beyond []string
	for _, b := range got {
		if !slices.Contains(want, b) {
			beyond = append(beyond, b)
		}
	}
	for _, b := range want {
		if !slices.Contains(got, b) {
			t.Fatalf("%s: the kernel lacks\n%s\nof what nft loads for the same IR", step, b)
		}
	}
	if len(beyond) != extra {
		t.Fatalf("%s: the kernel holds %d blocks beyond the IR, want %d:\n%s", step, len(beyond), extra, strings.Join(beyond, "\n\n"))
	}
	for _, b := range beyond {
		if !strings.HasPrefix(b, "\tchain ") {
			t.Errorf("%s: a leftover that is not a chain:\n%s", step, b)
		}
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
