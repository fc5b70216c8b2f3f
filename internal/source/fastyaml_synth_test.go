package source_test

import (
	"bytes"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// TestFastYAMLSynthDump: every document of a synthetic dump (as kubectl
// writes objects) takes the fast path, and converts as the full parser
// converts it.
func TestFastYAMLSynthDump(t *testing.T) {
	var buf bytes.Buffer
	if err := synth.WriteYAML(&buf, synth.Cluster(synth.Size1k)); err != nil {
		t.Fatal(err)
	}
	for i, doc := range source.SplitDocuments(buf.Bytes()) {
		got, ok := source.FastYAMLToJSON(doc)
		if !ok {
			t.Fatalf("document %d left to the full parser:\n%s", i+1, doc)
		}
		want, err := yaml.YAMLToJSONStrict(doc)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("document %d:\n got  %s\n want %s (%v)", i+1, got, want, err)
		}
	}
}
