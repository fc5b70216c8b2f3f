package nft_test

import (
	"context"
	"maps"
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

// recordingNft is nft that keeps the text of every transaction it runs.
type recordingNft struct {
	knftables.Interface
	texts []string
}

func (r *recordingNft) Run(ctx context.Context, tx *knftables.Transaction) error {
	r.texts = append(r.texts, tx.String())
	return r.Interface.Run(ctx, tx)
}

// TestLabFullSyncFillsSetsOverNetlink: a full sync — the first, and the one
// after a restart, when the kernel holds the sets already with other
// members — loads the selections' sets over netlink, not through nft
// (which needs 3.6 KB an element to read them), and the tables' chains
// before the transaction that points the pods at them (nft needs 6.7 KB a
// rule), and the kernel ends up holding exactly what nft loads from
// scratch.
func TestLabFullSyncFillsSetsOverNetlink(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) {
		ctx := context.Background()
		// b leaves app=b and c joins it while the agent is away.
		moved := strings.Replace(strings.Replace(cluster,
			"metadata: {name: b, namespace: x, labels: {app: b}}", "metadata: {name: b, namespace: x, labels: {app: z}}", 1),
			"metadata: {name: c, namespace: x, labels: {app: c}}", "metadata: {name: c, namespace: x, labels: {app: b}}", 1)
		// An exception inside the block leaves prefixes that nft merges
		// into one range, 198.18.4.2-198.18.4.255.
		ranged := func(yaml string) string {
			return strings.Replace(yaml, "{ipBlock: {cidr: 198.18.2.0/24, except: [198.18.2.128/25]}}",
				"{ipBlock: {cidr: 198.18.2.0/24, except: [198.18.2.128/25]}}, {ipBlock: {cidr: 198.18.4.0/24, except: [198.18.4.1/32]}}", 1)
		}
		for _, step := range []struct{ name, yaml string }{
			{"first sync", ranged(cluster)},
			{"after a restart, app=b's members changed", ranged(moved)},
		} {
			rec := &recordingNft{Interface: nf}
			r := nft.New(rec) // a new agent each time
			r.WriteElementsWith(dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName})
			r.ListObjectsWith(dataplane.Objects{Family: unix.NFPROTO_INET, Table: nft.TableName})
			ir := compileYAML(t, step.yaml)
			st, err := r.Sync(ctx, ir)
			if err != nil {
				t.Fatalf("%s: %v", step.name, err)
			}
			if !st.Full || !st.Netlink {
				t.Errorf("%s: %+v, want a full sync with elements over netlink", step.name, st)
			}
			for _, s := range ir.Sets {
				for _, text := range rec.texts {
					if strings.Contains(text, "add element inet netpol "+s.Name) {
						t.Errorf("%s: nft was given elements of %s:\n%s", step.name, s.Name, text)
					}
				}
			}
			// The last transaction switches the pods to their tables; the
			// tables' rules went before it.
			last := rec.texts[len(rec.texts)-1]
			for _, tb := range ir.Tables {
				if strings.Contains(last, "add rule inet netpol "+tb.Name+" ") {
					t.Errorf("%s: the final transaction writes table %s:\n%s", step.name, tb.Name, last)
				}
			}
			compareWithScratch(t, step.name, ir)
		}
	})
}

// TestLabFullSyncRecordTurnedOn: after a restart that turns --record on,
// the tables' chains the kernel has (same names: the name does not say
// where a drop goes) are rewritten by the transaction that writes
// record-deny and switches the maps, not before it: rewritten before, their
// drops would go to a record-deny still empty, and a goto to an empty
// chain accepts.
func TestLabFullSyncRecordTurnedOn(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) {
		ctx := context.Background()
		plain := compileYAML(t, cluster)
		recorded := compileYAML(t, cluster)
		recorded.Record = true
		for i, ir := range []*compile.IR{plain, recorded} {
			rec := &recordingNft{Interface: nf}
			r := nft.New(rec)
			r.WriteElementsWith(dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName})
			r.ListObjectsWith(dataplane.Objects{Family: unix.NFPROTO_INET, Table: nft.TableName})
			if _, err := r.Sync(ctx, ir); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				continue
			}
			last := rec.texts[len(rec.texts)-1]
			for _, text := range rec.texts[:len(rec.texts)-1] {
				for _, tb := range ir.Tables {
					if strings.Contains(text, "add rule inet netpol "+tb.Name+" ") {
						t.Errorf("table %s rewritten before the switch:\n%s", tb.Name, text)
					}
				}
			}
			if !strings.Contains(last, "add rule inet netpol "+ir.Tables[0].Name+" ") || !strings.Contains(last, "add rule inet netpol record-deny") {
				t.Errorf("the final transaction does not write table %s and record-deny:\n%s", ir.Tables[0].Name, last)
			}
			compareWithScratch(t, "record turned on", ir)
		}
	})
}

// replaceSink is an element writer that fills and replaces nothing, and
// keeps what it was asked.
type replaceSink struct {
	elementSink
	filled   []string
	replaced [][]string
}

func (s *replaceSink) Fill(set string, _ []dataplane.Element) error {
	s.filled = append(s.filled, set)
	return nil
}

func (s *replaceSink) Replace(sets map[string][]dataplane.Element) error {
	s.replaced = append(s.replaced, slices.Sorted(maps.Keys(sets)))
	return nil
}

// kernelHas lists the names of a kernel that holds the given sets.
type kernelHas struct{ sets []string }

func (k kernelHas) List(context.Context) ([]string, []string, []string, error) {
	return nil, k.sets, nil, nil
}

// TestFullSyncReplacesLiveSetsTogether: the selection sets the kernel has
// already (a restart) are refilled in one batch, all of them: one at a
// time, a pod moving from one denied selection to another would be in
// neither for a moment. Those it lacks are filled on their own.
func TestFullSyncReplacesLiveSetsTogether(t *testing.T) {
	ir := compileYAML(t, cluster)
	var live []string
	for _, s := range ir.Sets {
		live = append(live, s.Name+"-4", s.Name+"-6")
	}
	slices.Sort(live)
	sink := &replaceSink{}
	r := nft.New(knftables.NewFake(knftables.InetFamily, nft.TableName))
	r.WriteElementsWith(sink)
	r.ListObjectsWith(kernelHas{sets: live[1:]}) // all but one
	if _, err := r.Sync(context.Background(), ir); err != nil {
		t.Fatal(err)
	}
	if len(sink.replaced) != 1 || !slices.Equal(sink.replaced[0], live[1:]) {
		t.Errorf("replaced %v, want one batch of %v", sink.replaced, live[1:])
	}
	if !slices.Contains(sink.filled, live[0]) || slices.ContainsFunc(sink.filled, func(s string) bool { return slices.Contains(live[1:], s) }) {
		t.Errorf("filled %v, want %s and none the kernel has", sink.filled, live[0])
	}
}

// TestLabHostSetsArePlain: a selection of pods and nodes holds single
// addresses, and the kernel keeps it as a plain hash set: an interval set
// stores each address as a range in a tree, 185 bytes an element against
// 72 (100,000 addresses in a memory cgroup's kmem), and a node of a
// 150k-pod cluster holds 741,308 such elements. A set with an ipBlock
// keeps its ranges.
func TestLabHostSetsArePlain(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) {
		ctx := context.Background()
		r := nft.New(nf)
		r.WriteElementsWith(dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName})
		r.ListObjectsWith(dataplane.Objects{Family: unix.NFPROTO_INET, Table: nft.TableName})
		ir := compileYAML(t, cluster)
		if _, err := r.Sync(ctx, ir); err != nil {
			t.Fatal(err)
		}
		var hosts, blocks int
		for _, s := range ir.Sets {
			text, err := exec.Command("nft", "list", "set", "inet", nft.TableName, s.Name+"-4").CombinedOutput()
			if err != nil {
				t.Fatalf("nft list set %s-4: %v\n%s", s.Name, err, text)
			}
			interval := strings.Contains(string(text), "flags interval")
			withBlock := strings.Contains(s.Key, "cidr ")
			if withBlock {
				blocks++
			} else {
				hosts++
			}
			if interval != withBlock {
				t.Errorf("set %s (%s): interval %v, want %v:\n%s", s.Name, s.Key, interval, withBlock, text)
			}
		}
		if hosts == 0 || blocks == 0 {
			t.Fatalf("the cluster has %d sets of hosts and %d with blocks; want both", hosts, blocks)
		}
	})
}

// TestLabChangeWritesNewTablesInBatches: a change that makes many tables
// new (a baseline policy every pod has changed: every table is new, as a
// table is named after its rules) writes their chains in transactions of
// a bounded number of rules before the one that points the pods at them:
// in one transaction nft needed 747 MB for the node of a 30k-pod cluster
// (BenchmarkFleet), past any memory limit the agent has. The kernel ends
// up as if loaded from scratch.
func TestLabChangeWritesNewTablesInBatches(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) {
		ctx := context.Background()
		rec := &recordingNft{Interface: nf}
		r := nft.New(rec)
		r.WriteElementsWith(dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName})
		r.ListObjectsWith(dataplane.Objects{Family: unix.NFPROTO_INET, Table: nft.TableName})
		nft.SetChainBatch(r, 1) // every chain in a transaction of its own
		if _, err := r.Sync(ctx, compileYAML(t, cluster)); err != nil {
			t.Fatal(err)
		}
		ir := compileYAML(t, cluster+perPodPolicies)
		rec.texts = nil
		st, err := r.Sync(ctx, ir)
		if err != nil {
			t.Fatal(err)
		}
		if st.Full || !st.Netlink {
			t.Fatalf("%+v, want an incremental sync with elements over netlink", st)
		}
		if len(ir.Tables) < 3 {
			t.Fatalf("%d tables, want one a pod", len(ir.Tables))
		}
		if len(rec.texts) < 4 {
			t.Errorf("%d transactions, want the new tables' six chains in more than one", len(rec.texts))
		}
		for _, text := range rec.texts {
			var written []string
			for _, tb := range ir.Tables {
				if strings.Contains(text, "add rule inet netpol "+tb.Name+" ") {
					written = append(written, tb.Name)
				}
			}
			if len(written) > 1 {
				t.Errorf("one transaction wrote the chains of %d new tables %v, want one at a time:\n%s", len(written), written, text)
			}
		}
		compareWithScratch(t, "after the change", ir)
	})
}

// perPodPolicies give b and c a table each, and every table a second
// chain (what follows the admin rule that passes), which its first jumps
// to.
const perPodPolicies = `
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: pass-from-anywhere}
spec:
  priority: 10
  subject: {namespaces: {}}
  ingress: [{name: pass, action: Pass, from: [{namespaces: {}}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: b-from-a, namespace: x}
spec:
  podSelector: {matchLabels: {app: b}}
  ingress: [{from: [{podSelector: {matchLabels: {app: a}}}], ports: [{port: 81}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: c-from-a, namespace: x}
spec:
  podSelector: {matchLabels: {app: c}}
  ingress: [{from: [{podSelector: {matchLabels: {app: a}}}], ports: [{port: 82}]}]
`
