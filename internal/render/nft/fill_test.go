package nft_test

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"sigs.k8s.io/knftables"

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
