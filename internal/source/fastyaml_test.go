package source

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// fastYAMLCases are documents with the JSON the fast converter must give,
// written out, or "" where it must leave the document to the full parser.
// Every case is also checked against the full parser.
var fastYAMLCases = []struct{ name, in, want string }{
	{"empty", "", "null"},
	{"only comments", "# a\n\n  # b\n", "null"},
	{"block mapping, keys sorted", "b: 1\na: x\n", `{"a":"x","b":1}`},
	{"nested mapping", "a:\n  c: 1\n  b: 2\nd: e\n", `{"a":{"b":2,"c":1},"d":"e"}`},
	{"indentless sequence", "a:\n- x\n- w\nb: z\n", `{"a":["x","w"],"b":"z"}`},
	{"indented sequence", "a:\n  - x\n  -   w\n", `{"a":["x","w"]}`},
	{"y is a boolean, even in a list", "a: [x, y]\n", `{"a":["x",true]}`},
	{"mapping in a sequence", "a:\n- name: c\n  ports:\n  - containerPort: 80\n    protocol: TCP\n- name: d\n",
		`{"a":[{"name":"c","ports":[{"containerPort":80,"protocol":"TCP"}]},{"name":"d"}]}`},
	{"entry on the next line", "a:\n-\n  b: c\n-\n- d\n", `{"a":[{"b":"c"},null,"d"]}`},
	{"empty values", "a:\nb: # nothing\nc: ~\nd: null\n", `{"a":null,"b":null,"c":null,"d":null}`},
	{"comments everywhere", "# head\na: b # tail\n# between\nc:\n    # deeper\n  d: e#not a comment\n", `{"a":"b","c":{"d":"e#not a comment"}}`},
	{"document indented as a whole", "  a: b\n  c: d\n", `{"a":"b","c":"d"}`},

	// Scalars as go-yaml v2 types them (YAML 1.1), then as json.Marshal
	// spells them.
	{"YAML 1.1 booleans", "a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: N\ng: True\nh: false\n",
		`{"a":true,"b":false,"c":true,"d":false,"e":true,"f":false,"g":true,"h":false}`},
	{"words that are not booleans", "a: yess\nb: oN\nc: Nope\nd: t\n", `{"a":"yess","b":"oN","c":"Nope","d":"t"}`},
	{"quoted scalars are strings", "a: \"80\"\nb: 'true'\nc: \"~\"\nd: ''\ne: \"\"\n", `{"a":"80","b":"true","c":"~","d":"","e":""}`},
	{"integers", "a: 80\nb: -3\nc: +4\nd: 0x1F\ne: 017\nf: 0o17\ng: 1_000\nh: 0b101\ni: -0\n",
		`{"a":80,"b":-3,"c":4,"d":31,"e":15,"f":15,"g":1000,"h":5,"i":0}`},
	{"big integers", "a: 9223372036854775807\nb: 18446744073709551615\nc: 18446744073709551616\n",
		`{"a":9223372036854775807,"b":18446744073709551615,"c":18446744073709552000}`},
	{"floats", "a: 1.5\nb: .5\nc: 1e3\nd: 1.\ne: 080\nf: 1e21\ng: 0.0000001\nh: -0.0\n",
		`{"a":1.5,"b":0.5,"c":1000,"d":1,"e":80,"f":1e+21,"g":1e-7,"h":-0}`},
	{"infinity and NaN: json.Marshal refuses them", "a: .inf\n", ""},
	{"out of range float stays a string", "a: 1e999\n", `{"a":"1e999"}`},
	{"addresses and versions are strings", "a: 198.18.0.5\nb: 10.0.0.0/8\nc: fd00::5\nd: ::1\ne: 1.2.3\nf: v1\n",
		`{"a":"198.18.0.5","b":"10.0.0.0/8","c":"fd00::5","d":"::1","e":"1.2.3","f":"v1"}`},
	{"timestamps are strings", "a: 2024-01-02\nb: 2024-01-02T03:04:05Z\n", `{"a":"2024-01-02","b":"2024-01-02T03:04:05Z"}`},
	{"plain scalars with indicators inside", "a: b:c\nd: e,f[0]{x}\ng: -h\nh: a  b\ni: x&y<z>\n",
		`{"a":"b:c","d":"e,f[0]{x}","g":"-h","h":"a  b","i":"x\u0026y\u003cz\u003e"}`},
	{"image with a port", "image: registry:5000/app:v1\n", `{"image":"registry:5000/app:v1"}`},
	{"single quotes", "a: 'it''s # not a comment'\n", `{"a":"it's # not a comment"}`},
	{"double-quoted escapes", `a: "q\"b\\s\/"` + "\n", ""}, // \/ is no escape to go-yaml v2
	{"double-quoted escapes go-yaml knows", `a: "q\"b\\t\tn\nu\u00e9x\x41e\e0\0L\LU\U0001F600"` + "\n",
		`{"a":"q\"b\\t\tn\nué` + `xAe\u001b0\u0000L\u2028U😀"}`},
	{"non-ASCII", "a: héllo wörld ✓\n", `{"a":"héllo wörld ✓"}`},
	{"quoted keys", "\"b\": 1\n'a': 2\n", `{"a":2,"b":1}`},
	{"space before the colon", "a : b\n", `{"a":"b"}`},
	{"flow collections", "a: {b: c, d: [1, x, 'y', \"z\"], e: {}, f: []}\n", `{"a":{"b":"c","d":[1,"x","y","z"],"e":{},"f":[]}}`},
	{"flow mapping keys sorted", "a: {z: 1, x: {c: 3, b: 2}}\n", `{"a":{"x":{"b":2,"c":3},"z":1}}`},
	{"JSON-like flow", `a: {"b":1, "c": [true, null]}` + "\n", `{"a":{"b":1,"c":[true,null]}}`},
	{"flow in a sequence", "- {a: b}\n- [c]\n", `[{"a":"b"},["c"]]`},
	{"labels kubectl writes", "metadata:\n  labels:\n    app.kubernetes.io/name: web\n    tier: \"1\"\n  name: web-0\n",
		`{"metadata":{"labels":{"app.kubernetes.io/name":"web","tier":"1"},"name":"web-0"}}`},

	// Block scalars, as go-yaml's scanner reads them.
	{"literal block scalar", "a: |\n  x\n   y\n\n  z\nb: c\n", `{"a":"x\n y\n\nz\n","b":"c"}`},
	{"literal, strip", "a: |-\n  x\n\n", `{"a":"x"}`},
	{"literal, keep", "a: |+\n  x\n\n\nb: c\n", `{"a":"x\n\n\n","b":"c"}`},
	{"literal at the end without a line break", "a: |\n  x", `{"a":"x"}`},
	{"empty literal", "a: |\nb: c\n", `{"a":"","b":"c"}`},
	{"empty literal, keep", "a: |+\n\n\n", `{"a":"\n\n"}`},
	{"literal with leading empty lines", "a: |\n\n  \n  x\n", `{"a":"\n\nx\n"}`},
	{"literal with a comment header", "a: | # why\n  x # not a comment\n", `{"a":"x # not a comment\n"}`},
	{"literal with an indentation indicator", "a: |2\n    x\n  y\n", `{"a":"  x\ny\n"}`},
	{"literal, indicators in either order", "a: |-2\n   x\nb: >+1\n  y\n", `{"a":" x","b":" y\n"}`},
	{"last-applied-configuration", "metadata:\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: |\n      {\"apiVersion\":\"v1\",\"kind\":\"Pod\"}\n  name: a\n",
		`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"apiVersion\":\"v1\",\"kind\":\"Pod\"}\n"},"name":"a"}}`},
	{"folded block scalar", "a: >\n  x\n  y\n\n  z\n   more\n  w\n", `{"a":"x y\nz\n more\nw\n"}`},
	{"folded, strip", "a: >-\n  x\n  y\n", `{"a":"x y"}`},
	{"block scalar in a sequence", "- |\n  x\n- >\n  y\n  z\n- w\n", `["x\n","y z\n","w"]`},
	{"block scalar in a mapping in a sequence", "- a: |\n    x\n  b: c\n", `[{"a":"x\n","b":"c"}]`},
	{"block scalar whose empty lines are deeper than its text", "a: |\n\n     \n  x\n", ""},
	{"block scalar indentation indicator 0", "a: |0\n  x\n", ""},
	{"block scalar header with text", "a: | x\n  y\n", ""},

	// Scalars over several lines, as go-yaml's emitter wraps long strings.
	{"plain scalar over lines", "a: b\n  c  \n\n  d\n\n\n   e # f\ng: h\n", `{"a":"b c\nd\n\ne","g":"h"}`},
	{"plain scalar over lines in a sequence", "- a\n  b\n- c\n", `["a b","c"]`},
	{"plain scalar over lines under a key in a sequence", "- k: a\n    b - c\n  l: d\n", `[{"k":"a b - c","l":"d"}]`},
	{"plain scalar over lines typed as a whole", "a: 1\n  2\nb: tr\n ue\n", `{"a":"1 2","b":"tr ue"}`},
	{"comment ends a plain scalar", "a: b\n  # c\nd: e\n", `{"a":"b","d":"e"}`},
	{"CRD description", "description: Port selects a port on a pod(s) based on\n  number.\n", `{"description":"Port selects a port on a pod(s) based on number."}`},
	{"double-quoted over lines", "a: \"b  \n   c\n\n  d\\\n  e\\ \n f\"\ng: h\n", `{"a":"b c\nde  f","g":"h"}`},
	{"single-quoted over lines", "a: 'b\n  ''c'' '\n", `{"a":"b 'c' "}`},
	{"quoted over lines back at column 0", "a: \"b\nc\"\n", `{"a":"b c"}`},
	{"unterminated quoted", "a: \"b\n", ""},
	{"mapping after a plain scalar over lines", "a: b\n  c: d\n", ""},
	{"quoted key over lines", "\"a\n b\": c\n", ""},
	{"flow scalar over lines", "a: [\"b\n c\"]\n", ""},

	// Left to the full parser.
	{"anchor and alias", "a: &x 1\nb: *x\n", ""},
	{"tag", "a: !!str 80\n", ""},
	{"flow over two lines", "a: {b: c,\n  d: e}\n", ""},
	{"complex key", "? a\n: b\n", ""},
	{"tab in the indentation", "a:\n\tb: c\n", ""},
	{"tab after the colon", "a:\tb\n", ""},
	{"carriage return", "a: b\r\n", ""},
	{"DEL", "a: b\x7f\n", ""},
	{"tab in the middle of a long line", "abcdefghijklmnop: qrstuvw\txyz\n", ""},
	{"control character in a long line", "abcdefghijklmnop: qrstuvwxyz\x01\n", ""},
	{"document marker after a long line", "abcdefghijklmnop: qrstuvwxyz\n---\n", ""},
	{"duplicate key", "a: 1\na: 2\n", ""},
	{"duplicate key unsorted", "b: 1\na: 2\nb: 3\n", ""},
	{"duplicate key in flow", "a: {b: 1, b: 2}\n", ""},
	{"integer key", "80: http\n", ""},
	{"boolean key", "on: push\n", ""},
	{"null key", "~: x\n", ""},
	{"merge key", "<<: {a: b}\n", ""},
	{"key that JSON escapes", "a&b: c\n", ""},
	{"mapping value in a plain scalar", "a: b: c\n", ""},
	{"sequence on the key's line", "a: - b\n", ""},
	{"sequence in a sequence on one line", "- - a\n", ""},
	{"scalar document", "hello\n", ""},
	{"flow document", "{a: b}\n", ""},
	{"document marker", "a: b\n---\nc: d\n", ""},
	{"document end", "a: b\n...\n", ""},
	{"directive", "%YAML 1.1\n", ""},
	{"bad indentation", "a:\n  b: c\n d: e\n", ""},
	{"deeper line after a value", "a: {}\n  b: c\n", ""},
	{"reserved indicator", "a: @b\n", ""},
	{"trailing comma in flow", "a: [b, ]\n", ""},
	{"colon in a flow scalar", "a: [b:c]\n", ""},
	{"byte order mark", "\ufeffa: b\n", ""},
	{"NEL", "a: b\u0085c\n", ""},
	{"not UTF-8", "a: \xff\n", ""},
	{"flow key without a space after the colon", "a: {b:c}\n", ""},
	{"content after a quoted scalar", "a: 'b' c\n", ""},
	{"comment right after a flow collection", "a: {}#c\n", ""},
	{"unknown escape", `a: "\q"` + "\n", ""},
	{"surrogate escape", `a: "\ud800"` + "\n", ""},
}

func TestFastYAMLToJSON(t *testing.T) {
	for _, tc := range fastYAMLCases {
		t.Run(tc.name, func(t *testing.T) {
			var c yamlToJSON
			got, ok := c.convert([]byte(tc.in))
			switch {
			case tc.want == "" && ok:
				t.Errorf("converted to %s, want it left to the full parser", got)
			case tc.want != "" && !ok:
				t.Errorf("left to the full parser, want %s", tc.want)
			case ok && string(got) != tc.want:
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			checkAgainstFullParser(t, []byte(tc.in))
		})
	}
}

// checkAgainstFullParser fails when the fast converter accepts doc and
// its JSON is not byte for byte what sigs.k8s.io/yaml gives.
func checkAgainstFullParser(t *testing.T, doc []byte) {
	t.Helper()
	var c yamlToJSON
	got, ok := c.convert(doc)
	if !ok {
		return
	}
	want, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		t.Fatalf("fast path accepted %q as %s; the full parser refuses it: %v", doc, got, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("fast path differs on %q:\n got  %s\n want %s", doc, got, want)
	}
}

// repoManifests returns the documents of the repository's manifests:
// examples, scenarios and deploy.
func repoManifests(t testing.TB) [][]byte {
	var docs [][]byte
	for _, dir := range []string{"examples", "testdata", "deploy"} {
		_ = filepath.WalkDir(filepath.Join("..", "..", dir), func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return nil
			}
			if ext := strings.ToLower(filepath.Ext(path)); ext != ".yaml" && ext != ".yml" {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			docs = append(docs, SplitDocuments(data)...)
			return nil
		})
	}
	return docs
}

func TestFastYAMLRepoManifests(t *testing.T) {
	docs := repoManifests(t)
	fast := 0
	for _, doc := range docs {
		checkAgainstFullParser(t, doc)
		var c yamlToJSON
		if _, ok := c.convert(doc); ok {
			fast++
		}
	}
	t.Logf("%d of %d documents took the fast path", fast, len(docs))
}

// FuzzFastYAML: whatever the fast converter accepts, it converts exactly
// as the full parser does.
//
//	go test ./internal/source -run XXX -fuzz FuzzFastYAML
func FuzzFastYAML(f *testing.F) {
	for _, tc := range fastYAMLCases {
		f.Add([]byte(tc.in))
	}
	for _, doc := range repoManifests(f) {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkAgainstFullParser(t, doc)
	})
}
