package source_test

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
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

// TestDecodeInParallel: a large stream decodes on several goroutines into
// the very objects and findings, in the same order, as on one.
func TestDecodeInParallel(t *testing.T) {
	var buf bytes.Buffer
	if err := synth.WriteYAML(&buf, synth.Cluster(synth.Size1k)); err != nil {
		t.Fatal(err)
	}
	// Findings of every sort, spread over the stream.
	docs := bytes.Split(buf.Bytes(), []byte("---\n"))
	for i := 0; i < len(docs); i += 97 {
		switch i % 4 {
		case 0:
			docs[i] = []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
		case 1:
			docs[i] = []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: x}\nspec: {colour: red}\n")
		case 2:
			docs[i] = []byte("apiVersion: v1\nkind: Pod\nmetadata: {namespace: x}\n")
		default:
			docs[i] = []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: q, namespace: x\n")
		}
	}
	data := bytes.Join(docs, []byte("---\n"))
	decode := func(procs int) ([]source.Object, string) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		dec := &source.Decoder{}
		objs := dec.Decode("dump.yaml", data)
		if got := dec.Documents.Load(); got != int64(len(docs)) {
			t.Errorf("%d documents counted, want %d", got, len(docs))
		}
		return objs, dec.Diags.Err().Error() + "\n" + fmt.Sprint(dec.Diags.Warnings())
	}
	one, oneDiags := decode(1)
	four, fourDiags := decode(4)
	if !reflect.DeepEqual(one, four) {
		t.Errorf("objects differ: %d on one goroutine, %d on four", len(one), len(four))
	}
	if oneDiags != fourDiags {
		t.Errorf("findings differ:\n%s\n%s", oneDiags, fourDiags)
	}
}
