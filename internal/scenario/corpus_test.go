package scenario

import (
	"strings"
	"testing"
)

// TestCorpus runs every scenario of testdata/scenarios; a mismatch fails with
// the flow, the expectation, the verdict and its trace.
func TestCorpus(t *testing.T) {
	scenarios, err := LoadFiles([]string{"../../testdata/scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	if len(scenarios) == 0 {
		t.Fatal("no scenarios found under testdata/scenarios")
	}
	for _, s := range scenarios {
		t.Run(strings.TrimPrefix(s.File, "../../testdata/scenarios/"), func(t *testing.T) {
			r := Run(s, Options{})
			if !r.Passed() {
				var b strings.Builder
				WriteFailure(&b, r)
				t.Errorf("%s:\n%s", s.Name, b.String())
			}
		})
	}
}

// TestCorpusThroughServices runs the Kubernetes e2e family the way that
// suite probes: every cell to the destination pod's Service (probe.go,
// addrTo: job.PodTo.ServiceIP), with the suite's own tables.
func TestCorpusThroughServices(t *testing.T) {
	scenarios, err := LoadFiles([]string{"../../testdata/scenarios/k8s-e2e"})
	if err != nil {
		t.Fatal(err)
	}
	if len(scenarios) == 0 {
		t.Fatal("no scenarios found under testdata/scenarios/k8s-e2e")
	}
	for _, s := range scenarios {
		t.Run(strings.TrimPrefix(s.File, "../../testdata/scenarios/"), func(t *testing.T) {
			r := Run(s, Options{ThroughServices: true})
			if !r.Passed() {
				var b strings.Builder
				WriteFailure(&b, r)
				t.Errorf("%s:\n%s", s.Name, b.String())
			}
		})
	}
}
