package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

// inputFlags are the flags of every command that reads a cluster.
type inputFlags struct {
	files      []string
	anpShape   string
	legacy     bool
	replicaCap int
	quiet      bool
}

func (f *inputFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVarP(&f.files, "filename", "f", nil, "manifests to read: files, directories (recursive) or - for stdin; repeatable")
	fl.StringVar(&f.anpShape, "anp-shape", "auto", "AdminNetworkPolicy/BaselineAdminNetworkPolicy peer shape: auto, v0.1.7 (released: namespaces is a label selector) or kep (KEP-2091/v0.1.1: namespaces has namespaceSelector, sameLabels, notSameLabels, related)")
	fl.BoolVar(&f.legacy, "legacy-namespace-isolation", false, "evaluate ingress as the v1beta1 proposal did: the namespace annotation net.beta.kubernetes.io/network-policy {\"ingress\":{\"isolation\":\"DefaultDeny\"}} isolates its pods, and NetworkPolicies isolate nothing for ingress elsewhere")
	fl.IntVar(&f.replicaCap, "replica-cap", state.DefaultReplicaCap, "most pods modelled per workload")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "do not print warnings")
}

// slowLoad is when loading is long enough that a person wonders what took
// the time.
const slowLoad = 2 * time.Second

// load reads the input through source, state and policy into an engine.
// Errors in the input are returned as a diag.InputError (exit 2); warnings
// go to stderr.
func (f *inputFlags) load(cmd *cobra.Command) (*engine.Engine, error) {
	if len(f.files) == 0 {
		return nil, usageError{fmt.Errorf("no input: give manifests with -f FILE|DIR|-")}
	}
	shape, err := source.ParseANPShape(f.anpShape)
	if err != nil {
		return nil, usageError{err}
	}
	start := time.Now()
	dec := &source.Decoder{Options: source.Options{ANPShape: shape}}
	objects, err := dec.Load(f.files, cmd.InOrStdin())
	if err != nil {
		return nil, err
	}
	e, diags, err := pipeline.Build(objects, dec.Diags, pipeline.Options{ReplicaCap: f.replicaCap, LegacyNamespaceIsolation: f.legacy})
	if err != nil {
		f.warn(cmd.ErrOrStderr(), diags)
		return nil, err
	}
	f.warn(cmd.ErrOrStderr(), diags)
	if took := time.Since(start); took > slowLoad && !f.quiet {
		st := e.Stats()
		fmt.Fprintf(cmd.ErrOrStderr(), "netpol: read %d objects (%d pods, %d policies) and resolved %d selectors in %s\n",
			len(objects), len(e.Cluster().Pods), len(e.Cluster().Policies), st.NamespaceSelectors+st.PodSelectors, took.Round(time.Millisecond))
	}
	return e, nil
}

func (f *inputFlags) warn(w io.Writer, diags diag.List) {
	if f.quiet {
		return
	}
	for _, d := range diags.Warnings() {
		fmt.Fprintf(w, "warning: %s\n", d)
	}
}
