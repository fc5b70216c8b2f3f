package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
)

// explainOptions are explain's flags.
type explainOptions struct {
	in                     inputFlags
	from, to, port, output string
	staged, exitCode       bool
}

func newExplain() *cobra.Command {
	var o explainOptions
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
Without a protocol a number means TCP.

Policies annotated netpol.io/staged: "true" are not enforced and take no
part in the verdict. With --staged, explain also prints the staged verdict
and its trace: the decision once the staged policies are enforced too.

Exit status: 0 when the connection was decided, allowed or denied; with
--exit-code (as git diff --exit-code), 1 when it is denied. 2 for invalid
input or flags, a path that does not exist, and a pod, node or port name
that names nothing; any other failure is 2 too with --exit-code, so a CI
gate never mistakes it for a denial, and 1 without.`,
		Example: `  netpol explain -f examples/tenants --from blue-web/frontend-0 --to blue-db/postgres-0 --port 5432
  netpol explain -f cluster/ --from x/a --to 198.18.9.9 --port 53/udp -o json
  kubectl get ns,pods,netpol,anp,banp -A -o yaml | netpol explain -f - --from x/a --to y/b --port http
  netpol explain -f cluster/ --from x/a --to y/b --port 80 --staged
  netpol explain -f cluster/ --from x/a --to y/b --port 5432 --exit-code   # in CI: exit 1 when denied`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			denied, err := o.run(cmd)
			switch {
			case err != nil && o.exitCode:
				return asTrouble(err) // exit 1 means denied
			case err != nil:
				return err
			case denied && o.exitCode:
				return errSilent{fmt.Errorf("denied")}
			}
			return nil
		},
	}
	o.in.register(cmd)
	cmd.Flags().StringVar(&o.from, "from", "", "source: namespace/pod, node/NAME or IP")
	cmd.Flags().StringVar(&o.to, "to", "", "destination: namespace/pod, node/NAME or IP")
	cmd.Flags().StringVar(&o.port, "port", "", "destination port: 80, 80/tcp, 53/udp, or a named port such as http")
	cmd.Flags().BoolVar(&o.staged, "staged", false, "also decide with the policies annotated netpol.io/staged enforced, and print both")
	cmd.Flags().BoolVar(&o.exitCode, "exit-code", false, "exit 1 when the connection is denied (and 2 for every failure), as git diff --exit-code")
	outputFlag(cmd, &o.output, "text", "json")
	return cmd
}

// run decides and prints one connection, and reports whether it is denied
// (the enforced verdict, not the staged one). A name that names nothing
// is bad input (exit 2), as a missing path is.
func (o *explainOptions) run(cmd *cobra.Command) (denied bool, err error) {
	if o.from == "" || o.to == "" || o.port == "" {
		return false, usageError{fmt.Errorf("--from, --to and --port are required")}
	}
	spec, err := l4.ParsePortSpec(o.port)
	if err != nil {
		return false, usageError{err}
	}
	e, err := o.in.load(cmd)
	if err != nil {
		return false, err
	}
	src, err := e.Endpoint(o.from)
	if err != nil {
		return false, troubleError{fmt.Errorf("--from %w", err)}
	}
	dst, err := e.Endpoint(o.to)
	if err != nil {
		return false, troubleError{fmt.Errorf("--to %w", err)}
	}
	flow, err := e.NewFlow(src, dst, spec)
	if err != nil {
		return false, troubleError{err} // a port name the destination does not declare
	}
	v := e.Decide(flow)
	var sv *engine.Verdict
	if o.staged {
		// Without staged policies the staged verdict is the
		// enforced one.
		sv = &v
		if se := e.Staged(); se != nil {
			d := se.Decide(flow)
			sv = &d
		}
	}
	w := cmd.OutOrStdout()
	if o.output == "json" {
		return !v.Allowed, writeJSON(w, explainJSON{
			Allowed: v.Allowed, From: endpointJSON(flow.Src), To: endpointJSON(flow.Dst),
			Port: int(flow.Port.Num), Protocol: flow.Port.Proto.String(),
			Note: v.Note, Egress: v.Egress, Ingress: v.Ingress, Staged: sv,
		})
	}
	engine.WriteTrace(w, flow, v)
	if sv != nil {
		fmt.Fprintf(w, "\nstaged (%s): the verdict with the staged policies enforced too\n", stagedCount(e))
		engine.WriteTrace(w, flow, *sv)
	}
	return !v.Allowed, nil
}

// stagedCount says how many policies are staged.
func stagedCount(e *engine.Engine) string {
	n := 0
	if se := e.Staged(); se != nil {
		for _, p := range se.Policies().Policies() {
			if p.Staged {
				n++
			}
		}
	}
	if n == 1 {
		return "1 staged policy"
	}
	return fmt.Sprintf("%d staged policies", n)
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
	// Staged is the verdict with the staged policies enforced (--staged).
	Staged *engine.Verdict `json:"staged,omitempty"`
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
