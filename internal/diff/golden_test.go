package diff

import (
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/network-policy-api/apis/v1alpha1"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/golden"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/scenario"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// The golden files pin whole results (entries, summaries, Services and the
// explanations) of diffs between inputs of every shape: the example pull
// request both ways, a synthetic cluster against a changed copy of itself,
// every pair of consecutive steps of the scenario corpus, and small random
// clusters against their "pull request" variant. They were written by the
// implementation that decided every pair of joint classes before diff
// learnt to skip the pairs nothing changed for; each input is also
// compared with itself, which must find nothing.
func TestGolden(t *testing.T) {
	t.Run("examples", func(t *testing.T) {
		old, new := loadEngine(t, "../../examples/diff/old"), loadEngine(t, "../../examples/diff/new")
		var b strings.Builder
		writeDiff(t, &b, "examples/diff old -> new", old, new, Options{Explain: true})
		writeDiff(t, &b, "examples/diff new -> old", new, old, Options{Explain: true})
		golden.Check(t, "examples.txt", b.String())
	})
	t.Run("synth", func(t *testing.T) {
		old := loadObjects(t, readObjects(t, "../../testdata/synth/small.yaml"))
		new := loadObjects(t, pullRequest(readObjects(t, "../../testdata/synth/small.yaml")))
		var b strings.Builder
		writeDiff(t, &b, "small -> changed", old, new, Options{})
		writeDiff(t, &b, "changed -> small", new, old, Options{})
		golden.Check(t, "synth.txt", b.String())
	})
	t.Run("corpus", func(t *testing.T) {
		scenarios, err := scenario.LoadFiles([]string{"../../testdata/scenarios"})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, s := range scenarios {
			var prev *engine.Engine
			r := scenario.Run(s, scenario.Options{AfterStep: func(st scenario.StepState) error {
				if prev != nil {
					writeDiff(t, &b, fmt.Sprintf("%s step %d -> %d", strings.TrimPrefix(st.File, "../../testdata/scenarios/"), st.Index, st.Index+1), prev, st.Engine, Options{Explain: true})
				}
				prev = st.Engine
				return nil
			}})
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		golden.Check(t, "corpus.txt", b.String())
	})
	t.Run("random", func(t *testing.T) {
		var b strings.Builder
		for seed := int64(0); seed < 150; seed++ {
			old, new := loadYAML(t, synth.Random(seed, 0)), loadYAML(t, synth.Random(seed, 1))
			writeDiff(t, &b, fmt.Sprintf("seed %d", seed), old, new, Options{})
			writeDiff(t, &b, fmt.Sprintf("seed %d reversed", seed), new, old, Options{})
		}
		golden.Check(t, "random.txt", b.String())
	})
}

// writeDiff writes the diff of old and new (with the explanations when opts
// asks for them: they come from the engine's traces, and are pinned on the
// examples and the corpus only, to keep the files short), and checks that each compared
// with itself finds nothing.
func writeDiff(t *testing.T, b *strings.Builder, title string, old, new *engine.Engine, opts Options) {
	t.Helper()
	for _, e := range []*engine.Engine{old, new} {
		if r := Compare(e, e, Options{}); !r.Empty() || r.Summary.PodPairs != 0 {
			t.Errorf("%s: an input against itself: %v", title, lines(r))
		}
	}
	r := Compare(old, new, opts)
	s := r.Summary
	fmt.Fprintf(b, "== %s: gained %d, lost %d, changed %d, pod pairs %d, classes %d, port segments %d\n",
		title, s.Gained, s.Lost, s.Changed, s.PodPairs, s.Classes, s.PortSegments)
	if len(r.AddedPods) > 0 || len(r.RemovedPods) > 0 {
		fmt.Fprintf(b, "added %v, removed %v\n", r.AddedPods, r.RemovedPods)
	}
	for _, g := range r.Groups {
		for _, e := range g.Entries {
			fmt.Fprintf(b, "%s -> %s: %s -> %s %s", g.From, g.To, strings.Join(e.From, ","), strings.Join(e.To, ","), e.Change)
			for _, p := range e.Gained {
				b.WriteString(" +" + p.String())
			}
			for _, p := range e.Lost {
				b.WriteString(" -" + p.String())
			}
			b.WriteString("\n")
			for _, x := range e.Explain {
				fmt.Fprintf(b, "  %s %s %s -> %s %s\n    old: %s\n    new: %s\n", x.Change, FormatPorts(x.Ports), x.From, x.To, x.Port, Describe(x.Old), Describe(x.New))
			}
		}
	}
	for _, sc := range r.Services {
		fmt.Fprintf(b, "service %s from %s, %s: %s -> %s\n", sc.Service, sc.FromNamespace, sc.Port, sc.Old, sc.New)
	}
}

func loadEngine(t *testing.T, paths ...string) *engine.Engine {
	t.Helper()
	dec := &source.Decoder{}
	objects, err := dec.Load(paths, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	return loadObjects(t, objects)
}

func readObjects(t *testing.T, path string) []source.Object {
	t.Helper()
	dec := &source.Decoder{}
	objects, err := dec.Load([]string{path}, strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	return objects
}

func loadObjects(t testing.TB, objects []source.Object) *engine.Engine {
	t.Helper()
	e, _, err := pipeline.Build(objects, nil, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func loadYAML(t testing.TB, yaml string) *engine.Engine {
	t.Helper()
	dec := &source.Decoder{}
	return loadObjects(t, dec.Decode("random.yaml", []byte(yaml)))
}

// pullRequest changes a synthetic cluster as a pull request might: every
// tenth NetworkPolicy removed, every twentieth pod relabelled to another
// app, every eighth admin policy's first ingress rule turned around, and
// one pod gone.
func pullRequest(objects []source.Object) []source.Object {
	return synth.Change{
		DropNP:  func(n int) bool { return n%10 == 0 },
		DropPod: func(n int) bool { return n == 5 },
		Relabel: func(n int, app string) string {
			if n%20 != 0 {
				return app
			}
			return map[string]string{"db": "cache", "cache": "db"}[app]
		},
		Turn: func(n int, a v1alpha1.AdminNetworkPolicyRuleAction) v1alpha1.AdminNetworkPolicyRuleAction {
			if n%8 != 0 {
				return a
			}
			return map[v1alpha1.AdminNetworkPolicyRuleAction]v1alpha1.AdminNetworkPolicyRuleAction{
				v1alpha1.AdminNetworkPolicyRuleActionAllow: v1alpha1.AdminNetworkPolicyRuleActionDeny,
				v1alpha1.AdminNetworkPolicyRuleActionDeny:  v1alpha1.AdminNetworkPolicyRuleActionPass,
				v1alpha1.AdminNetworkPolicyRuleActionPass:  v1alpha1.AdminNetworkPolicyRuleActionAllow,
			}[a]
		},
	}.Apply(objects)
}
