package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/render/secgroups"
)

func newCompile() *cobra.Command {
	var in inputFlags
	var node, output string
	cmd := &cobra.Command{
		Use:   "compile --node NAME -f MANIFESTS",
		Short: "Show what one node must enforce: rule tables, address sets, nftables",
		Long: `compile turns the decisions for the pods of one node into the intermediate
representation that the agent programs into the kernel:

  per local pod   its ingress table and its egress table (pods with equal
                  rules share one table);
  per table       the rules in evaluation order as 6-tuples — tier, action,
                  peer address set, protocol/port ranges, the policy rule it
                  comes from — and the default when nothing matches;
  sets            the addresses of every peer selection, CIDRs with their
                  exceptions subtracted, named ports resolved per pod.

Actions: accept (this side allows; the other side still decides), drop,
pass (leave the admin tier), end-tier (a baseline Pass: the default decides).

Output formats:
  text             the IR for people (default)
  json             the IR for programs
  nft              the nftables ruleset the agent would load (nft -f syntax)
  security-groups  OpenStack Neutron security groups (see --help of that format
                   below); allow-only policies only`,
		Example: `  netpol compile --node node-1 -f examples/tenants
  netpol compile --node node-1 -f examples/tenants -o nft
  netpol compile --node node-1 -f cluster/ -o json | jq '.tables[0].rules'
  netpol compile --node node-1 -f np-only/ -o security-groups`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if node == "" {
				return usageError{fmt.Errorf("--node is required")}
			}
			e, err := in.load(cmd)
			if err != nil {
				return err
			}
			if err := checkNode(e, node); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			ir := compile.Node(e, node)
			if output == "security-groups" {
				return secgroups.JSON{}.Render(w, ir) // groups have no staged policies to log
			}
			compile.AddStaged(ir, e) // what the agent programs: log-only tables of staged policies too
			switch output {
			case "json":
				return writeJSON(w, ir)
			case "nft":
				return nft.Text{}.Render(w, ir)
			}
			return compile.WriteText(w, ir)
		},
	}
	in.register(cmd)
	cmd.Flags().StringVar(&node, "node", "", "the node whose pods to compile (required)")
	outputFlag(cmd, &output, "text", "json", "nft", "security-groups")
	cmd.Long += "\n\n" + secgroups.Limits
	return cmd
}

// checkNode fails for a node that no pod and no Node object names.
func checkNode(e *engine.Engine, node string) error {
	if e.Cluster().Node(node) != nil {
		return nil
	}
	for _, p := range e.Cluster().Pods {
		if p.Node == node {
			return nil
		}
	}
	var names []string
	for _, n := range e.Cluster().Nodes {
		names = append(names, n.Name)
	}
	return fmt.Errorf("no node %q in the input (nodes: %s)", node, strings.Join(names, ", "))
}
