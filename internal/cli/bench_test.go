package cli

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/synth"
)

// BenchmarkExplainEndToEnd is BENCHMARKS.md's "one flow" job in process:
// `netpol explain -q -f DUMP --from kube-system/coredns-0 --to
// kube-system/coredns-1 --port 53/udp` on a synthetic dump (hack/synth)
// written to a file, through Main, as the command runs it. It is there to
// be profiled; the figures of record are the command's own, timed on an
// idle machine (hack/e2e-bench).
//
//	go test ./internal/cli -run XXX -bench ExplainEndToEnd/100k -benchtime 1x -cpuprofile cpu.out
func BenchmarkExplainEndToEnd(b *testing.B) {
	for _, size := range []synth.Size{synth.Size1k, synth.Size10k, synth.Size100k} {
		b.Run(size.Name, func(b *testing.B) {
			if testing.Short() && size.Pods > 10_000 {
				b.Skip("-short")
			}
			path := filepath.Join(b.TempDir(), size.Name+".yaml")
			writeDump(b, path, size)
			args := []string{"explain", "-q", "-f", path,
				"--from", "kube-system/coredns-0", "--to", "kube-system/coredns-1", "--port", "53/udp"}
			for b.Loop() {
				var out, errOut bytes.Buffer
				if code := Main(args, strings.NewReader(""), &out, &errOut); code != 0 || out.Len() == 0 {
					b.Fatalf("exit %d: %s", code, errOut.String())
				}
			}
		})
	}
}

// writeDump writes the synthetic cluster of size to path as hack/synth does.
func writeDump(b *testing.B, path string, size synth.Size) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	if err := synth.WriteYAML(w, synth.Cluster(size)); err != nil {
		b.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}
