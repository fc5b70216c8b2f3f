package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
)

func newExplain() *cobra.Command {
	var in inputFlags
	var from, to, port, output string
	cmd := &cobra.Command{
		Use:   "explain -f MANIFESTS --from SRC --to DST --port PORT",
		Short: "Say whether one connection is allowed, and which policy rule decided",
		Long: `explain decides one connection and prints its trace: for the source's egress
and the destination's ingress, every tier visited and the policy and rule that
decided (rules by name, or by position such as ingress[0] when unnamed). When
the NetworkPolicy tier denies, the trace lists the NetworkPolicies that isolate
the pod, since no single rule is to blame.

SRC and DST are namespace/pod, node/NAME or an IP address (an address outside
the cluster is allowed too). PORT is a number or a container port name of the
destination pod, optionally with a protocol: 80, 53/udp, http, dns/udp.
Without a protocol a number means TCP.`,
		Example: `  netpol explain -f examples/tenants --from blue-web/frontend-0 --to blue-db/postgres-0 --port 5432
  netpol explain -f cluster/ --from x/a --to 198.18.9.9 --port 53/udp -o json
  kubectl get ns,pods,netpol,anp,banp -A -o yaml | netpol explain -f - --from x/a --to y/b --port http`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if from == "" || to == "" || port == "" {
				return usageError{fmt.Errorf("--from, --to and --port are required")}
			}
			spec, err := l4.ParsePortSpec(port)
			if err != nil {
				return usageError{err}
			}
			e, err := in.load(cmd)
			if err != nil {
				return err
			}
			src, err := e.Endpoint(from)
			if err != nil {
				return fmt.Errorf("--from %w", err)
			}
			dst, err := e.Endpoint(to)
			if err != nil {
				return fmt.Errorf("--to %w", err)
			}
			flow, err := e.NewFlow(src, dst, spec)
			if err != nil {
				return err
			}
			v := e.Decide(flow)
			if output == "json" {
				return writeJSON(cmd.OutOrStdout(), explainJSON{
					Allowed: v.Allowed, From: endpointJSON(flow.Src), To: endpointJSON(flow.Dst),
					Port: int(flow.Port.Num), Protocol: flow.Port.Proto.String(),
					Note: v.Note, Egress: v.Egress, Ingress: v.Ingress,
				})
			}
			engine.WriteTrace(cmd.OutOrStdout(), flow, v)
			return nil
		},
	}
	in.register(cmd)
	cmd.Flags().StringVar(&from, "from", "", "source: namespace/pod, node/NAME or IP")
	cmd.Flags().StringVar(&to, "to", "", "destination: namespace/pod, node/NAME or IP")
	cmd.Flags().StringVar(&port, "port", "", "destination port: 80, 80/tcp, 53/udp, or a named port such as http")
	outputFlag(cmd, &output, "text", "json")
	return cmd
}

type explainJSON struct {
	Allowed  bool        `json:"allowed"`
	From     endpointOut `json:"from"`
	To       endpointOut `json:"to"`
	Port     int         `json:"port"`
	Protocol string      `json:"protocol"`
	Note     string      `json:"note,omitempty"`
	Egress   engine.Side `json:"egress"`
	Ingress  engine.Side `json:"ingress"`
}

type endpointOut struct {
	Name string `json:"name"`
	IP   string `json:"ip"`
	Kind string `json:"kind"` // pod, host-network-pod, node, external
}

func endpointJSON(ep engine.Endpoint) endpointOut {
	out := endpointOut{Name: ep.String(), IP: ep.IP.String(), Kind: "external"}
	switch {
	case ep.Pod != nil && ep.Pod.HostNetwork:
		out.Kind = "host-network-pod"
	case ep.Pod != nil:
		out.Kind = "pod"
	case ep.Node != nil:
		out.Kind = "node"
	}
	return out
}
