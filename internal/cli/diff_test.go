package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	oldDir = "../../examples/diff/old"
	newDir = "../../examples/diff/new"
)

// TestDiffText: the whole text output of the example pull request (see
// internal/diff's TestExample for how each line follows from the policies).
func TestDiffText(t *testing.T) {
	code, out, stderr := run(t, "", "diff", oldDir, newDir)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (changes): %s", code, stderr)
	}
	want := `1 gained, 8 lost, 5 changed, over 21 pod pairs

monitoring -> payments
  - prometheus-0 -> api-0     any/tcp except 9090, any/udp, any/sctp
  + prometheus-0 -> ledger-0  9090/tcp

monitoring -> shop
  ~ prometheus-0 -> web-0, web-1  +8443/tcp  -8080/tcp

payments -> monitoring
  - api-0 -> prometheus-0     all ports
  - ledger-0 -> prometheus-0  all ports

payments -> payments
  - ledger-0 -> api-0  all ports

payments -> shop
  ~ api-0 -> web-0, web-1     +8443/tcp  -8080/tcp
  ~ ledger-0 -> web-0, web-1  +8443/tcp  -8080/tcp

shop -> monitoring
  - batch-0 -> prometheus-0       all ports
  - web-0, web-1 -> prometheus-0  all ports

shop -> payments
  - batch-0 -> api-0       all ports
  - web-0, web-1 -> api-0  any/tcp except 8443, any/udp, any/sctp

shop -> shop
  ~ batch-0 -> web-0, web-1       +8443/tcp  -8080/tcp
  ~ web-0, web-1 -> web-0, web-1  +8443/tcp  -8080/tcp
`
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}

func TestDiffExplainText(t *testing.T) {
	code, out, _ := run(t, "", "diff", oldDir, newDir, "--explain")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	// With explanations between them, entries are not aligned.
	want := `payments -> monitoring
  - api-0 -> prometheus-0  all ports
      lost all ports, e.g. payments/api-0 -> monitoring/prometheus-0 1/tcp
        old: allowed; egress: Default: Allow (nothing denied it); ingress: Default: Allow (nothing denied it)
        new: denied; egress: Default: Allow (nothing denied it); ingress: AdminNetworkPolicy monitoring-closed rule deny-all-ingress: Deny
`
	if !strings.Contains(out, want) {
		t.Errorf("output lacks:\n%s\ngot:\n%s", want, out)
	}
}

func TestDiffFormats(t *testing.T) {
	cases := []struct {
		args []string
		want []string // literal snippets
	}{
		{[]string{"-o", "csv"}, []string{
			"from_namespace,from,to_namespace,to,change,protocol,port,end_port\n",
			"monitoring,prometheus-0,payments,api-0,lost,TCP,1,9089\nmonitoring,prometheus-0,payments,api-0,lost,TCP,9091,65535\n",
			"monitoring,prometheus-0,payments,ledger-0,gained,TCP,9090,9090\n",
			"shop,web-0 web-1,shop,web-0 web-1,gained,TCP,8443,8443\nshop,web-0 web-1,shop,web-0 web-1,lost,TCP,8080,8080\n",
		}},
		{[]string{"-o", "csv", "--explain"}, []string{
			"from_namespace,from,to_namespace,to,change,protocol,port,end_port,old,new\n",
			// A field with a comma is quoted.
			`payments,ledger-0,payments,api-0,lost,SCTP,1,65535,allowed; egress: Default: Allow (nothing denied it); ingress: NetworkPolicy payments/api-ingress rule ingress[0]: Allow,"denied; egress: Default: Allow (nothing denied it); ingress: NetworkPolicy: isolated by NetworkPolicy payments/api-ingress, no rule allows it: Deny"` + "\n",
		}},
		{[]string{"-o", "md"}, []string{
			"### netpol diff: 1 gained, 8 lost, 5 changed, over 21 pod pairs\n",
			"#### shop → payments\n\n| change | from | to | ports |\n|---|---|---|---|\n| **−** lost | batch-0 | api-0 | all ports |\n| **−** lost | web-0, web-1 | api-0 | any/tcp except 8443, any/udp, any/sctp |\n",
		}},
		{[]string{"-o", "md", "--explain"}, []string{
			"| **+** gained | prometheus-0 | ledger-0 | 9090/tcp |\n\n<details><summary>why</summary>\n\n",
			"- gained 9090/tcp, e.g. `monitoring/prometheus-0` → `payments/ledger-0` 9090/tcp\n" +
				"  - old: denied; egress: Default: Allow (nothing denied it); ingress: NetworkPolicy: isolated by NetworkPolicy payments/ledger-ingress, no rule allows it: Deny\n" +
				"  - new: allowed; egress: Default: Allow (nothing denied it); ingress: NetworkPolicy payments/ledger-ingress rule ingress\\[1\\]: Allow\n\n</details>\n",
		}},
		{[]string{"-o", "dot"}, []string{
			`digraph "netpol diff: 1 gained, 8 lost, 5 changed, over 21 pod pairs" {`,
			"  subgraph cluster_0 {\n    label=\"monitoring\";\n    n0 [label=\"prometheus-0\"];\n  }\n",
			"  n0 -> n2 [label=\"9090/tcp\", color=\"#1a7f37\", fontcolor=\"#1a7f37\"];\n",
			"  n0 -> n3 [label=\"+8443/tcp -8080/tcp\", color=\"#9a6700\", fontcolor=\"#9a6700\"];\n",
		}},
	}
	for _, c := range cases {
		code, out, stderr := run(t, "", append([]string{"diff", oldDir, newDir}, c.args...)...)
		if code != 1 {
			t.Errorf("%v: exit %d: %s", c.args, code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", c.args, w, out)
			}
		}
	}
}

func TestDiffJSON(t *testing.T) {
	code, out, _ := run(t, "", "diff", oldDir, newDir, "-o", "json", "--explain")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	var v struct {
		Summary struct{ Gained, Lost, Changed, PodPairs int }
		Groups  []struct {
			FromNamespace, ToNamespace string
			Entries                    []struct {
				From, To     []string
				Change       string
				Gained, Lost []struct {
					Protocol      string
					Port, EndPort int
				}
				Explain []struct {
					Change string
					Old    struct{ Allowed bool }
					New    struct {
						Allowed bool
						Ingress struct {
							Steps []struct{ Tier, Action string }
						}
					}
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if s := v.Summary; s.Gained != 1 || s.Lost != 8 || s.Changed != 5 || s.PodPairs != 21 {
		t.Errorf("summary %+v", s)
	}
	g := v.Groups[0]
	e := g.Entries[1]
	if g.FromNamespace != "monitoring" || g.ToNamespace != "payments" || e.From[0] != "prometheus-0" || e.To[0] != "ledger-0" ||
		e.Change != "gained" || len(e.Gained) != 1 || e.Gained[0].Protocol != "TCP" || e.Gained[0].Port != 9090 || e.Gained[0].EndPort != 0 {
		t.Errorf("entry: %s -> %s %+v", g.FromNamespace, g.ToNamespace, e)
	}
	x := e.Explain[0]
	if x.Change != "gained" || x.Old.Allowed || !x.New.Allowed || x.New.Ingress.Steps[0].Tier != "NetworkPolicy" || x.New.Ingress.Steps[0].Action != "Allow" {
		t.Errorf("explanation %+v", x)
	}
}

// svgTitles decodes an SVG and returns the titles of its nodes and edges.
func svgTitles(t *testing.T, svg string) (nodes, edges []string) {
	t.Helper()
	var doc struct {
		Groups []struct {
			Class string `xml:"class,attr"`
			Title string `xml:"title"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal([]byte(svg), &doc); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	for _, g := range doc.Groups {
		switch {
		case g.Class == "node":
			nodes = append(nodes, g.Title)
		case strings.HasPrefix(g.Class, "edge"):
			edges = append(edges, g.Title)
		}
	}
	return nodes, edges
}

func TestDiffSVG(t *testing.T) {
	code, out, _ := run(t, "", "diff", oldDir, newDir, "-o", "svg")
	if code != 1 {
		t.Fatalf("exit %d", code)
	}
	nodes, edges := svgTitles(t, out)
	if len(nodes) != 5 || len(edges) != 14 {
		t.Errorf("%d nodes, %d edges; want 5, 14:\n%q\n%q", len(nodes), len(edges), nodes, edges)
	}
	for _, want := range []string{
		"added monitoring/prometheus-0 -> payments/ledger-0: 9090/tcp",
		"removed payments/api-0 -> monitoring/prometheus-0: all ports",
		"changed shop/{web-0,web-1} -> shop/{web-0,web-1}: +8443/tcp -8080/tcp",
	} {
		if !strings.Contains(strings.Join(edges, "\n"), want) {
			t.Errorf("no edge %q in %q", want, edges)
		}
	}
}

func TestDiffExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: x, namespace: a}\nspec: {podSelector: {matchLabels: {'a b': c}}}\n"), 0o644)
	cases := []struct {
		args   []string
		stdin  string
		code   int
		stderr string
	}{
		{[]string{"diff", oldDir, oldDir}, "", 0, ""},
		{[]string{"diff", newDir, newDir, "-o", "json"}, "", 0, ""},
		{[]string{"diff", oldDir, newDir}, "", 1, ""},
		{[]string{"diff", "-", newDir}, cluster, 1, ""},
		{[]string{"diff", oldDir, filepath.Join(dir, "missing")}, "", 2, "error: NEW: "},
		{[]string{"diff", oldDir, bad}, "", 2, "error: invalid input:"},
		{[]string{"diff", oldDir}, "", 2, "want OLD and NEW"},
		{[]string{"diff", "-", "-"}, "", 2, "only one side can be read from stdin"},
		{[]string{"diff", "--kubeconfig", filepath.Join(dir, "missing"), newDir}, "", 2, "OLD: no cluster to read"},
		{[]string{"diff", "--context", "prod", oldDir, newDir}, "", 2, "the live cluster is OLD: give NEW only"},
		{[]string{"diff", oldDir, newDir, "-o", "xml"}, "", 2, `unknown output format "xml"`},
	}
	for _, c := range cases {
		code, _, stderr := run(t, c.stdin, c.args...)
		if code != c.code || !strings.Contains(stderr, c.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, c.code, c.stderr)
		}
	}
}

// TestDiffPodsOnOneSide: pods of one side only are named, not compared,
// and still count as a change.
func TestDiffPodsOnOneSide(t *testing.T) {
	dir := t.TempDir()
	grown := filepath.Join(dir, "grown.yaml")
	os.WriteFile(grown, []byte(cluster+`---
apiVersion: v1
kind: Pod
metadata: {name: cron, namespace: shop}
spec: {containers: [{name: c}]}
status: {podIP: 198.18.0.12}
`), 0o644)
	code, out, _ := run(t, cluster, "diff", "-", grown)
	want := "no connectivity changes\n\n1 pod only in NEW (not compared): shop/cron\n"
	if code != 1 || out != want {
		t.Errorf("exit %d, output:\n%s\nwant exit 1 and:\n%s", code, out, want)
	}
}

func TestMatrixGraph(t *testing.T) {
	code, out, stderr := run(t, cluster, "matrix", "-f", "-", "-o", "dot")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// batch reaches web on nothing (web admits only app=frontend), web
	// reaches batch on 8080 (nothing isolates batch).
	want := `digraph "netpol matrix: 2 pods on 8080/tcp" {
  graph [label="netpol matrix: 2 pods on 8080/tcp", labelloc=t, fontname="Helvetica", rankdir=LR];
  node [shape=box, style=rounded, fontname="Helvetica", fontsize=11];
  edge [fontname="Helvetica", fontsize=10];
  subgraph cluster_0 {
    label="shop";
    n0 [label="batch"];
    n1 [label="web"];
  }
  n1 -> n0 [label="8080/tcp"];
}
`
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
	code, out, _ = run(t, "", "matrix", "-f", "../../examples/tenants", "-o", "svg")
	if code != 0 {
		t.Fatalf("svg: exit %d", code)
	}
	nodes, edges := svgTitles(t, out)
	if len(nodes) != 8 {
		t.Errorf("%d nodes, want 8 (one per class and namespace): %q", len(nodes), nodes)
	}
	for _, want := range []string{
		"blue-web/{frontend-0,frontend-1} -> blue-db/postgres-0: 5432/tcp",
		"blue-web/{frontend-0,frontend-1} -> blue-web/{frontend-0,frontend-1}: 8080/tcp",
		"blue-web/reports -> blue-web/{frontend-0,frontend-1}: 8080/tcp",
	} {
		if !strings.Contains(strings.Join(edges, "\n"), want) {
			t.Errorf("no edge %q in %q", want, edges)
		}
	}
	for _, e := range edges {
		if strings.Contains(e, "-> sensitive/") {
			t.Errorf("sensitive is closed to everyone, yet: %s", e)
		}
	}
}

// TestDiffHelp: --help teaches with examples and states the exit codes.
func TestDiffHelp(t *testing.T) {
	var out bytes.Buffer
	Main([]string{"diff", "--help"}, strings.NewReader(""), &out, &out)
	for _, want := range []string{"Examples:", "0 no change, 1 changes", "--explain"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("diff --help lacks %q", want)
		}
	}
}

// TestDocsPictures: the pictures the README shows are what netpol draws
// today. Regenerate them with the commands in docs/README.md.
func TestDocsPictures(t *testing.T) {
	for _, c := range []struct {
		file string
		args []string
	}{
		{"../../docs/tenants-matrix.svg", []string{"matrix", "-f", "../../examples/tenants", "-o", "svg"}},
		{"../../docs/diff-example.svg", []string{"diff", oldDir, newDir, "-o", "svg"}},
	} {
		want, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		_, out, _ := run(t, "", c.args...)
		if out != string(want) {
			t.Errorf("%s is stale: regenerate it with netpol %s", c.file, strings.Join(c.args, " "))
		}
	}
}
