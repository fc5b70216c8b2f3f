package agent_test

import (
	"context"
	"testing"
	"time"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// BenchmarkDriftRestore: node-001 of the 10k-pod cluster is programmed,
// then someone deletes netpol's table (as `nft flush ruleset` would); the
// time is that of the agent's check that finds it gone and programs it
// again (CheckKernel: the generation, the table's verification, a full
// sync), in a network namespace of its own; on a node add the wait for the
// next loop turn (--interval) and, when another writer made the agent
// verify less than a second before, the rest of that second. check-ms is the same check
// when nothing changed (the generation alone), as every loop turn pays it;
// verify-ms when another writer changed another table (the generation
// moved, the verification finds netpol's table intact).
//
// The recording variant has the agent record observed traffic (--record),
// which adds the record chains and their verification.
//
//	go test ./internal/agent -run XXX -bench DriftRestore -benchtime 10x
func BenchmarkDriftRestore(b *testing.B) {
	size := synth.Size10k
	size.Nodes = 100
	objs := synth.Cluster(size)
	b.Run("plain", func(b *testing.B) { driftRestore(b, objs, nil) })
	b.Run("recording", func(b *testing.B) { driftRestore(b, objs, &namesRecorder{}) })
}

func driftRestore(b *testing.B, objs []source.Object, rec agent.Recorder) {
	in := &sliceInput{objs: objs}
	inKernel(b, func(r *nft.Renderer, iface knftables.Interface) {
		a := agent.New(agent.Config{Node: synth.NodeName(0), Input: in, Generation: dataplane.Generation, Record: rec}, r, nil)
		ctx := context.Background()
		if err := a.Pass(ctx); err != nil {
			b.Fatal(err)
		}
		other, err := knftables.New(knftables.InetFamily, "other")
		if err != nil {
			b.Fatal(err)
		}
		var check, verify time.Duration
		for b.Loop() {
			b.StopTimer()
			start := time.Now()
			if err := a.CheckKernel(ctx); err != nil {
				b.Fatal(err)
			}
			check += time.Since(start)
			// Another writer's change to its own table: the generation
			// moves, the verification finds netpol's table intact.
			tx := other.NewTransaction()
			tx.Add(&knftables.Table{})
			if err := other.Run(ctx, tx); err != nil {
				b.Fatal(err)
			}
			start = time.Now()
			if err := a.CheckKernel(ctx); err != nil {
				b.Fatal(err)
			}
			verify += time.Since(start)
			repaired := a.Status().Repaired
			if st := a.Status(); st.Drift != "" && st.Repaired != repaired {
				b.Fatalf("another table's change made the agent repair its own: %+v", st)
			}
			time.Sleep(time.Second) // verifications are a second apart at least
			tx = iface.NewTransaction()
			tx.Delete(&knftables.Table{})
			if err := iface.Run(ctx, tx); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if err := a.CheckKernel(ctx); err != nil {
				b.Fatal(err)
			}
			if st := a.Status(); !st.Stats.Full || st.Repaired != repaired+1 {
				b.Fatalf("not restored: %+v", st)
			}
		}
		b.ReportMetric(float64(check.Microseconds())/1000/float64(b.N), "check-ms")
		b.ReportMetric(float64(verify.Microseconds())/1000/float64(b.N), "verify-ms")
	})
}
