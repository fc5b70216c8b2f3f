package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/lint"
)

// lintCluster is the cli_test cluster, whose web-ingress admits only
// app=frontend pods, of which there are none (two warnings), with a
// redundant rule (info) and no error.
const lintCluster = cluster + `---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: batch-ingress, namespace: shop}
spec:
  podSelector: {matchLabels: {app: batch}}
  ingress: [{from: [{podSelector: {}}]}, {from: [{podSelector: {matchLabels: {app: web}}}]}]
`

func TestLintExitCodes(t *testing.T) {
	cases := []struct {
		stdin string
		args  []string
		code  int
	}{
		{lintCluster, []string{"lint", "-f", "-"}, 0},                         // warnings only; default --fail-on error
		{lintCluster, []string{"lint", "-f", "-", "--fail-on", "warning"}, 1}, // the peer app=frontend selects nothing
		{lintCluster, []string{"lint", "-f", "-", "--fail-on", "none"}, 0},
		{lintCluster, []string{"lint", "-f", "-", "--fail-on", "fatal"}, 2},
		{lintCluster, []string{"lint", "-f", "-", "-o", "xml"}, 2},
		{"kind: Pod\nmetadata: {name: x}\nspec: 7\n", []string{"lint", "-f", "-"}, 2},
	}
	for _, c := range cases {
		code, _, stderr := run(t, c.stdin, c.args...)
		if code != c.code {
			t.Errorf("%v: exit %d, want %d; stderr: %s", c.args, code, c.code, stderr)
		}
	}
}

func TestLintText(t *testing.T) {
	_, out, _ := run(t, lintCluster, "lint", "-f", "-")
	want := `NetworkPolicy shop/batch-ingress in - (document 5)
  info    rule-shadowed: spec.ingress[1]: adds nothing: ingress[0] already allows all 5 flows this rule matches (e.g. shop/web -> shop/batch on 8080/tcp)
          hint: drop the rule, or widen it if it was meant to allow more

NetworkPolicy shop/web-ingress in - (document 4)
  warning isolated-allows-nothing: spec.ingress: isolates 1 pod (shop/web) for ingress and its 1 ingress rule matches no pod in the state: all ingress traffic of these pods is denied unless an admin policy allows it
          hint: the rules' selectors or ports match nothing: check them against the pods' labels and ports
  warning selects-nothing: spec.ingress[0].from[0]: peer selects no pod: no pod with labels "app=frontend" in 1 namespace (shop); this peer matches nothing
          hint: check the labels against the pods and namespaces (kubectl get pods,namespaces -A --show-labels)

3 findings: 0 errors, 2 warnings, 1 info
`
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}

func TestLintJSON(t *testing.T) {
	code, out, stderr := run(t, lintCluster, "lint", "-f", "-", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	type example struct {
		From, To, Protocol string
		Port               int
	}
	var v struct {
		Findings []struct {
			Severity, Code, Field, Hint, File string
			Document                          int
			Object                            struct{ Kind, Namespace, Name string }
			Example                           *example
		}
		Summary map[string]int
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(v.Findings) != 3 || v.Summary["error"] != 0 || v.Summary["warning"] != 2 || v.Summary["info"] != 1 {
		t.Fatalf("findings/summary: %s", out)
	}
	f := v.Findings[0]
	if f.Severity != "info" || f.Code != "rule-shadowed" || f.Object.Kind != "NetworkPolicy" || f.Object.Namespace != "shop" ||
		f.Object.Name != "batch-ingress" || f.Field != "spec.ingress[1]" || f.File != "-" || f.Document != 5 || f.Hint == "" {
		t.Errorf("first finding: %+v", f)
	}
	if f.Example == nil || *f.Example != (example{From: "shop/web", To: "shop/batch", Protocol: "TCP", Port: 8080}) {
		t.Errorf("example: %+v", f.Example)
	}
	if g := v.Findings[2]; g.Severity != "warning" || g.Code != "selects-nothing" || g.Field != "spec.ingress[0].from[0]" || g.Example != nil {
		t.Errorf("third finding: %+v", g)
	}
}

func TestLintSARIF(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(file, []byte(lintCluster), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, "", "lint", "-f", file, "-o", "sarif", "--fail-on", "warning")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, stderr)
	}
	var v struct {
		Version string
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name  string
					Rules []struct {
						ID               string
						ShortDescription struct{ Text string }
						Help             struct{ Text string }
					}
				}
			}
			Results []struct {
				RuleID    string
				RuleIndex int
				Level     string
				Message   struct{ Text string }
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
					}
					LogicalLocations []struct{ FullyQualifiedName string }
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if v.Version != "2.1.0" || len(v.Runs) != 1 || v.Runs[0].Tool.Driver.Name != "netpol" || len(v.Runs[0].Tool.Driver.Rules) != 19 { // the 19 codes of lint.go
		t.Fatalf("shape: %s", out)
	}
	rules := v.Runs[0].Tool.Driver.Rules
	results := v.Runs[0].Results
	if len(results) != 3 {
		t.Fatalf("want 3 results, got %d", len(results))
	}
	if results[0].RuleID != "rule-shadowed" || results[0].Level != "note" {
		t.Errorf("info is a SARIF note: %+v", results[0])
	}
	r := results[2]
	if r.RuleID != "selects-nothing" || r.Level != "warning" || rules[r.RuleIndex].ID != r.RuleID || rules[r.RuleIndex].Help.Text == "" ||
		rules[r.RuleIndex].ShortDescription.Text == "" {
		t.Errorf("result: %+v", r)
	}
	loc := r.Locations[0]
	if loc.PhysicalLocation.ArtifactLocation.URI != "file://"+filepath.ToSlash(file) ||
		loc.LogicalLocations[0].FullyQualifiedName != "NetworkPolicy shop/web-ingress spec.ingress[0].from[0]" {
		t.Errorf("location: %+v", loc)
	}
	if !strings.Contains(r.Message.Text, "Hint: ") {
		t.Errorf("message has no hint: %s", r.Message.Text)
	}
}

// TestLintUnknownFieldInAdminPolicy: lint reports an unknown field of an
// admin policy as an error finding (exit 1 under the default --fail-on).
func TestLintUnknownFieldInAdminPolicy(t *testing.T) {
	file := writeInput(t, portTypo)
	code, out, stderr := run(t, "", "lint", "-f", file)
	want := "AdminNetworkPolicy dns-only in " + file + " (document 5)\n" +
		"  error   unknown-field: spec.egress[0].port: unknown field: kubectl's strict field validation refuses it, and without it the policy may match other traffic than written (--lenient drops it with a warning)\n" +
		"          hint: fix the spelling: kubectl explain adminnetworkpolicy.spec lists the fields\n"
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 1 and:\n%s", code, out, stderr, want)
	}
}

// TestLintSummarySpellsCounts: the summary of the bundled example has one
// error, which it spelt "1 errors".
func TestLintSummarySpellsCounts(t *testing.T) {
	_, out, _ := run(t, "", "lint", "-f", "../../examples/lint")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got, want := lines[len(lines)-1], "14 findings: 1 error, 11 warnings, 2 info"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

// exposedCluster: shop/web admits 0.0.0.0/0, which lint reports as
// exposed-to-all.
const exposedCluster = `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c, ports: [{containerPort: 80}]}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{ipBlock: {cidr: 0.0.0.0/0}}]}]
`

// TestLintSARIFRulesAreTheCodes: every SARIF result's ruleIndex points at
// the rule of its own code. exposed-to-all was missing from the registry,
// so its results pointed at rule 0, admin-priority-overlap.
func TestLintSARIFRulesAreTheCodes(t *testing.T) {
	_, out, stderr := run(t, exposedCluster, "lint", "-f", "-", "-o", "sarif")
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct{ ID string }
				}
			}
			Results []struct {
				RuleID    string
				RuleIndex int
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil || len(log.Runs) != 1 {
		t.Fatalf("not one SARIF run: %v\n%s%s", err, out, stderr)
	}
	r := log.Runs[0]
	codes := map[string]bool{}
	for _, res := range r.Results {
		codes[res.RuleID] = true
		if res.RuleIndex >= len(r.Tool.Driver.Rules) || r.Tool.Driver.Rules[res.RuleIndex].ID != res.RuleID {
			t.Errorf("result %s points at rule %d", res.RuleID, res.RuleIndex)
		}
	}
	if !codes[lint.CodeExposed] {
		t.Errorf("no %s finding, so the check says nothing: %v", lint.CodeExposed, codes)
	}
}

// TestLintHelpListsEveryCode: --help lists every code of the registry.
func TestLintHelpListsEveryCode(t *testing.T) {
	_, out, _ := run(t, "", "lint", "--help")
	for _, r := range lint.Rules {
		if !strings.Contains(out, "\n  "+r.Code+" ") {
			t.Errorf("lint --help does not list %s", r.Code)
		}
	}
}
