package nft_test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/render/nft"
)

// TestLabSyncSendsElementsOverNetlink: in a real kernel, element changes go
// over netlink after the first sync (chains that come and go around them
// through nft), and the kernel ends up holding exactly what nft would load
// from scratch for the same IR.
func TestLabSyncSendsElementsOverNetlink(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) { syncEveryWay(t, nf) })
}

func syncEveryWay(t *testing.T, nf knftables.Interface) {
	r := nft.New(nf)
	r.WriteElementsWith(dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName})
	ctx := context.Background()

	relabel := func(app string) string {
		return strings.Replace(cluster, "metadata: {name: c, namespace: x, labels: {app: c}}", "metadata: {name: c, namespace: x, labels: {app: "+app+"}}", 1)
	}
	for _, step := range []struct {
		name        string
		yaml        string
		wantNetlink bool
	}{
		{"first sync", cluster, false},
		{"c joins app=b: a set element", relabel("b"), true},
		{"c leaves app=b: a set element", cluster, true},
		{"c becomes app=a: a new table chain, then its map elements", relabel("a"), true},
		{"c back: its map elements, then the chain goes", cluster, true},
		{"c joins app=b again", relabel("b"), true},
	} {
		ir := compileYAML(t, step.yaml)
		st, err := r.Sync(ctx, ir)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if st.Netlink != step.wantNetlink || st.Operations == 0 {
			t.Errorf("%s: %+v, want netlink=%v and some operations", step.name, st, step.wantNetlink)
		}
		got := listTable(t)
		// The same IR loaded by nft into an empty table.
		clear(t, nf) // the renderer remembers what it held; the load below puts it back
		text, err := nft.Ruleset(ir)
		if err != nil {
			t.Fatal(err)
		}
		load := exec.Command("nft", "-f", "-")
		load.Stdin = strings.NewReader(text)
		if out, err := load.CombinedOutput(); err != nil {
			t.Fatalf("%s: loading the ruleset: %v\n%s", step.name, err, out)
		}
		if want := listTable(t); got != want {
			t.Fatalf("%s: the kernel holds\n%s\nnft loads the same IR as\n%s", step.name, got, want)
		}
	}
}

// listTable lists the table's sets, maps and chains in name order (nft
// lists them in the order they were made) without the table's comment.
func listTable(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("nft", "list", "table", "inet", nft.TableName).CombinedOutput()
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
	return strings.Join(blocks, "\n\n")
}
