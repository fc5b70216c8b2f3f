package agent_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sigs.k8s.io/knftables"
	"sigs.k8s.io/yaml"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/synth"
)

// BenchmarkFileRelabel times what `--source DIR` (and so the lab) costs for
// a one-pod relabel in the 10k-pod cluster written as one manifest file of
// ~7 MB: from the start of the file's rewrite to the end of the agent's
// pass that programs the change (read, decode of the changed document,
// build, compile, nft and netlink in a network namespace of its own).
// relabel-ms is the mean of those.
//
//	go test ./internal/agent -run XXX -bench FileRelabel -benchtime 100x
func BenchmarkFileRelabel(b *testing.B) {
	size := synth.Size10k
	size.Nodes = 100
	objs := synth.Cluster(size)
	node := synth.NodeName(0)
	pod, _ := changed(objs, node)
	docs := make([][]byte, len(objs))
	at := -1
	for i, o := range objs {
		data, err := yaml.Marshal(o.Value)
		if err != nil {
			b.Fatal(err)
		}
		docs[i] = data
		if o.Value == any(pod) {
			at = i
		}
	}
	// The pod's document with its app label flipped, both ways.
	flip := [2][]byte{docs[at], bytes.Replace(docs[at], []byte("app: "+pod.Labels["app"]), []byte("app: relabelled"), 1)}
	if bytes.Equal(flip[0], flip[1]) {
		b.Fatalf("no app label in\n%s", docs[at])
	}
	dir := b.TempDir()
	file := filepath.Join(dir, "cluster.yaml")
	write := func() {
		if err := os.WriteFile(file, bytes.Join(docs, []byte("---\n")), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write()
	b.ReportMetric(float64(len(bytes.Join(docs, []byte("---\n"))))/1e6, "file-MB")
	inKernel(b, func(r *nft.Renderer, _ knftables.Interface) {
		a := agent.New(agent.Config{Node: node, Input: &agent.Files{Paths: []string{dir}}}, r, nil)
		ctx := context.Background()
		if err := a.Pass(ctx); err != nil {
			b.Fatal(err)
		}
		var took time.Duration
		n := 0
		for b.Loop() {
			n++
			docs[at] = flip[n%2]
			start := time.Now()
			write()
			if err := a.Pass(ctx); err != nil {
				b.Fatal(err)
			}
			took += time.Since(start)
			if st := a.Status(); st.Stats.Operations == 0 {
				b.Fatalf("relabel %d programmed nothing", n)
			}
		}
		b.ReportMetric(float64(took.Microseconds())/1000/float64(n), "relabel-ms")
	})
}
