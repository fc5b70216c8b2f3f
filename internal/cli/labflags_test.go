package cli

import (
	"slices"
	"testing"

	"github.com/netpol/netpol/internal/lab"
)

// TestLabKeepsEvaluationFlags: the flags `lab up` was given reach the
// agents (as their arguments) and come back for `lab probe`'s prediction
// and `lab apply`'s check, so a lab never tests another configuration
// than the one asked for.
func TestLabKeepsEvaluationFlags(t *testing.T) {
	up := inputFlags{anpShape: "kep", legacy: true, replicaCap: 3}
	args := up.evalArgs()
	want := []string{"--anp-shape=kep", "--replica-cap=3", "--legacy-namespace-isolation"}
	if !slices.Equal(args, want) {
		t.Fatalf("agent args %q, want %q", args, want)
	}
	in, err := labInput(&lab.Lab{Name: "x", Dir: "/run/netpol/lab/x", AgentArgs: args})
	if err != nil {
		t.Fatal(err)
	}
	if in.anpShape != "kep" || !in.legacy || in.replicaCap != 3 || !slices.Equal(in.files, []string{"/run/netpol/lab/x/manifests"}) {
		t.Errorf("probe input %+v, want kep, legacy, replica cap 3 over the lab's manifests", in)
	}
	// A lab saved before the flags were kept has none: the defaults.
	in, err = labInput(&lab.Lab{Name: "x", Dir: "/d"})
	if err != nil || in.anpShape != "auto" || in.legacy || in.replicaCap != 10 {
		t.Errorf("no flags: %+v %v, want the defaults", in, err)
	}
}
