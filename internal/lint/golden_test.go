package lint

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/golden"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/scenario"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// The golden files pin every finding (message, hint, example, related
// places) on inputs of every shape: the examples, two synthetic clusters,
// every step of the scenario corpus and a few hundred small random
// clusters. They were written by the pair-by-pair implementation of lint
// (one flow per pair of behaviour classes and port) before lint learnt to
// group pairs, and reviewed by reading the findings of the examples and of
// a sample of the others; a change to them must be one a reader would
// want.
func TestGolden(t *testing.T) {
	t.Run("examples", func(t *testing.T) {
		var b strings.Builder
		for _, dir := range []string{"lint", "tenants", "services", "cluster-network-policy", "diff/old", "diff/new"} {
			e, diags := loadPaths(t, "../../examples/"+dir)
			writeFindings(&b, "examples/"+dir, Run(e, diags, Options{}))
		}
		golden.Check(t, "examples.txt", b.String())
	})
	for _, name := range []string{"small", "medium"} {
		t.Run("synth-"+name, func(t *testing.T) {
			e, diags := loadPaths(t, "../../testdata/synth/"+name+".yaml")
			var b strings.Builder
			writeFindings(&b, "testdata/synth/"+name+".yaml", Run(e, diags, Options{}))
			golden.Check(t, "synth-"+name+".txt", b.String())
		})
	}
	t.Run("corpus", func(t *testing.T) {
		var b strings.Builder
		for _, step := range corpusSteps(t) {
			writeFindings(&b, step.name, Run(step.e, nil, Options{}))
		}
		golden.Check(t, "corpus.txt", b.String())
	})
	t.Run("random", func(t *testing.T) {
		var b strings.Builder
		for seed := int64(0); seed < randomSeeds; seed++ {
			e, diags := loadYAML(t, synth.Random(seed, 0))
			writeFindings(&b, fmt.Sprintf("seed %d", seed), Run(e, diags, Options{}))
		}
		golden.Check(t, "random.txt", b.String())
	})
}

const randomSeeds = 200

type corpusStep struct {
	name string
	e    *engine.Engine
}

// corpusSteps builds the engine of every step of every scenario.
func corpusSteps(t *testing.T) []corpusStep {
	t.Helper()
	scenarios, err := scenario.LoadFiles([]string{"../../testdata/scenarios"})
	if err != nil {
		t.Fatal(err)
	}
	var out []corpusStep
	for _, s := range scenarios {
		r := scenario.Run(s, scenario.Options{AfterStep: func(st scenario.StepState) error {
			out = append(out, corpusStep{name: fmt.Sprintf("%s step %d", strings.TrimPrefix(st.File, "../../testdata/scenarios/"), st.Index+1), e: st.Engine})
			return nil
		}})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	return out
}

// loadPaths reads manifests as the lint command does: leniently, so that
// unknown fields are lint's to report.
func loadPaths(t *testing.T, paths ...string) (*engine.Engine, diag.List) {
	t.Helper()
	dec := &source.Decoder{Options: source.Options{Lenient: true}}
	objects, err := dec.Load(paths, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	e, diags, err := pipeline.Build(objects, dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e, diags
}

func loadYAML(t testing.TB, yaml string) (*engine.Engine, diag.List) {
	t.Helper()
	dec := &source.Decoder{Options: source.Options{Lenient: true}}
	objects := dec.Decode("random.yaml", []byte(yaml))
	e, diags, err := pipeline.Build(objects, dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e, diags
}

// writeFindings writes every field of every finding, one finding a line.
func writeFindings(b *strings.Builder, title string, fs []Finding) {
	fmt.Fprintf(b, "== %s: %d findings\n", title, len(fs))
	for _, f := range fs {
		fmt.Fprintf(b, "%s %s %s %s", f.Severity, f.Code, f.Object, f.Field)
		if o := f.Origin.String(); o != "" {
			fmt.Fprintf(b, " (%s)", o)
		}
		fmt.Fprintf(b, "\n  %s\n", f.Message)
		if f.Hint != "" && !fixedHint[f.Code] {
			fmt.Fprintf(b, "  hint: %s\n", f.Hint)
		}
		if f.Example != nil {
			fmt.Fprintf(b, "  example: %s\n", f.Example)
		}
		for _, r := range f.Related {
			fmt.Fprintf(b, "  related: %s\n", r)
		}
	}
}

// fixedHint are the codes whose hint follows from the other fields (the
// code, the severity, the direction in the field): left out, the golden
// files are a third shorter.
var fixedHint = map[string]bool{CodeSelectsNothing: true, CodeDNSBlocked: true, CodeIsolatedNoAllow: true, CodeRuleShadowed: true,
	CodeAdminOverridesNP: true, CodeDomainNames: true, CodeClusterIPBlock: true, CodeUnknownField: true, CodeInput: true, CodeNoPods: true}
