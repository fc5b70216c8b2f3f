package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/suggest"
	"github.com/netpol/netpol/internal/words"
)

func newSuggest() *cobra.Command {
	var in inputFlags
	var flowPaths []string
	var output, outDir, tier string
	var enforce bool
	fan := suggest.DefaultFanOut
	var keepFanOut bool
	var opts suggest.Options
	cmd := &cobra.Command{
		Use:   "suggest (-f MANIFESTS | --context NAME) --flows FILE",
		Short: "Write the least-privilege policies that allow observed flows, and check them",
		Long: `suggest writes NetworkPolicies that allow every observed flow and as little
else as it can: one policy per workload (a controller's pods in a namespace,
or a pod), isolating it for ingress and egress, allowing the observed
sources and destinations on the observed ports, and the cluster DNS
(kube-system pods k8s-app=kube-dns, 53 over UDP and TCP). Selectors use the
application's labels (app.kubernetes.io/name, instance, component, part-of,
app, k8s-app) that its pods share, when they select no other pod of the
namespace, else every label its pods share and keep (never pod-template-hash,
another controller's hash or a version); a workload whose pods share no such
label is refused, as an empty selector would take the whole namespace, and
one whose selector also selects other pods of its namespace is written with
a warning (its policy isolates them too). Other namespaces are named by
kubernetes.io/metadata.name; a port is written by name where every
destination pod declares that name; an address outside the cluster is
written alone (/32, /128), or as the prefix that covers it with --cidr-max
and --cidr-max6. Each policy's annotation netpol.io/suggested-from lists
the flows behind it, and netpol.io/staged: "true" keeps it from being
enforced until --enforce (or until you remove the annotation): applied
staged, the agent's audit log shows what it would deny.

Flows (--flows, repeatable: every node's record file at once; - for stdin):
  - the agent's record file: JSON lines, one object a line,
    {"from","to","port","verdict","count","first","last","node"}; lines
    with verdict "deny" are skipped (their number goes to stderr): they
    are connections the policies refused, not traffic to allow;
  - CSV lines from,to,port[,count] (a header line is allowed);
  - a JSON array of {"from","to","port","protocol","count"}, port a
    number (5432, as the Kubernetes API writes it) or a string;
  - the JSON of netpol lab probe -o json (its allowed flows).
from and to are workloads (namespace/Kind/name, as the agent records a
controller's pods: shop/Deployment/web), pods (namespace/name) or
addresses; port is 8080/tcp (TCP when left out) or the name of a
container port every destination pod declares. A flow naming a workload
stands for every pod of it. Flows equal in from, to and port (from several
files, or lines of one) are merged, their counts summed.

Tiers (--tier):
  - networkpolicy (the default): the NetworkPolicies above.
  - admin: one AdminNetworkPolicy (policy.networking.k8s.io/v1alpha1) per
    workload, named <namespace>.<name>-suggested; its subject is the
    workload's pods (namespace by kubernetes.io/metadata.name, pods by the
    same labels); Allow rules for the observed peers and ports (peers on
    the same ports share a rule), egress to outside addresses as networks,
    the cluster DNS, then a Deny of everything else in each direction (the
    admin tiers do not isolate by themselves). Each policy has its own
    priority, from --priority (default 100) up, in the order of the
    output: policies of equal priority whose subjects overlap are
    undefined in the API, and a workload's labels may select another
    workload's pods too. 100 leaves 0-99 to the guardrails that must win
    over these allow-lists (an admin Allow is final: NetworkPolicies
    below no longer see the traffic); choose --priority after every admin
    policy of yours that must come first. At most 1001 workloads fit
    (0-1000): beyond, it fails and says so.
  - baseline: the BaselineAdminNetworkPolicy "default" (the API takes no
    other name, and only one: an input that has it already is refused).
    It has one subject, every pod of the workloads' namespaces, so a rule
    cannot say which workload it is for: "from client on http" opens http
    from client to every pod of those namespaces, and "to web on http"
    lets every one of them reach web (when web's side allows it). The
    rules are as precise as that allows, peers and ports, then Deny;
    the check's "stay open" counts what the lost precision opens, and
    pods of those namespaces that no flow names are denied everything but
    the cluster DNS. It decides only where no admin policy did and no
    NetworkPolicy selects the pod.
The admin tiers' ingress peers are pods only: a source outside the
cluster is neither allowed nor denied by them (it is left to the tiers
below). Admin and baseline policies are staged the same way
(netpol.io/staged is read on every policy kind). --out-dir writes
cluster-scoped policies to _cluster.yaml.

Flows it does not trust are left out, each with a warning: a source's
flows to one destination on more than --fan-out-ports ports, or from a
source with more than --fan-out-peers destinations (a scan, which a pod of
the recorded cluster may run so as to be allowed what it probed;
--keep-fan-out keeps them), and a recorded flow with an address at one end
that a pod has now (the agent names an end by its address only when no pod
had it, so that pod did not make the flow).

Then it checks its result with the engine, the input with the policies
enforced: how many observed flows are allowed (all, unless another policy
denies one: an admin policy, or an earlier suggested one whose subject
selects the pods too), how many pod pairs x declared ports lose access
compared with today, and how many stay open that no flow was seen on (the
least-privilege gap). The check is written to stderr, or with the policies
under -o json.`,
		Example: `  netpol suggest -f cluster/ --flows flows.csv > suggested.yaml
  netpol suggest -f cluster/ --flows probe.json --out-dir suggested/
  netpol suggest -f cluster/ --flows node-1.jsonl,node-2.jsonl --flows node-3.jsonl
  netpol suggest -f cluster/ --flows flows.csv -o json | jq .report
  netpol suggest -f cluster/ --flows flows.csv --tier admin --priority 500 --out-dir suggested/
  netpol suggest --context prod --flows node-1.jsonl,node-2.jsonl --out-dir suggested/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(flowPaths) == 0 {
				return usageError{fmt.Errorf("give the observed flows with --flows FILE")}
			}
			if output != "yaml" && output != "json" {
				return usageError{fmt.Errorf("--output %q: want yaml or json", output)}
			}
			var err error
			if opts.Tier, err = suggest.ParseTier(tier); err != nil {
				return usageError{fmt.Errorf("--tier: %w", err)}
			}
			if cmd.Flags().Changed("priority") && opts.Tier != suggest.TierAdmin {
				return usageError{fmt.Errorf("--priority is the first AdminNetworkPolicy's: it goes with --tier admin")}
			}
			if slices.Contains(in.files, "-") && slices.Contains(flowPaths, "-") {
				return usageError{fmt.Errorf("-f - and --flows - both read stdin: give one of them a file")}
			}
			// The check builds again over the objects read, with the
			// suggestion added.
			in.builder = &pipeline.Builder{Options: in.pipelineOptions()}
			before, err := in.load(cmd)
			if err != nil {
				return err
			}
			flows, err := readFlows(cmd, suggest.NewEnds(before.Cluster()), flowPaths)
			if err != nil {
				return err
			}
			opts.Enforce = enforce
			if keepFanOut {
				fan = suggest.FanOut{}
			}
			flows, warnings := suggest.Screen(before.Cluster(), flows, fan)
			opts.Warn = func(w string) { warnings = append(warnings, w) }
			nps, err := suggest.Suggest(before.Cluster(), flows, opts)
			if err != nil {
				return troubleError{err}
			}
			report, err := verifySuggestion(&in, before, nps, flows)
			if err != nil {
				return err
			}
			if err := writeSuggestion(cmd, output, outDir, nps, report, warnings); err != nil {
				return err
			}
			if len(report.Denied) > 0 {
				return errSilent{fmt.Errorf("%d observed flows denied", len(report.Denied))}
			}
			return nil
		},
	}
	in.register(cmd)
	cmd.Flags().StringSliceVar(&flowPaths, "flows", nil, "the observed flows: CSV, JSON, netpol lab probe -o json, or the agent's record file (JSON lines); - for stdin; repeatable (every node's record file at once)")
	cmd.Flags().IntVar(&fan.Ports, "fan-out-ports", fan.Ports, "leave out (and report) a source's flows to a destination on more ports than this: a port scan, not an application's traffic (0: no limit)")
	cmd.Flags().IntVar(&fan.Peers, "fan-out-peers", fan.Peers, "leave out (and report) the flows of a source with more destinations than this: an address scan (0: no limit)")
	cmd.Flags().BoolVar(&keepFanOut, "keep-fan-out", false, "keep the flows --fan-out-ports and --fan-out-peers would leave out")
	cmd.Flags().BoolVar(&enforce, "enforce", false, `leave out netpol.io/staged: "true", so the policies are enforced once applied`)
	cmd.Flags().IntVar(&opts.CIDRMax4, "cidr-max", 32, "write an outside IPv4 address as the prefix of this length that covers it")
	cmd.Flags().IntVar(&opts.CIDRMax6, "cidr-max6", 128, "write an outside IPv6 address as the prefix of this length that covers it")
	cmd.Flags().StringVar(&outDir, "out-dir", "", "write one YAML file per namespace into this directory instead of stdout (cluster-scoped policies: _cluster.yaml)")
	cmd.Flags().StringVar(&tier, "tier", "networkpolicy", "the API to write: networkpolicy (one NetworkPolicy per workload), admin (one AdminNetworkPolicy per workload) or baseline (the BaselineAdminNetworkPolicy default)")
	cmd.Flags().Int32Var(&opts.Priority, "priority", 100, "with --tier admin: the first policy's priority; each next workload's policy takes the next one (0-1000, lower first)")
	outputFlag(cmd, &output, "yaml", "json")
	return cmd
}

// readFlows reads every --flows file and merges the flows they share (a
// flow between two nodes' pods is in both nodes' record files). The
// denied lines of record files are counted on stderr: they are not
// traffic to allow, and a reader should know they were there.
func readFlows(cmd *cobra.Command, ends *suggest.Ends, paths []string) ([]suggest.Flow, error) {
	var all []suggest.Flow
	for _, path := range paths {
		var data []byte
		var err error
		if path == "-" {
			data, err = io.ReadAll(cmd.InOrStdin())
		} else {
			data, err = os.ReadFile(path)
		}
		if err != nil {
			return nil, troubleError{fmt.Errorf("--flows: %w", err)}
		}
		flows, denied, err := ends.ReadFlows(data)
		if err != nil {
			return nil, troubleError{fmt.Errorf("%s: %w", path, err)}
		}
		if denied > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s skipped: the policies allow observed traffic only\n", path, words.Count(denied, "denied flow"))
		}
		all = append(all, flows...)
	}
	return suggest.Merge(all), nil
}

// verifySuggestion decides the flows and the pod pairs with the input as
// it is and with the policies enforced (suggest.Verify). The policies go
// through the YAML written and the decoder, as a reader's kubectl apply
// would take them, and join the objects the input read (in.kept), built
// again by the Builder that built before.
func verifySuggestion(in *inputFlags, before *engine.Engine, nps []suggest.Policy, flows []suggest.Flow) (suggest.Report, error) {
	var enforced []suggest.Policy
	for _, np := range nps {
		np = np.DeepCopyObject().(suggest.Policy)
		a := np.GetAnnotations()
		delete(a, policy.StagedAnnotation)
		np.SetAnnotations(a)
		enforced = append(enforced, np)
	}
	data, err := suggest.YAML(enforced)
	if err != nil {
		return suggest.Report{}, troubleError{err}
	}
	shape, err := source.ParseANPShape(in.anpShape)
	if err != nil {
		return suggest.Report{}, usageError{err}
	}
	dec := &source.Decoder{Options: source.Options{ANPShape: shape, Lenient: in.lenient}}
	objects := append(slices.Clip(in.kept.objects), dec.Decode("suggested policies", data)...)
	after, _, err := in.builder.Build(objects, append(slices.Clip(in.kept.decoded), dec.Diags...))
	if err != nil {
		return suggest.Report{}, fmt.Errorf("the input with the suggested policies: %w", err)
	}
	return suggest.Verify(before, after, flows)
}

// clusterFile holds the cluster-scoped policies of --out-dir: a name no
// namespace can have ("_" is not in a DNS label).
const clusterFile = "_cluster.yaml"

// writeSuggestion writes the policies (stdout, or a file per namespace)
// and the check (stderr), or both as JSON.
func writeSuggestion(cmd *cobra.Command, output, outDir string, nps []suggest.Policy, r suggest.Report, warnings []string) error {
	if output == "json" {
		docs := make([]map[string]any, 0, len(nps))
		for _, np := range nps {
			doc, err := suggest.Document(np)
			if err != nil {
				return troubleError{err}
			}
			docs = append(docs, doc)
		}
		out := map[string]any{"policies": docs, "report": r}
		if len(warnings) > 0 {
			out["warnings"] = warnings
		}
		return writeJSON(cmd.OutOrStdout(), out)
	}
	if outDir == "" {
		data, err := suggest.YAML(nps)
		if err != nil {
			return troubleError{err}
		}
		if _, err := cmd.OutOrStdout().Write(data); err != nil {
			return err
		}
	} else {
		byFile := map[string][]suggest.Policy{}
		for _, np := range nps {
			file := clusterFile
			if ns := np.GetNamespace(); ns != "" {
				file = ns + ".yaml"
			}
			byFile[file] = append(byFile[file], np)
		}
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			return err
		}
		for file, list := range byFile {
			data, err := suggest.YAML(list)
			if err != nil {
				return troubleError{err}
			}
			if err := os.WriteFile(filepath.Join(outDir, file), data, 0o644); err != nil {
				return err
			}
		}
	}
	w := cmd.ErrOrStderr()
	for _, warning := range warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
	fmt.Fprintf(w, "%s for %s: %d allowed with them enforced", words.CountAs(len(nps), "policy", "policies"), words.Count(r.Flows, "observed flow"), r.Allowed)
	for _, f := range r.Denied {
		fmt.Fprintf(w, "\n  denied: %s", f)
	}
	fmt.Fprintf(w, "\n%d of %d pod pairs x declared ports lose access; %d stay open that no flow was seen on\n", r.Lost, r.Cells, r.OpenUnobserved)
	return nil
}
