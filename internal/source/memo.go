package source

import (
	"crypto/sha256"

	"github.com/netpol/netpol/internal/diag"
)

// Memo decodes manifest files again and again as they change (the agent's
// --source), decoding only the documents whose bytes changed: an unchanged
// document yields the very Objects it yielded before (the same Values), so
// the layers below see the unchanged objects as unchanged and redo only
// what the change touches (policy.Memo, state.Builder), as they do for the
// kube mirror. A one-pod relabel in a 7 MB manifest then decodes one
// document, not ten thousand. Not safe for concurrent use.
type Memo struct {
	Options
	docs map[diag.Origin]memoDoc
}

type memoDoc struct {
	// sum stands for the document's bytes: a copy of them would double
	// what the agent keeps of a manifest (96 MB for the 150k cluster).
	sum     [sha256.Size]byte
	objects []Object
	diags   diag.List
	ignored ignoredObjects
}

// Decode returns the objects of files and the decoder's findings, as a
// Decoder would.
func (m *Memo) Decode(files []File) ([]Object, diag.List) {
	next := make(map[diag.Origin]memoDoc, len(m.docs))
	var objects []Object
	var diags diag.List
	var ignored ignoredObjects // counted over every file, as a Decoder counts them
	for _, f := range files {
		docs := SplitDocuments(f.Data)
		for i, doc := range docs {
			origin := docOrigin(f.Name, i, len(docs))
			md, ok := m.docs[origin]
			if sum := sha256.Sum256(doc); !ok || md.sum != sum {
				d := &Decoder{Options: m.Options}
				md = memoDoc{sum: sum, objects: d.decodeDocument(nil, origin, doc), diags: d.Diags, ignored: d.ignored}
			}
			next[origin] = md
			objects = append(objects, md.objects...)
			diags = append(diags, md.diags...)
			ignored.addAll(md.ignored)
		}
	}
	m.docs = next
	if len(ignored.byKind) > 0 {
		diags = append(diags, ignored.finding())
	}
	return objects, diags
}
