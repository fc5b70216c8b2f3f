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
	benchDumps(b, []synth.Size{synth.Size1k, synth.Size10k, synth.Size100k}, func(path string) []string {
		return []string{"explain", "-q", "-f", path, "--from", "kube-system/coredns-0", "--to", "kube-system/coredns-1", "--port", "53/udp"}
	})
}

// benchDumps runs the command that args makes of a dump's path through
// Main, once per size, the dump written first (not measured) and -short
// skipping sizes above 10k; the output is counted, not kept (MB-out).
func benchDumps(b *testing.B, sizes []synth.Size, args func(path string) []string) {
	for _, size := range sizes {
		b.Run(size.Name, func(b *testing.B) {
			if testing.Short() && size.Pods > 10_000 {
				b.Skip("-short")
			}
			path := filepath.Join(b.TempDir(), size.Name+".yaml")
			writeDump(b, path, size)
			for b.Loop() {
				var out countingWriter
				var errOut bytes.Buffer
				if code := Main(args(path), strings.NewReader(""), &out, &errOut); code != 0 || out == 0 {
					b.Fatalf("exit %d: %s", code, errOut.String())
				}
				b.ReportMetric(float64(out)/1e6, "MB-out")
			}
		})
	}
}

// writeDump writes the synthetic cluster of size to path as hack/synth does.
func writeDump(b testing.TB, path string, size synth.Size) {
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

// BenchmarkSuggestEndToEnd is `netpol suggest -f APPS --flows RECORD -o
// yaml` on the issue's scale, through Main as the command runs it: 10k
// pods of 998 Deployments (synth.Apps) as a YAML dump, a million lines of
// agents' record files; it decodes both, suggests, reads the input again
// with the suggestion to verify it, and writes the policies.
//
//	go test ./internal/cli -run XXX -bench SuggestEndToEnd -benchtime 3x
func BenchmarkSuggestEndToEnd(b *testing.B) {
	dir := b.TempDir()
	objs, ends, ports := synth.Apps()
	var dump bytes.Buffer
	if err := synth.WriteYAML(&dump, objs); err != nil {
		b.Fatal(err)
	}
	apps, records := filepath.Join(dir, "apps.yaml"), filepath.Join(dir, "record.jsonl")
	if err := os.WriteFile(apps, dump.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(records, synth.Records(ends, ports, 1_000_000), 0o600); err != nil {
		b.Fatal(err)
	}
	args := []string{"suggest", "-f", apps, "--flows", records, "--enforce"}
	for b.Loop() {
		var out, errOut bytes.Buffer
		if code := Main(args, strings.NewReader(""), &out, &errOut); code != 0 || out.Len() == 0 {
			b.Fatalf("exit %d: %s", code, errOut.String())
		}
	}
}

// BenchmarkExposureEndToEnd: `netpol exposure -q -f DUMP` through Main,
// the whole report written (to a discarding writer), in text and JSON.
//
//	go test ./internal/cli -run XXX -bench ExposureEndToEnd/text/100k -benchtime 1x -cpuprofile cpu.out
func BenchmarkExposureEndToEnd(b *testing.B) {
	for _, format := range []string{"text", "json"} {
		b.Run(format, func(b *testing.B) {
			benchDumps(b, []synth.Size{synth.Size10k, synth.Size100k}, func(path string) []string {
				return []string{"exposure", "-q", "-f", path, "-o", format}
			})
		})
	}
}

// BenchmarkClassViewEndToEnd: `netpol matrix -q -f DUMP -o json --classes`
// through Main, every side of every class answered and written (to a
// discarding writer).
//
//	go test ./internal/cli -run XXX -bench ClassViewEndToEnd/100k -benchtime 1x -cpuprofile cpu.out
func BenchmarkClassViewEndToEnd(b *testing.B) {
	benchDumps(b, []synth.Size{synth.Size10k, synth.Size30k, synth.Size100k}, func(path string) []string {
		return []string{"matrix", "-q", "-f", path, "-o", "json", "--classes"}
	})
}

// countingWriter counts what is written to it.
type countingWriter int

func (c *countingWriter) Write(p []byte) (int, error) {
	*c += countingWriter(len(p))
	return len(p), nil
}
