package source_test

import (
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/source"
)

// TestMemoDecodesOnlyChangedDocuments: unchanged documents come back as the
// same values (so the layers below skip them), a changed one is decoded
// anew, findings of unchanged documents are kept, and a document that moved
// is decoded again under its new origin.
func TestMemoDecodesOnlyChangedDocuments(t *testing.T) {
	const a = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n"
	const b = "apiVersion: v1\nkind: Namespace\nmetadata: {name: b, labels: {x: \"1\"}}\n"
	const dup = "apiVersion: v1\nkind: Namespace\nmetadata: {name: d}\nmetadata: {name: d}\n" // a warning
	m := &source.Memo{}
	first, diags := m.Decode([]source.File{{Name: "c.yaml", Data: []byte(a + "---\n" + b + "---\n" + dup)}})
	if len(first) != 3 || len(diags) != 1 {
		t.Fatalf("first: %d objects, findings %v; want 3 and the duplicate field", len(first), diags)
	}
	second, diags := m.Decode([]source.File{{Name: "c.yaml", Data: []byte(a + "---\n" + strings.Replace(b, `"1"`, `"2"`, 1) + "---\n" + dup)}})
	if len(second) != 3 || second[0].Value != first[0].Value || second[2].Value != first[2].Value {
		t.Errorf("unchanged documents decoded again: %v", second)
	}
	if len(diags) != 1 || diags[0].Origin.Doc != 3 {
		t.Errorf("findings of the unchanged documents: %v, want the duplicate field of document 3 kept", diags)
	}
	if second[1].Value == first[1].Value || second[1].Origin.Doc != 2 {
		t.Errorf("the changed document kept its old value, or its origin moved: %+v", second[1])
	}
	// A document inserted at the top moves the others: new origins, so
	// their messages stay right.
	third, _ := m.Decode([]source.File{{Name: "c.yaml", Data: []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: new}\n---\n" + a + "---\n" + b + "---\n" + dup)}})
	if len(third) != 4 || third[1].Origin.Doc != 2 || third[1].Name != "a" || third[1].Value == first[0].Value {
		t.Errorf("after an insertion: %+v, want a re-decoded at document 2", third)
	}
}

// TestMemoIgnoredKindsOneFinding: the documents of kinds netpol does not
// read are counted in one finding over all files, as the Decoder counts
// them.
func TestMemoIgnoredKindsOneFinding(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"
	const pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x}\n"
	m := &source.Memo{}
	for range 2 { // the second time from the memo
		objs, diags := m.Decode([]source.File{
			{Name: "a.yaml", Data: []byte(cm + "---\n" + pod + "---\n" + cm)},
			{Name: "b.yaml", Data: []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n")},
		})
		if len(objs) != 1 || len(diags) != 1 || diags[0].String() != "ignored 3 objects of kinds netpol does not read: ConfigMap 2, Secret 1" {
			t.Fatalf("%d objects, findings %v; want the pod and one finding", len(objs), diags)
		}
	}
}
