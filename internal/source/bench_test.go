package source_test

import (
	"bytes"
	"testing"

	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// BenchmarkDecode decodes the synthetic clusters written as one YAML
// stream (synth.WriteYAML): bytes to objects, what every front end pays
// before the engine sees anything. MB/s is of the YAML.
//
//	go test ./internal/source -run XXX -bench Decode -benchtime 3x
func BenchmarkDecode(b *testing.B) {
	for _, size := range []synth.Size{synth.Size1k, synth.Size10k} {
		var buf bytes.Buffer
		if err := synth.WriteYAML(&buf, synth.Cluster(size)); err != nil {
			b.Fatal(err)
		}
		data := buf.Bytes()
		b.Run(size.Name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				dec := &source.Decoder{}
				if objs := dec.Decode("dump.yaml", data); len(objs) == 0 || dec.Diags.Err() != nil {
					b.Fatalf("%d objects, %v", len(objs), dec.Diags.Err())
				}
			}
		})
	}
}
