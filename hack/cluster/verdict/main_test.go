package main

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func ev(action, test, output string) string {
	if output == "" {
		return `{"Action":"` + action + `","Test":"` + test + `"}`
	}
	return `{"Action":"` + action + `","Test":"` + test + `","Output":"` + output + `"}`
}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []string
		ok     bool
		row    string
	}{
		{"all pass", []string{
			ev("run", "T/A", ""), ev("pass", "T/A", ""), ev("pass", "T", ""),
		}, true, "| T/A | pass |"},
		{"SCTP probes only", []string{
			ev("output", "T/A", "    helper.go:80: SCTP probe ns/p -> 1.2.3.4:9003 (should connect: true) failed\\n"),
			ev("output", "T/A", "    helper.go:80: SCTP probe ns/p -> 1.2.3.4:9005 (should connect: false) failed\\n"),
			ev("fail", "T/A", ""), ev("fail", "T", ""),
		}, true, "| T/A | failed on SCTP probes only (2), every TCP and UDP probe passed |"},
		{"a TCP probe fails after an SCTP one", []string{
			ev("output", "T/A", "    helper.go:80: SCTP probe ns/p -> 1.2.3.4:9003 (should connect: true) failed\\n"),
			ev("output", "T/A", "        \\tError Trace:\\thelper.go:90\\n"),
			ev("fail", "T/A", ""), ev("fail", "T", ""),
		}, false, "| T/A | failed |"},
		{"a failure without a marker", []string{
			ev("output", "T/A", "    suite.go:134: Error retrieving StatefulSet\\n"),
			ev("fail", "T/A", ""),
		}, false, "| T/A | failed |"},
		{"did not finish", []string{
			ev("run", "T/A", ""), ev("output", "T/A", "starting\\n"),
		}, false, "| T/A | did not finish |"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, _, ok, err := decide(strings.NewReader(strings.Join(tc.events, "\n")))
			if err != nil {
				t.Fatal(err)
			}
			if ok != tc.ok {
				t.Errorf("ok = %t, want %t\n%s", ok, tc.ok, rows)
			}
			if !strings.Contains(rows, tc.row+"\n") {
				t.Errorf("no row %q in\n%s", tc.row, rows)
			}
		})
	}
	if _, _, _, err := decide(strings.NewReader("panic: boom")); err == nil {
		t.Error("a line that is no event passed")
	}
}

func TestAnnotate(t *testing.T) {
	path := t.TempDir() + "/report.yaml"
	report := `apiVersion: policy.networking.k8s.io/v1alpha1
kind: ConformanceReport
profiles:
- name: ClusterNetworkPolicy
  standard:
    result: failure
    failedTests: [CNPAdminTierGress, CNPAdminTierIngressSCTP]
    summary: "2 tests failed"
  experimental:
    result: success
    summary: ""
`
	if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := annotate(path, []string{"CNPAdminTierIngressSCTP/a", "CNPAdminTierGress/b", "CNPAdminTierGress/c"}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Kind     string
		Profiles []struct {
			Standard, Experimental struct{ Summary string }
		}
	}
	if err := yaml.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Kind != "ConformanceReport" || len(got.Profiles) != 1 {
		t.Fatalf("report changed shape:\n%s", b)
	}
	p := got.Profiles[0]
	sum := p.Standard.Summary
	if !strings.Contains(sum, "Environment limit: this kernel is built without SCTP sockets") ||
		!strings.Contains(sum, "every TCP and UDP probe of theirs passed: CNPAdminTierGress (2), CNPAdminTierIngressSCTP (1).") {
		t.Errorf("summary %q", sum)
	}
	// A channel with no failed tests gets no note.
	if p.Experimental.Summary != "" {
		t.Errorf("experimental summary %q, want it untouched", p.Experimental.Summary)
	}
	if !strings.HasPrefix(p.Standard.Summary, "2 tests failed Environment limit") {
		t.Errorf("the suite's own summary was not kept: %q", p.Standard.Summary)
	}
}
