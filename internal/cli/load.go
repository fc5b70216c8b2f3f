package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/lab"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/source/kube"
	"github.com/netpol/netpol/internal/state"
	"github.com/netpol/netpol/internal/words"
)

// inputFlags are the flags of every command that reads a cluster.
type inputFlags struct {
	files      []string
	kubeconfig string
	context    string
	anpShape   string
	legacy     bool
	replicaCap int
	quiet      bool
	lenient    bool
	// lazy: the command decides a few flows (pipeline.Options.Lazy).
	lazy bool
	// builder, when set, builds the engine instead of a one-shot
	// pipeline.Build, for a command that builds again over the same
	// objects (suggest, with its suggestion added); kept holds them.
	builder *pipeline.Builder
	kept    *objectsRead
}

// objectsRead are the objects an input read, with their decode findings.
type objectsRead struct {
	objects []source.Object
	decoded diag.List
}

func (f *inputFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringSliceVarP(&f.files, "filename", "f", nil, "manifests to read: files, directories (recursive) or - for stdin; repeatable")
	f.registerCluster(cmd, "read a live cluster through this kubeconfig (without -f, the usual kubeconfig is used: $KUBECONFIG, ~/.kube/config or in-cluster)")
}

// registerCluster registers every input flag but -f; kubeconfigHelp says
// what --kubeconfig does for this command.
func (f *inputFlags) registerCluster(cmd *cobra.Command, kubeconfigHelp string) {
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", kubeconfigHelp)
	fl.StringVar(&f.context, "context", "", "the kubeconfig context of the live cluster")
	fl.StringVar(&f.anpShape, "anp-shape", "auto", "AdminNetworkPolicy/BaselineAdminNetworkPolicy peer shape: auto, v0.1.7 (released: namespaces is a label selector) or kep (KEP-2091/v0.1.1: namespaces has namespaceSelector, sameLabels, notSameLabels, related)")
	fl.BoolVar(&f.legacy, "legacy-namespace-isolation", false, "evaluate ingress as the v1beta1 proposal did: the namespace annotation net.beta.kubernetes.io/network-policy {\"ingress\":{\"isolation\":\"DefaultDeny\"}} isolates its pods, and NetworkPolicies isolate nothing for ingress elsewhere")
	fl.IntVar(&f.replicaCap, "replica-cap", state.DefaultReplicaCap, "most pods modelled per workload")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "do not print warnings")
	fl.BoolVar(&f.lenient, "lenient", false, "read a policy (NetworkPolicy, AdminNetworkPolicy, BaselineAdminNetworkPolicy, ClusterNetworkPolicy) with unknown fields (a misspelt ports:) without them, with a warning; by default they are invalid input, as kubectl's strict field validation has them")
}

// slowLoad is when loading is long enough that a person wonders what took
// the time.
const slowLoad = 2 * time.Second

// load reads the input through source, state and policy into an engine.
// Errors in the input are returned as a diag.InputError (exit 2); warnings
// go to stderr.
func (f *inputFlags) load(cmd *cobra.Command) (*engine.Engine, error) {
	e, diags, err := f.build(cmd)
	f.warn(cmd.ErrOrStderr(), diags)
	return e, err
}

// build is load without printing the warnings: it returns every finding
// of the way, for a command that reports them itself.
func (f *inputFlags) build(cmd *cobra.Command) (*engine.Engine, diag.List, error) {
	shape, err := source.ParseANPShape(f.anpShape)
	if err != nil {
		return nil, nil, usageError{err}
	}
	if len(f.files) > 0 && (f.kubeconfig != "" || f.context != "") {
		return nil, nil, usageError{fmt.Errorf("read either manifests (-f) or a cluster (--kubeconfig/--context), not both")}
	}
	e, diags, err := f.buildFrom(cmd, shape, f.files)
	var none noCluster
	if errors.As(err, &none) {
		return nil, nil, usageError{fmt.Errorf("no input: give manifests with -f FILE|DIR|- or a cluster with --kubeconfig/--context (%v)", none.error)}
	}
	return e, diags, err
}

// noCluster is a kubeconfig that could not be found or read: each command
// says which input it wanted instead.
type noCluster struct{ error }

// loadFrom reads the manifests at paths or, when paths is empty, the
// cluster of --kubeconfig/--context; warnings go to stderr.
func (f *inputFlags) loadFrom(cmd *cobra.Command, shape source.ANPShape, paths []string) (*engine.Engine, error) {
	e, diags, err := f.buildFrom(cmd, shape, paths)
	f.warn(cmd.ErrOrStderr(), diags)
	return e, err
}

// buildFrom is loadFrom without printing the warnings.
func (f *inputFlags) buildFrom(cmd *cobra.Command, shape source.ANPShape, paths []string) (*engine.Engine, diag.List, error) {
	start := time.Now()
	var objects []source.Object
	var decoded diag.List
	var err error
	opts := source.Options{ANPShape: shape, Lenient: f.lenient}
	p := startProgress(cmd, f.quiet)
	defer p.Stop()
	if len(paths) > 0 {
		defer collectLess(paths)()
		dec := &source.Decoder{Options: opts}
		p.Stage("decoding", dec.Documents.Load, "documents")
		if objects, err = dec.Load(paths, cmd.InOrStdin()); err != nil {
			return nil, nil, troubleError{err} // a path that cannot be read is bad input
		}
		decoded = dec.Diags
	} else {
		p.Stage("listing the cluster", nil, "")
		cfg, err := restConfig(f.kubeconfig, f.context)
		if err != nil {
			return nil, nil, noCluster{err}
		}
		if objects, decoded, err = kube.List(cmd.Context(), cfg, opts); err != nil {
			return nil, nil, fmt.Errorf("reading the cluster at %s: %w", cfg.Host, err)
		}
	}
	// objects is not used after Build, so that what only the snapshot
	// needed (the Pod objects) can be collected while the engine is built.
	read := len(objects)
	p.Stage(fmt.Sprintf("building the model of %d objects", read), nil, "")
	build := func(objects []source.Object, decoded diag.List) (*engine.Engine, diag.List, error) {
		return pipeline.Build(objects, decoded, f.pipelineOptions())
	}
	if f.builder != nil {
		build, f.kept = f.builder.Build, &objectsRead{objects, decoded}
	}
	e, diags, err := build(objects, decoded)
	if err != nil {
		return nil, diags, err
	}
	p.Stop() // before the line below
	if took := time.Since(start); took > slowLoad && !f.quiet {
		fmt.Fprintf(cmd.ErrOrStderr(), "netpol: read %s (%s, %s, %s) in %s\n",
			words.Count(read, "object"), words.Count(len(e.Cluster().Pods), "pod"), words.CountAs(len(e.Cluster().Policies), "policy", "policies"),
			words.Count(e.Selectors(), "selector atom"), took.Round(time.Millisecond))
	}
	return e, diags, nil
}

func (f *inputFlags) pipelineOptions() pipeline.Options {
	return pipeline.Options{ReplicaCap: f.replicaCap, LegacyNamespaceIsolation: f.legacy, Lazy: f.lazy}
}

// buildBytes builds an engine from one manifest stream (name is its origin
// in messages), with the flags' evaluation options.
func (f *inputFlags) buildBytes(name string, data []byte) (*engine.Engine, error) {
	shape, err := source.ParseANPShape(f.anpShape)
	if err != nil {
		return nil, usageError{err}
	}
	dec := &source.Decoder{Options: source.Options{ANPShape: shape, Lenient: f.lenient}}
	e, _, err := pipeline.Build(dec.Decode(name, data), dec.Diags, f.pipelineOptions())
	return e, err
}

// evalArgs are the flags that decide how the input is evaluated, spelt as
// `netpol agent` takes them: a lab starts its agents with them and predicts
// with them, so that it tests the configuration it was given.
func (f *inputFlags) evalArgs() []string {
	args := []string{"--anp-shape=" + f.anpShape, "--replica-cap=" + strconv.Itoa(f.replicaCap)}
	if f.legacy {
		args = append(args, "--legacy-namespace-isolation")
	}
	return args
}

// labInput is the input of a lab's agents: its manifests, evaluated with
// the flags it was started with (evalArgs).
func labInput(l *lab.Lab) (inputFlags, error) {
	var in inputFlags
	cmd := &cobra.Command{}
	in.registerCluster(cmd, "")
	if err := cmd.Flags().Parse(l.AgentArgs); err != nil {
		return in, fmt.Errorf("lab %s: its agents' flags %q: %w", l.Name, l.AgentArgs, err)
	}
	in.files, in.quiet = []string{l.ManifestDir()}, true
	return in, nil
}

// restConfig finds the cluster as kubectl does: an explicit kubeconfig,
// else $KUBECONFIG or ~/.kube/config, else the in-cluster service account.
func restConfig(kubeconfig, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
}

func (f *inputFlags) warn(w io.Writer, diags diag.List) {
	if f.quiet {
		return
	}
	for _, d := range diags.Warnings() {
		fmt.Fprintf(w, "warning: %s\n", d)
	}
}
