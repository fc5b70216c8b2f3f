package cli

import (
	"io"
	"os"
	"testing"
)

func BenchmarkZZExplain(b *testing.B) {
	f := os.Getenv("DUMP")
	for b.Loop() {
		if rc := Main([]string{"explain", "-q", "-f", f, "--from", "kube-system/coredns-0", "--to", os.Getenv("TO"), "--port", "8080"}, nil, io.Discard, os.Stderr); rc != 0 {
			b.Fatal(rc)
		}
	}
}
