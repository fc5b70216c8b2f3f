package graph

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"
)

// tiny: web and db talk both ways on 5432 (drawn as one line); the two web
// replicas talk to each other; a diff added 8080 from batch to web, removed
// 5432 from batch to db and moved db -> batch from 443 to 80.
func tiny() *Graph {
	return &Graph{
		Title: `shop "after"`,
		Nodes: []Node{
			{Namespace: "shop", Pods: []string{"web-0", "web-1"}},
			{Namespace: "data", Pods: []string{"db"}},
			{Namespace: "shop", Pods: []string{"batch"}},
		},
		Edges: []Edge{
			{From: 0, To: 1, Label: "5432/tcp"},
			{From: 0, To: 0, Label: "8080/tcp"},
			{From: 2, To: 0, Label: "8080/tcp", State: Added},
			{From: 2, To: 1, Label: "5432/tcp", State: Removed},
			{From: 1, To: 0, Label: "5432/tcp"},
			{From: 1, To: 2, Label: "+80/tcp -443/tcp", State: Changed},
		},
	}
}

func TestWriteDOT(t *testing.T) {
	var b bytes.Buffer
	if err := WriteDOT(&b, tiny()); err != nil {
		t.Fatal(err)
	}
	want := `digraph "shop \"after\"" {
  graph [label="shop \"after\"", labelloc=t, fontname="Helvetica", rankdir=LR];
  node [shape=box, style=rounded, fontname="Helvetica", fontsize=11];
  edge [fontname="Helvetica", fontsize=10];
  subgraph cluster_0 {
    label="data";
    n1 [label="db"];
  }
  subgraph cluster_1 {
    label="shop";
    n0 [label="web-0\nweb-1"];
    n2 [label="batch"];
  }
  n0 -> n1 [label="5432/tcp", dir=both];
  n0 -> n0 [label="8080/tcp"];
  n2 -> n0 [label="8080/tcp", color="#1a7f37", fontcolor="#1a7f37"];
  n2 -> n1 [label="5432/tcp", color="#cf222e", fontcolor="#cf222e", style=dashed];
  n1 -> n2 [label="+80/tcp -443/tcp", color="#9a6700", fontcolor="#9a6700"];
}
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

// svgDoc is the part of our SVG a reader looks for.
type svgDoc struct {
	XMLName xml.Name `xml:"svg"`
	Title   string   `xml:"title"`
	Groups  []struct {
		Class string `xml:"class,attr"`
		ID    string `xml:"id,attr"`
		Title string `xml:"title"`
		Path  struct {
			Stroke string `xml:"stroke,attr"`
			Dash   string `xml:"stroke-dasharray,attr"`
			Start  string `xml:"marker-start,attr"`
			Marker string `xml:"marker-end,attr"`
		} `xml:"path"`
		Texts []string `xml:"text"`
	} `xml:"g"`
	Texts []string `xml:"text"`
}

func decodeSVG(t *testing.T, svg []byte) svgDoc {
	t.Helper()
	var doc svgDoc
	dec := xml.NewDecoder(bytes.NewReader(svg))
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("not well-formed XML: %v\n%s", err, svg)
	}
	// Decode stops at the root's end; the rest must be whitespace.
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("after </svg>: %v", err)
		}
		if cd, ok := tok.(xml.CharData); !ok || len(bytes.TrimSpace(cd)) > 0 {
			t.Fatalf("content after </svg>: %v", tok)
		}
	}
	return doc
}

func TestWriteSVG(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSVG(&b, tiny()); err != nil {
		t.Fatal(err)
	}
	doc := decodeSVG(t, b.Bytes())
	if doc.Title != `shop "after"` {
		t.Errorf("title %q", doc.Title)
	}
	type group struct{ class, id, title, stroke, dash, start, end string }
	var got []group
	for _, g := range doc.Groups {
		got = append(got, group{g.Class, g.ID, g.Title, g.Path.Stroke, g.Path.Dash, g.Path.Start, g.Path.Marker})
	}
	want := []group{
		{"namespace", "", "namespace data", "", "", "", ""},
		{"namespace", "", "namespace shop", "", "", "", ""},
		{"edge same", "e0", "shop/{web-0,web-1} <-> data/db: 5432/tcp", "#57606a", "", "url(#arrow-same-start)", "url(#arrow-same)"},
		{"edge same", "e1", "shop/{web-0,web-1} -> shop/{web-0,web-1}: 8080/tcp", "#57606a", "", "", "url(#arrow-same)"},
		{"edge added", "e2", "added shop/batch -> shop/{web-0,web-1}: 8080/tcp", "#1a7f37", "", "", "url(#arrow-added)"},
		{"edge removed", "e3", "removed shop/batch -> data/db: 5432/tcp", "#cf222e", "6 4", "", "url(#arrow-removed)"},
		{"edge changed", "e4", "changed data/db -> shop/batch: +80/tcp -443/tcp", "#9a6700", "", "", "url(#arrow-changed)"},
		{"node", "n0", "shop: web-0, web-1", "", "", "", ""},
		{"node", "n1", "data: db", "", "", "", ""},
		{"node", "n2", "shop: batch", "", "", "", ""},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("groups:\n got %v\nwant %v", got, want)
	}
	if n0 := doc.Groups[7].Texts; fmt.Sprint(n0) != "[web-0 web-1]" {
		t.Errorf("node n0 lines: %q", n0)
	}
	// Top-level texts: title, four legend entries, then the five edge labels.
	wantTexts := []string{`shop "after"`, "allowed", "added (allowed in NEW only)", "removed (allowed in OLD only)",
		"changed (+ ports gained, - lost)", "5432/tcp", "8080/tcp", "8080/tcp", "5432/tcp", "+80/tcp -443/tcp"}
	if fmt.Sprint(doc.Texts) != fmt.Sprint(wantTexts) {
		t.Errorf("texts:\n got %q\nwant %q", doc.Texts, wantTexts)
	}
	// Equal graphs give equal bytes.
	var again bytes.Buffer
	WriteSVG(&again, tiny())
	if again.String() != b.String() {
		t.Error("two renderings of one graph differ")
	}
}

func TestWriteSVGLegendForMatrix(t *testing.T) {
	g := &Graph{Title: "m", Nodes: []Node{{Namespace: "a", Pods: []string{"x"}}, {Namespace: "b", Pods: []string{"y"}}},
		Edges: []Edge{{From: 0, To: 1, Label: "80/tcp"}}}
	var b bytes.Buffer
	if err := WriteSVG(&b, g); err != nil {
		t.Fatal(err)
	}
	doc := decodeSVG(t, b.Bytes())
	if want := "[m allowed, on the ports shown 80/tcp]"; fmt.Sprint(doc.Texts) != want {
		t.Errorf("texts %q, want %s", doc.Texts, want)
	}
}

func TestNodeNames(t *testing.T) {
	cases := []struct {
		pods  []string
		name  string
		lines string
	}{
		{[]string{"a"}, "ns/a", "[a]"},
		{[]string{"a", "b", "c"}, "ns/{a,b,c}", "[a b c]"},
		{[]string{"a", "b", "c", "d"}, "ns/{a,b,+2 more}", "[a b c d]"},
		{[]string{"a", "b", "c", "d", "e"}, "ns/{a,b,+3 more}", "[a b c +2 more]"},
	}
	for _, c := range cases {
		n := Node{Namespace: "ns", Pods: c.pods}
		if n.Name() != c.name || fmt.Sprint(n.lines()) != c.lines {
			t.Errorf("%v: name %q lines %v; want %q %s", c.pods, n.Name(), n.lines(), c.name, c.lines)
		}
	}
}

// TestLimit: a graph too big to read is cut, the cut said, and the
// picture stays well-formed.
func TestLimit(t *testing.T) {
	g := &Graph{Title: "big"}
	for i := range 100 {
		g.Nodes = append(g.Nodes, Node{Namespace: fmt.Sprintf("ns-%02d", i/4), Pods: []string{fmt.Sprintf("p%d", i)}})
	}
	for i := range 100 {
		for j := range 10 {
			g.Edges = append(g.Edges, Edge{From: i, To: (i + j*7) % 100, Label: "80/tcp"})
		}
	}
	small, note := g.Limit(MaxNodes, MaxEdges)
	if len(small.Nodes) != 80 || len(small.Edges) != 400 {
		t.Errorf("limited to %d nodes, %d edges; want 80, 400", len(small.Nodes), len(small.Edges))
	}
	if want := "showing 80 of 100 nodes and 400 of 1000 edges; narrow the input for the rest"; note != want {
		t.Errorf("note %q, want %q", note, want)
	}
	if same, note := small.Limit(MaxNodes, MaxEdges); same != small || note != "" {
		t.Errorf("a graph within the limits changed: note %q", note)
	}
	var b bytes.Buffer
	if err := WriteSVG(&b, g); err != nil {
		t.Fatal(err)
	}
	doc := decodeSVG(t, b.Bytes())
	edges := 0
	for _, grp := range doc.Groups {
		if strings.HasPrefix(grp.Class, "edge") {
			edges++
		}
	}
	if edges != 400 || !strings.Contains(b.String(), "showing 80 of 100 nodes") {
		t.Errorf("SVG has %d edges (want 400) or lacks the note", edges)
	}
}

func TestBadEdge(t *testing.T) {
	g := &Graph{Nodes: []Node{{Namespace: "a", Pods: []string{"x"}}}, Edges: []Edge{{From: 0, To: 3}}}
	want := "graph: edge 0 (0 -> 3) names a node out of range (1 nodes)"
	for name, write := range map[string]func(io.Writer, *Graph) error{"dot": WriteDOT, "svg": WriteSVG} {
		if err := write(io.Discard, g); err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", name, err, want)
		}
	}
}
