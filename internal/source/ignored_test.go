package source

import (
	"encoding/json"
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

func skipAll(string) bool { return true }

func TestPeekYAMLKind(t *testing.T) {
	crd, err := os.ReadFile("../../deploy/crds/policy.networking.k8s.io_adminnetworkpolicies.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, in string
		want     string // "" when the peek must not answer
	}{
		{"ConfigMap as kubectl writes it", "apiVersion: v1\ndata:\n  config.yaml: |\n    kind: Pod\n    apiVersion: v1\n\n  other: 'x'\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: x\n", "ConfigMap"},
		{"CRD of the repository", string(SplitDocuments(crd)[0]), "CustomResourceDefinition"},
		{"comments and a kind with a comment", "# head\napiVersion: v1 # the core group\n\nkind: Secret # hush\n", "Secret"},
		{"block scalar with an indentation indicator", "a: |2\n   x\n  y\nkind: Event\napiVersion: v1\n", "Event"},
		{"quoted and flow values closed on their lines", "a: 'it''s'\nb: \"q\\\"\"\nc: {d: [e, f]}\nkind: Event\napiVersion: v1\n", "Event"},
		{"list of a top-level key", "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nrules:\n- apiGroups: [\"\"]\n  verbs:\n  - get\n-\n  x: |\n   y\n", "Role"},
		{"plain scalar over lines", "a: b\n  c\nkind: Event\napiVersion: v1\n", "Event"},

		// A quoted scalar over lines holds its lines, at column 0 too.
		{"double-quoted scalar over lines", "apiVersion: v1\nmetadata:\n  annotations:\n    x: \"abc\nkind: Pod\nb: c\"\nkind: Event\n", "Event"},
		{"double-quoted scalar ending in an escaped line break", "apiVersion: v1\na: \"b\\\nkind: Pod\nc: \\\"d\"\nkind: Event\n", "Event"},
		{"single-quoted scalar over lines", "apiVersion: v1\na: 'b''\nkind: Pod\nc: d'\nkind: Event\n", "Event"},
		{"quoted value on its own line", "apiVersion: v1\na:\n  \"b\nkind: Pod\nc: d\"\nkind: Event\n", "Event"},
		{"quoted scalar that does not end", "apiVersion: v1\nkind: Event\na: \"b\n", ""},
		{"text after a quoted scalar over lines", "apiVersion: v1\nkind: Event\na: \"b\nc\" d\n", ""},

		// Where a line at column 0 may belong to something else, or the
		// kind is not a plain word, the peek does not answer.
		{"flow collection over lines", "apiVersion: v1\ndata: {a: b,\nkind: ConfigMap}\n", ""},
		{"flow collection with a quote in a plain scalar", "apiVersion: v1\ndata: [it's, 'x]\nkind: ConfigMap\nc: d'\n", ""},
		{"flow collection with an unclosed quote", "apiVersion: v1\ndata: [\"x]\nkind: ConfigMap\nc: d\"\n", ""},
		{"block scalar of a deeper key ends before column 0", "  - key: |\n    x: \"abc\nkind: ConfigMap\nb: c\"\n", ""},
		{"anchor", "apiVersion: v1\na: &x \"b\nkind: ConfigMap\nc: d\"\n", ""},
		{"a kind only in a quoted scalar", "apiVersion: v1\na: \"b\nkind: ConfigMap\nc: d\"\n", ""},
		{"tag", "apiVersion: v1\nkind: !!str ConfigMap\n", ""},
		{"kind over two lines", "apiVersion: v1\nkind: Config\n  Map\n", ""},
		{"quoted kind", "apiVersion: v1\nkind: \"ConfigMap\"\n", ""},
		{"quoted key", "apiVersion: v1\n\"kind\": ConfigMap\n", ""},
		{"kind that YAML reads as a boolean", "apiVersion: v1\nkind: yes\n", ""},
		{"numeric apiVersion", "apiVersion: 1\nkind: ConfigMap\n", ""},
		{"no apiVersion", "kind: ConfigMap\n", ""},
		{"duplicate kind", "apiVersion: v1\nkind: ConfigMap\nkind: Pod\n", ""},
		{"indented document", "  apiVersion: v1\n  kind: ConfigMap\n", ""},
		{"flow document", "{apiVersion: v1,\nkind: ConfigMap}\n", ""},
		{"JSON", `{"apiVersion": "v1", "kind": "ConfigMap"}`, ""},
		{"carriage returns", "apiVersion: v1\r\nkind: ConfigMap\r\n", ""},
		{"line separator", "apiVersion: v1\na: b\u2028kind: Pod\nkind: ConfigMap\n", ""},
		{"byte order mark on a line", "apiVersion: v1\nkind: ConfigMap\n\ufeffkind: Pod\n", ""},
		{"tab", "apiVersion: v1\n\tkind: ConfigMap\n", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := peekYAMLKind([]byte(tc.in), skipAll)
			if (tc.want == "") == ok || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, ok, tc.want)
			}
			checkPeekYAMLKind(t, []byte(tc.in))
		})
	}
	if _, ok := peekYAMLKind([]byte("apiVersion: v1\nkind: Pod\nx: \"y\n"), skips); ok {
		t.Errorf("a Pod is skipped")
	}
}

// checkPeekYAMLKind fails when the peek names a kind for a document that
// the full parser reads, and reads otherwise. A document the full parser
// refuses may be skipped: skipped documents are not judged.
func checkPeekYAMLKind(t *testing.T, doc []byte) {
	t.Helper()
	kind, ok := peekYAMLKind(doc, skipAll)
	if !ok {
		return
	}
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return
	}
	var h header
	if err := json.Unmarshal(js, &h); err != nil {
		return // not an object netpol could read either
	}
	if h.Kind != kind || h.APIVersion == "" {
		t.Fatalf("peek says kind %q of %q; the full parser reads apiVersion %q, kind %q", kind, doc, h.APIVersion, h.Kind)
	}
}

// FuzzPeekYAMLKind: whatever kind the peek names, the full parser names
// too.
//
//	go test ./internal/source -run XXX -fuzz FuzzPeekYAMLKind
func FuzzPeekYAMLKind(f *testing.F) {
	f.Add([]byte("apiVersion: v1\ndata:\n  a: |\n    x\nkind: ConfigMap\nmetadata: {name: c}\n"))
	f.Add([]byte("apiVersion: v1\na: \"b\nkind: ConfigMap\nc: d\"\n"))
	f.Add([]byte("apiVersion: v1\na: [b, {c: d}]\n- 'e'\nkind: Event\n"))
	for _, doc := range repoManifests(f) {
		f.Add(doc)
	}
	f.Fuzz(checkPeekYAMLKind)
}
