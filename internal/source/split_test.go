package source_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/source"
)

// bufSize is the size of the bufio buffer an earlier splitter read lines
// through: a line that filled it exactly was lost.
const bufSize = 4096

// policyLine is a deny-all NetworkPolicy called name, on one line of
// exactly size bytes (no newline), padded with an annotation.
func policyLine(t *testing.T, name string, size int) string {
	t.Helper()
	const format = `{apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: %s, namespace: x, annotations: {pad: "%s"}}, spec: {podSelector: {}, policyTypes: [Ingress, Egress]}}`
	pad := size - len(fmt.Sprintf(format, name, ""))
	if pad < 0 {
		t.Fatalf("a %d-byte line is too short for a policy", size)
	}
	line := fmt.Sprintf(format, name, strings.Repeat("p", pad))
	if len(line) != size {
		t.Fatalf("policyLine made %d bytes, want %d", len(line), size)
	}
	return line
}

// TestSplitDocumentsBufferBoundaries: manifests whose lines, documents or
// separators end at a multiple of 4096 bytes are read whole (issue 15: a
// 4096-byte deny-all policy on one line was dropped without a word).
func TestSplitDocumentsBufferBoundaries(t *testing.T) {
	type boundaryCase struct {
		name string
		in   func(t *testing.T) string // policy lines and literal text between them
		want []string                  // the names of the policies read
	}
	var cases []boundaryCase
	for _, size := range []int{bufSize - 1, bufSize, bufSize + 1, 2 * bufSize} {
		for _, nl := range []string{"", "\n", "\r\n"} {
			cases = append(cases, boundaryCase{
				name: fmt.Sprintf("one line of %d bytes, end %q", size, nl),
				in:   func(t *testing.T) string { return policyLine(t, "deny", size) + nl },
				want: []string{"deny"},
			})
		}
	}
	cases = append(cases, []boundaryCase{
		{
			// "---\n" + 4092 bytes: the document ends at 4096, at EOF.
			name: "separator first, document ends at 4096 without newline",
			in:   func(t *testing.T) string { return "---\n" + policyLine(t, "a", bufSize-4) },
			want: []string{"a"},
		},
		{
			name: "separator first, document ends at 8192 without newline",
			in:   func(t *testing.T) string { return "---\n" + policyLine(t, "a", 2*bufSize-4) },
			want: []string{"a"},
		},
		{
			name: "4096-byte line then a separator",
			in: func(t *testing.T) string {
				return policyLine(t, "a", bufSize) + "\n---\n" + policyLine(t, "b", 200) + "\n"
			},
			want: []string{"a", "b"},
		},
		{
			name: "separator starts at 4096",
			in: func(t *testing.T) string {
				return policyLine(t, "a", bufSize-1) + "\n---\n" + policyLine(t, "b", 200)
			},
			want: []string{"a", "b"},
		},
		{
			name: "separator straddles 4096",
			in: func(t *testing.T) string {
				return policyLine(t, "a", bufSize-3) + "\n---\n" + policyLine(t, "b", 200)
			},
			want: []string{"a", "b"},
		},
		{
			name: "separator ends at 4096 without newline",
			in:   func(t *testing.T) string { return policyLine(t, "a", bufSize-4) + "\n---" },
			want: []string{"a"},
		},
		{
			name: "second document ends at 8192 without newline",
			in: func(t *testing.T) string {
				return policyLine(t, "a", bufSize-1) + "\n---\n" + policyLine(t, "b", bufSize-4)
			},
			want: []string{"a", "b"},
		},
		{
			name: "two 4096-byte documents, separator with a comment",
			in: func(t *testing.T) string {
				return policyLine(t, "a", bufSize) + "\n--- # b follows\n" + policyLine(t, "b", bufSize)
			},
			want: []string{"a", "b"},
		},
	}...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dec := &source.Decoder{}
			objs := dec.Decode("big.yaml", []byte(c.in(t)))
			var got []string
			for _, o := range objs {
				got = append(got, o.Name)
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("decoded %q, want %q", got, c.want)
			}
			checkDiags(t, dec.Diags, nil)
		})
	}
}

// referenceSplit is the YAML document splitting SplitDocuments must do,
// written for plainness: the stream is cut into lines at "\n"; a line that
// begins with "---" and has nothing after it but spaces or a comment is a
// separator; a document is the bytes of the lines between separators, and
// documents without a byte are skipped. Any other line that begins with
// "---" makes the stream malformed: it comes back whole.
func referenceSplit(data []byte) [][]byte {
	lines := strings.SplitAfter(string(data), "\n")
	var docs [][]byte
	var doc strings.Builder
	for _, line := range lines {
		if rest, ok := strings.CutPrefix(line, "---"); ok {
			rest = strings.TrimSpace(rest)
			if rest != "" && rest[0] != '#' {
				return [][]byte{data}
			}
			if doc.Len() > 0 {
				docs = append(docs, []byte(doc.String()))
			}
			doc.Reset()
			continue
		}
		doc.WriteString(line)
	}
	if doc.Len() > 0 {
		docs = append(docs, []byte(doc.String()))
	}
	return docs
}

// FuzzSplitDocuments compares SplitDocuments with referenceSplit on YAML
// streams whose middle part is padded so that it ends near a multiple of
// the 4096-byte buffer of bufio readers: head, then pad bytes of 'x', then
// tail, where the pad makes head and pad together boundary*4096+shift
// bytes long (shift in -4..4).
func FuzzSplitDocuments(f *testing.F) {
	for _, s := range []struct {
		head, tail      string
		boundary, shift int8
	}{
		{"", "", 0, 0},
		{"", "\n", 0, 0},
		{"a: ", "\n---\nb: 1\n", 0, 0},
		{"---\na: ", "", 1, 0},
		{"a: 1\n---\nb: ", "\r\n---\r\nc: 1", 0, -1},
		{"a: ", "\n--- # c\n---\n", 1, 2},
		{"a: ", "\n---x\n", 0, 0},
		{"a: ", "\n---", 0, -4},
		{"---\n---\n", "\n", 0, 3},
	} {
		f.Add([]byte(s.head), []byte(s.tail), s.boundary, s.shift)
	}
	f.Fuzz(func(t *testing.T, head, tail []byte, boundary, shift int8) {
		target := (1+int(boundary&1))*bufSize + int(shift)%5
		pad := max(target-len(head), 0)
		in := append(append(bytes.Clone(head), bytes.Repeat([]byte("x"), pad)...), tail...)
		if t := bytes.TrimSpace(in); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
			return // a JSON stream, split by the JSON decoder
		}
		got := source.SplitDocuments(in)
		want := referenceSplit(in)
		if len(got) != len(want) {
			t.Fatalf("%d documents, want %d\ngot  %q\nwant %q", len(got), len(want), got, want)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("document %d:\ngot  %q\nwant %q", i, got[i], want[i])
			}
		}
	})
}
