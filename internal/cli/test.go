package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/scenario"
	"github.com/netpol/netpol/internal/source"
)

func newTest() *cobra.Command {
	var output, anpShape string
	var legacy, throughServices bool
	cmd := &cobra.Command{
		Use:   "test SCENARIO...",
		Short: "Check policies against expected verdicts: a policy regression suite for CI",
		Long: `test runs scenario files: a topology, policies, ordered steps that change them,
and the verdicts each step must produce. A mismatch prints the flow, what was
expected, what netpol decided, and the trace of the decision. The exit code
is 1 when any scenario fails, so the command can gate a pull request.

A scenario file (YAML):

  name: web accepts only the frontend
  include: [_cluster/shop.yaml]   # optional manifests shared by many scenarios
  topology:                       # optional shorthand
    namespaces: [shop]            # labelled ns=<name>
    pods: [shop/web, shop/frontend, shop/batch]   # labelled pod=<name>
    ports: [80/tcp]               # served by every pod, named serve-80-tcp
  objects: []                     # more objects: Namespaces, Pods, policies...
  steps:
  - name: default deny with one exception
    apply:                        # create or replace (kind, namespace, name)
    - apiVersion: networking.k8s.io/v1
      kind: NetworkPolicy
      metadata: {name: web, namespace: shop}
      spec:
        podSelector: {matchLabels: {pod: web}}
        ingress: [{from: [{podSelector: {matchLabels: {pod: frontend}}}]}]
    delete: []                    # [{kind, namespace, name}]
    expect:                       # every pod pair, self excluded
    - ports: [80/tcp]
      default: allow
      overrides:                  # in order; the later wins
      - deny: "* -> shop/web"
      - allow: "shop/frontend -> shop/web"
    flows:                        # single flows, also to/from IPs and nodes
    - {from: shop/batch, to: 198.19.100.7, port: 443/tcp, allowed: true}
    # to a Service: how many of its backends policy lets the source reach
    # (all, some, none or no-backends), on a Service port or its name
    - {from: shop/frontend, to: svc/shop/s-shop-web, port: 80/tcp, reach: all}

Topology pods get fixed addresses so CIDRs can be written literally: the j-th
pod of the i-th namespace is 198.18.i.j (both from 1) and fd00:198:18:i::j.
Each also gets the Service the Kubernetes e2e suite probes it through:
s-<namespace>-<pod>, selecting pod=<name>, every port, at 198.19.i.j and
fd00:198:19:i::j. --through-services checks every expect table through
those Services, as that suite does.

Included files are Kubernetes manifests, relative to the scenario file.
Directories whose name starts with "_" are not searched for scenarios, so a
shared cluster lives in e.g. _cluster/ next to the scenarios that use it.`,
		Example: `  netpol test testdata/scenarios
  netpol test my-policies.yaml -o junit > report.xml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			shape, err := source.ParseANPShape(anpShape)
			if err != nil {
				return usageError{err}
			}
			scenarios, err := scenario.LoadFiles(args)
			if err != nil {
				return usageError{err}
			}
			results := make([]scenario.Result, len(scenarios))
			failed := 0
			for i, s := range scenarios {
				results[i] = scenario.Run(s, scenario.Options{ANPShape: shape, LegacyNamespaceIsolation: legacy, ThroughServices: throughServices})
				if !results[i].Passed() {
					failed++
				}
			}
			w := cmd.OutOrStdout()
			switch output {
			case "junit":
				if err := scenario.WriteJUnit(w, results); err != nil {
					return err
				}
			case "json":
				if err := writeJSON(w, testJSON(results)); err != nil {
					return err
				}
			default:
				scenario.WriteText(w, results)
			}
			if failed > 0 {
				return errSilent{fmt.Errorf("%d of %d scenarios failed", failed, len(results))}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&anpShape, "anp-shape", "auto", "AdminNetworkPolicy peer shape: auto, v0.1.7 or kep")
	cmd.Flags().BoolVar(&legacy, "legacy-namespace-isolation", false, "evaluate ingress with the v1beta1 namespace isolation annotation")
	cmd.Flags().BoolVar(&throughServices, "through-services", false, "check expect tables to each destination pod's Service (s-<namespace>-<pod>, made by topology), as the Kubernetes e2e suite probes")
	outputFlag(cmd, &output, "text", "json", "junit")
	return cmd
}

type testResultJSON struct {
	Name       string         `json:"name"`
	File       string         `json:"file"`
	Passed     bool           `json:"passed"`
	Checked    int            `json:"checked"`
	Error      string         `json:"error,omitempty"`
	Mismatches []mismatchJSON `json:"mismatches,omitempty"`
}

type mismatchJSON struct {
	Step     string `json:"step"`
	From     string `json:"from"`
	To       string `json:"to"`
	Port     int    `json:"port"`
	Protocol string `json:"protocol"`
	Expected bool   `json:"expected"`
	// For a flow to a Service: the reach expected and found.
	ExpectedReach string `json:"expectedReach,omitempty"`
	Reach         string `json:"reach,omitempty"`
	Verdict       any    `json:"verdict"`
}

func testJSON(results []scenario.Result) []testResultJSON {
	out := make([]testResultJSON, 0, len(results))
	for _, r := range results {
		tr := testResultJSON{Name: r.Scenario.Name, File: r.Scenario.File, Passed: r.Passed(), Checked: r.Checked()}
		if r.Err != nil {
			tr.Error = r.Err.Error()
		}
		for _, s := range r.Steps {
			if s.Err != nil && tr.Error == "" {
				tr.Error = s.Name + ": " + s.Err.Error()
			}
			for _, m := range s.Mismatches {
				mj := mismatchJSON{Step: s.Name, From: m.From, To: m.To, Port: int(m.Port.Num),
					Protocol: m.Port.Proto.String(), Expected: m.Expected, Verdict: m.Verdict}
				if m.Reach != nil {
					mj.ExpectedReach, mj.Reach = m.Reach.Want.String(), m.Reach.Got.String()
				}
				tr.Mismatches = append(tr.Mismatches, mj)
			}
		}
		out = append(out, tr)
	}
	return out
}
