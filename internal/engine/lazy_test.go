package engine_test

import (
	"math/rand"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/state"
	"github.com/netpol/netpol/internal/synth"
)

// TestLazyAgreesWithNew holds NewLazy's engine to New's on the random
// clusters of TestExplainMatrixAgree: the same verdict and trace for every
// pod pair and port, the same applicable policies and the same
// equal-priority warnings; first with nothing resolved, then again after
// Stats resolved every selector, whose counts must be New's too.
func TestLazyAgreesWithNew(t *testing.T) {
	seeds := int64(200)
	if testing.Short() {
		seeds = 30
	}
	for seed := int64(1); seed <= seeds; seed++ {
		_, _, c, set := agreeCluster(t, seed)
		for _, legacy := range []bool{false, true} {
			opts := engine.Options{LegacyNamespaceIsolation: legacy}
			eager, lazy := engine.New(c, set, opts), engine.NewLazy(c, set, opts)
			if got, want := lazy.PriorityOverlaps(), eager.PriorityOverlaps(); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d: PriorityOverlaps %v, New's %v", seed, got, want)
			}
			for round := range 2 {
				if round == 1 {
					if got, want := lazy.Stats(), eager.Stats(); got != want {
						t.Fatalf("seed %d: Stats %+v, New's %+v", seed, got, want)
					}
				}
				agreeOn(t, seed, c.Pods, eager, lazy, agreePorts)
				if round == 0 && lazy.Resolved() {
					t.Fatalf("seed %d: deciding every pair resolved every selector: the lazy path was not the one compared", seed)
				}
			}
		}
	}
}

// TestLazyAgreesWithNewSynth is TestLazyAgreesWithNew on the 10k-pod
// synthetic cluster, on sampled pod pairs: large enough for every scope of
// selector, for subjects shared by many policies and for admin policies of
// equal priority.
func TestLazyAgreesWithNewSynth(t *testing.T) {
	objs := synth.Cluster(synth.Size10k)
	c, diags := state.Build(objs, state.Options{})
	set, more := policy.Normalize(c.Policies)
	if err := append(diags, more...).Err(); err != nil {
		t.Fatal(err)
	}
	eager, lazy := engine.New(c, set, engine.Options{}), engine.NewLazy(c, set, engine.Options{})
	if got, want := lazy.PriorityOverlaps(), eager.PriorityOverlaps(); !reflect.DeepEqual(got, want) || len(want) == 0 {
		t.Fatalf("PriorityOverlaps: %d warnings, New's %d (want some)", len(got), len(want))
	}
	r := rand.New(rand.NewSource(1))
	var pods []*state.Pod
	for range 60 {
		pods = append(pods, c.Pods[r.Intn(len(c.Pods))])
	}
	ports := []l4.Port{{Proto: l4.TCP, Num: 80}, {Proto: l4.UDP, Num: 53}, {Proto: l4.TCP, Num: 8080}}
	agreeOn(t, 0, pods, eager, lazy, ports)
}

// agreeOn compares two engines over the pairs of pods and ports.
func agreeOn(t *testing.T, seed int64, pods []*state.Pod, eager, lazy *engine.Engine, ports []l4.Port) {
	t.Helper()
	for _, p := range pods {
		if got, want := lazy.Applicable(p), eager.Applicable(p); !slices.Equal(got, want) {
			t.Fatalf("seed %d: %s: %d applicable policies, New's %d", seed, p.Key(), len(got), len(want))
		}
	}
	for _, e := range [][2]*engine.Engine{{eager, lazy}, {eager.Staged(), lazy.Staged()}} {
		if (e[0] == nil) != (e[1] == nil) {
			t.Fatalf("seed %d: staged engines %v and %v", seed, e[0] != nil, e[1] != nil)
		}
		if e[0] == nil {
			continue
		}
		for _, s := range pods {
			src, err := e[0].Endpoint(s.Key())
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range pods {
				dst, err := e[0].Endpoint(d.Key())
				if err != nil {
					t.Fatal(err)
				}
				for _, port := range ports {
					f, err := e[0].NewFlow(src, dst, l4.PortSpec{Num: port.Num, Proto: port.Proto})
					if err != nil {
						t.Fatal(err)
					}
					if got, want := e[1].Decide(f), e[0].Decide(f); !reflect.DeepEqual(got, want) {
						t.Fatalf("seed %d: %s -> %s %s: lazily %+v, New %+v", seed, s.Key(), d.Key(), port, got, want)
					}
				}
			}
		}
	}
}

// TestLazyConcurrent decides flows on NewLazy's engine from several
// goroutines while another resolves its selectors (Stats), as a front end
// may: every verdict is New's (run with -race to check the hand-over).
func TestLazyConcurrent(t *testing.T) {
	objs := synth.Cluster(synth.Size1k)
	c, _ := state.Build(objs, state.Options{})
	set, _ := policy.Normalize(c.Policies)
	eager, lazy := engine.New(c, set, engine.Options{}), engine.NewLazy(c, set, engine.Options{})
	var flows []engine.Flow
	r := rand.New(rand.NewSource(2))
	for range 200 {
		src, _ := eager.Endpoint(c.Pods[r.Intn(len(c.Pods))].Key())
		dst, _ := eager.Endpoint(c.Pods[r.Intn(len(c.Pods))].Key())
		f, err := eager.NewFlow(src, dst, l4.PortSpec{Num: 80, Proto: l4.TCP})
		if err != nil {
			t.Fatal(err)
		}
		flows = append(flows, f)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 4*len(flows))
	for w := range 4 {
		wg.Go(func() {
			if w == 0 {
				lazy.Stats()
			}
			for _, f := range flows {
				if got, want := lazy.Decide(f), eager.Decide(f); !reflect.DeepEqual(got, want) {
					errs <- f.Src.String() + " -> " + f.Dst.String()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("%s: lazily decided otherwise than New", e)
	}
}

// TestLazyTierKeysAreShared: a lazy engine's tier keys name shared lists,
// as an eager engine's do: two pods that the same policies select have
// equal keys, asked first thing (no ProgramKey before).
func TestLazyTierKeysAreShared(t *testing.T) {
	objs := synth.Cluster(synth.Size1k)
	c, diags := state.Build(objs, state.Options{})
	set, more := policy.Normalize(c.Policies)
	if err := append(diags, more...).Err(); err != nil {
		t.Fatal(err)
	}
	for name, e := range map[string]*engine.Engine{"eager": engine.New(c, set, engine.Options{}), "lazy": engine.NewLazy(c, set, engine.Options{})} {
		// The admin tier of one pod asked twice is one key.
		p := c.Pods[0]
		if a, b := e.ProgramTierKey(p, policy.Ingress, 0), e.ProgramTierKey(p, policy.Ingress, 0); a != b {
			t.Errorf("%s: the same pod's admin tier has two keys", name)
		}
	}
}
