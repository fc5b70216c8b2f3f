package nft_test

import (
	"context"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/netnstest"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// The node of the benchmarks: the 10k-pod cluster (10k NetworkPolicies, 100
// admin policies) spread over 100 nodes, so node-001 has 100 local pods.
// relabelled is the same cluster after one of node-001's pods changed its
// app label, which moves it between selectors.
var benchNode struct {
	once              sync.Once
	full, relabelled  *compile.IR
	relabelledPodName string
}

func benchIRs(b *testing.B) (full, relabelled *compile.IR) {
	benchNode.once.Do(func() {
		size := synth.Size10k
		size.Nodes = 100
		objs := synth.Cluster(size)
		node := synth.NodeName(0)
		build := func(objs []source.Object) *compile.IR {
			e, _, err := pipeline.Build(objs, nil, pipeline.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return compile.Node(e, node)
		}
		benchNode.full = build(objs)
		changed := append([]source.Object(nil), objs...)
		for i, o := range changed {
			pod, ok := o.Value.(*corev1.Pod)
			if !ok || pod.Spec.NodeName != node || pod.Namespace == "kube-system" {
				continue
			}
			pod = pod.DeepCopy()
			if pod.Labels["app"] == "cache" {
				pod.Labels["app"] = "db"
			} else {
				pod.Labels["app"] = "cache"
			}
			changed[i].Value = pod
			benchNode.relabelledPodName = pod.Namespace + "/" + pod.Name
			break
		}
		benchNode.relabelled = build(changed)
	})
	return benchNode.full, benchNode.relabelled
}

func report(b *testing.B, tx *knftables.Transaction, st nft.Stats) {
	b.ReportMetric(float64(st.Operations), "ops/tx")
	b.ReportMetric(float64(len(tx.String())), "bytes/tx")
	b.ReportMetric(float64(st.Elements), "elements/tx")
	b.ReportMetric(float64(st.Chains), "chains/tx")
}

// BenchmarkPlan measures computing the transaction (the diff against what
// is programmed) without applying it: a full sync of an empty kernel, and
// the update after one pod relabel.
func BenchmarkPlan(b *testing.B) {
	full, relabelled := benchIRs(b)
	ctx := context.Background()
	b.Run("full-sync", func(b *testing.B) {
		var tx *knftables.Transaction
		var st nft.Stats
		for b.Loop() {
			r := nft.New(knftables.NewFake(knftables.InetFamily, nft.TableName))
			var err error
			if tx, st, err = r.Plan(ctx, full); err != nil {
				b.Fatal(err)
			}
		}
		report(b, tx, st)
		b.ReportMetric(float64(len(full.Pods)), "local-pods")
		b.ReportMetric(float64(len(full.Tables)), "tables")
		b.ReportMetric(float64(len(full.Sets)), "sets")
	})
	b.Run("relabel", func(b *testing.B) {
		r := nft.New(knftables.NewFake(knftables.InetFamily, nft.TableName))
		if _, err := r.Sync(ctx, full); err != nil {
			b.Fatal(err)
		}
		var tx *knftables.Transaction
		var st nft.Stats
		for b.Loop() {
			var err error
			if tx, st, err = r.Plan(ctx, relabelled); err != nil {
				b.Fatal(err)
			}
		}
		report(b, tx, st)
	})
}

// BenchmarkKernelSync applies the same transactions to the kernel, in a
// network namespace of its own: nft parses them and the kernel commits them
// atomically. Needs root and nft.
func BenchmarkKernelSync(b *testing.B) {
	full, relabelled := benchIRs(b)
	ctx := context.Background()
	b.Run("full-sync", func(b *testing.B) {
		inNewNetns(b, func(nf knftables.Interface) {
			var tx *knftables.Transaction
			var st nft.Stats
			for b.Loop() {
				b.StopTimer()
				clear(b, nf)
				r := nft.New(nf)
				var err error
				if tx, st, err = r.Plan(ctx, full); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := nf.Run(ctx, tx); err != nil {
					b.Fatal(err)
				}
			}
			report(b, tx, st)
		})
	})
	// One relabel through nft alone, then through the element writer, as
	// the agent sends it.
	for _, path := range []struct {
		name    string
		netlink bool
	}{{"relabel", false}, {"relabel-netlink", true}} {
		b.Run(path.name, func(b *testing.B) {
			inNewNetns(b, func(nf knftables.Interface) {
				r := nft.New(nf)
				if path.netlink {
					r.WriteElementsWith(dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName})
				}
				if _, err := r.Sync(ctx, full); err != nil {
					b.Fatal(err)
				}
				var st nft.Stats
				// Back and forth: every sync is one relabel.
				next := []*compile.IR{relabelled, full}
				i := 0
				for b.Loop() {
					var err error
					if st, err = r.Sync(ctx, next[i%2]); err != nil {
						b.Fatal(err)
					}
					i++
				}
				b.ReportMetric(float64(st.Operations), "ops/tx")
				b.ReportMetric(float64(st.Elements), "elements/tx")
				b.ReportMetric(float64(st.Chains), "chains/tx")
			})
		})
	}
}

// clear deletes the table, whether or not it exists.
func clear(tb testing.TB, nf knftables.Interface) {
	tb.Helper()
	tx := nf.NewTransaction()
	tx.Add(&knftables.Table{}) // so that the delete cannot fail on an empty kernel
	tx.Delete(&knftables.Table{})
	if err := nf.Run(context.Background(), tx); err != nil {
		tb.Fatal(err)
	}
}

// inNewNetns runs fn with nftables in a network namespace of its own.
func inNewNetns(tb testing.TB, fn func(knftables.Interface)) {
	netnstest.Run(tb, func() {
		nf, err := knftables.New(knftables.InetFamily, nft.TableName)
		if err != nil {
			tb.Fatal(err)
		}
		fn(nf)
	})
}
