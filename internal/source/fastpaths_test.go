package source

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
)

// checkFastPaths fails when a Decoder with its fast paths decodes data
// otherwise than one with the full parsers only: other objects (values
// included) or other findings. Several documents in one stream also show
// a value that kept bytes of a buffer the fast paths reuse.
func checkFastPaths(t *testing.T, data []byte) {
	t.Helper()
	for _, opts := range []Options{{ANPShape: ShapeAuto}, {ANPShape: ShapeKEP, Lenient: true}} {
		fast := &Decoder{Options: opts}
		full := &Decoder{Options: opts, fullParsers: true}
		fastObjects := fast.Decode("in.yaml", bytes.Clone(data))
		fullObjects := full.Decode("in.yaml", bytes.Clone(data))
		if !reflect.DeepEqual(fastObjects, fullObjects) {
			t.Fatalf("objects of %q:\nfast paths  %s\nfull parsers %s", data, describeObjects(fastObjects), describeObjects(fullObjects))
		}
		if fmt.Sprint(fast.Diags) != fmt.Sprint(full.Diags) {
			t.Fatalf("findings of %q:\nfast paths  %v\nfull parsers %v", data, fast.Diags, full.Diags)
		}
	}
}

func describeObjects(objs []Object) string {
	var b bytes.Buffer
	for _, o := range objs {
		fmt.Fprintf(&b, "\n  %s %+v %+v unknown=%q", o.Ref(), o.Origin, o.Value, o.Unknown)
	}
	return b.String()
}

func TestFastPathsDecodeAsTheFullParsers(t *testing.T) {
	docs := repoManifests(t)
	checkFastPaths(t, bytes.Join(docs, []byte("\n---\n")))
	for _, tc := range fastYAMLCases {
		checkFastPaths(t, []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x}\nspec:\n  nodeName: n\n---\n"+tc.in))
	}
}

// FuzzFastPaths: whatever the input, the fast paths decode it as the full
// parsers do.
//
//	go test ./internal/source -run XXX -fuzz FuzzFastPaths
func FuzzFastPaths(f *testing.F) {
	docs := repoManifests(f)
	for _, doc := range docs {
		f.Add(doc)
	}
	for i := 0; i+3 <= len(docs); i += 3 {
		f.Add(bytes.Join(docs[i:i+3], []byte("---\n")))
	}
	f.Fuzz(checkFastPaths)
}
