package cli

import (
	"fmt"
	"io"
	"net/netip"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/state"
)

// explainOptions are explain's flags.
type explainOptions struct {
	in                               inputFlags
	from, to, port, protocol, output string
	resolvedAs                       []string
	staged, exitCode                 bool
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

DST may also be a Service: svc/NAMESPACE/NAME, NAME.NAMESPACE.svc,
NAME.NAMESPACE.svc.cluster.local or a cluster IP; PORT is then the
Service's port number or name. Policy applies after the translation, so
explain decides the connection once per backend (pod, address, target
port, of the connection's address family) and prints each verdict with its
trace, after a summary such as "reachable through 2 of 3 backends". A pod
that reaches itself through its own Service (hairpin) is allowed, as a pod
reaching its own address is.

DST may also be a DNS name (api.example.com): a connection to an address
outside the cluster that the name resolved to, which domainNames peers of
admin policies match (exactly, or "*.example.com" for names below it). The
address is a stand-in that no ipBlock or networks peer names except those
covering every address, so the verdict is the one every such address gets;
for a given address, name it with --to and say what it was resolved from
with --resolved-as.

Policies annotated netpol.io/staged: "true" are not enforced and take no
part in the verdict. With --staged, explain also prints the staged verdict
and its trace: the decision once the staged policies are enforced too.

Exit status: 0 when the connection was decided, allowed or denied; with
--exit-code (as git diff --exit-code), 1 when it is denied. A connection
to a Service counts as denied when some backend is denied or there is none,
since it may land on any backend. 2 for invalid
input or flags, a path that does not exist, and a pod, node or port name
that names nothing; any other failure is 2 too with --exit-code, so a CI
gate never mistakes it for a denial, and 1 without.`,
		Example: `  netpol explain -f examples/tenants --from blue-web/frontend-0 --to blue-db/postgres-0 --port 5432
  netpol explain -f cluster/ --from x/a --to 198.18.9.9 --port 53/udp -o json
  netpol explain -f examples/services --from shop/frontend-0 --to svc/shop/web --port http
  netpol explain -f cluster/ --from x/a --to kube-dns.kube-system.svc --port dns/udp -o json
  kubectl get ns,pods,netpol,anp,banp -A -o yaml |
    netpol explain -f - --from x/a --to y/b --port http
  netpol explain -f cluster/ --from x/a --to api.example.com --port 443
  netpol explain -f cluster/ --from x/a --to 203.0.113.7 --resolved-as api.example.com --port 443
  netpol explain -f cluster/ --from x/a --to y/b --port 80 --staged
  # in CI: exit 1 when denied
  netpol explain -f cluster/ --from x/a --to y/b --port 5432 --exit-code`,
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
	o.in.lazy = true // one flow, or one per backend of a Service
	cmd.Flags().StringVar(&o.from, "from", "", "source: namespace/pod, node/NAME or IP")
	cmd.Flags().StringVar(&o.to, "to", "", "destination: namespace/pod, node/NAME, IP, or a Service: svc/NS/NAME, NAME.NS.svc[.cluster.local] or a cluster IP")
	cmd.Flags().StringVar(&o.port, "port", "", "destination port: 80, 80/tcp, 53/udp, or a named port such as http (of the Service when --to is one)")
	cmd.Flags().StringVar(&o.protocol, "protocol", "", "the port's protocol as the Kubernetes API spells it (TCP, UDP, SCTP), for a --port without one; default TCP for a number")
	cmd.Flags().StringSliceVar(&o.resolvedAs, "resolved-as", nil, "the DNS names --to ADDRESS was resolved from, which domainNames peers match (repeatable)")
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
	spec, err := l4.ParsePortProto(o.port, o.protocol, "--protocol")
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
	if svc, ok, err := e.ServiceName(o.to); err != nil {
		return false, troubleError{fmt.Errorf("--to %w", err)}
	} else if ok {
		return o.runService(cmd, e, src, svc, spec)
	}
	dst, err := e.Endpoint(o.to)
	if err != nil {
		return false, troubleError{fmt.Errorf("--to %w", err)}
	}
	if len(o.resolvedAs) > 0 {
		if _, err := netip.ParseAddr(o.to); err != nil {
			return false, usageError{fmt.Errorf("--resolved-as: --to must be an address (it is %q)", o.to)}
		}
		if dst, err = dst.ResolvedAs(o.resolvedAs); err != nil {
			return false, usageError{fmt.Errorf("--resolved-as %w", err)}
		}
	} else if len(dst.Names) > 0 && src.IP.Is6() {
		dst = e.NameEndpoint(o.to, src.IP) // a stand-in of the source's family
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
		out := flowJSON(flow, v)
		out.Staged = sv
		return !v.Allowed, writeJSON(w, out)
	}
	if len(dst.Names) > 0 && len(o.resolvedAs) == 0 {
		fmt.Fprintf(w, "%s: as %s, an address outside the cluster that no narrower ipBlock or networks peer names (decide a given address with --to ADDRESS --resolved-as %s)\n\n",
			o.to, flow.Dst.IP, o.to)
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

// flowJSON is the verdict on one flow as explain -o json prints it.
func flowJSON(f engine.Flow, v engine.Verdict) explainJSON {
	return explainJSON{
		Allowed: v.Allowed, From: endpointJSON(f.Src), To: endpointJSON(f.Dst),
		Port: int(f.Port.Num), Protocol: f.Port.Proto.String(),
		Note: v.Note, Egress: v.Egress, Ingress: v.Ingress,
	}
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
	// ResolvedAs are the DNS names the address stands for (--to NAME,
	// --resolved-as).
	ResolvedAs []string `json:"resolvedAs,omitempty"`
}

func endpointJSON(ep engine.Endpoint) endpointOut {
	out := endpointOut{Name: ep.String(), IP: ep.IP.String(), Kind: "external", ResolvedAs: ep.Names}
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

// runService decides a connection to a Service port, once per backend, and
// reports whether some backend is denied (or there is none).
func (o *explainOptions) runService(cmd *cobra.Command, e *engine.Engine, src engine.Endpoint, svc *state.Service, spec l4.PortSpec) (denied bool, err error) {
	port, err := engine.ServicePort(svc, spec)
	if err != nil {
		return false, troubleError{err}
	}
	var via netip.Addr // the cluster IP named: its family decides the backends
	if ip, err := netip.ParseAddr(o.to); err == nil {
		via = ip.Unmap()
	}
	v := e.DecideService(src, svc, port, via)
	var sv *engine.ServiceVerdict
	if o.staged {
		sv = &v
		if se := e.Staged(); se != nil {
			d := se.DecideService(src, svc, port, via)
			sv = &d
		}
	}
	denied = v.Reach() != engine.ReachAll
	w := cmd.OutOrStdout()
	if o.output == "json" {
		out := serviceExplainJSON{
			Allowed: !denied, Service: svc.Key(), Type: string(svc.Type), Port: servicePortOut(port),
			From: endpointJSON(src), Summary: v.Summary(), Reachable: v.Reachable, Backends: backendsJSON(v),
		}
		if sv != nil {
			out.Staged = &stagedServiceJSON{Allowed: sv.Reach() == engine.ReachAll, Summary: sv.Summary(), Reachable: sv.Reachable, Backends: backendsJSON(*sv)}
		}
		return denied, writeJSON(w, out)
	}
	writeServiceVerdict(w, src, v)
	if sv != nil {
		fmt.Fprintf(w, "\nstaged (%s): the verdict with the staged policies enforced too\n", stagedCount(e))
		writeServiceVerdict(w, src, *sv)
	}
	return denied, nil
}

func writeServiceVerdict(w io.Writer, src engine.Endpoint, v engine.ServiceVerdict) {
	fmt.Fprintf(w, "%s -> svc/%s port %s (targetPort %s): %s\n", src, v.Service.Key(), servicePortText(v.Port), v.Port.Target, v.Summary())
	for _, b := range v.Backends {
		fmt.Fprintln(w)
		engine.WriteTrace(w, b.Flow, b.Verdict)
	}
}

func servicePortText(p *state.ServicePort) string {
	if p.Name == "" {
		return p.Port.String()
	}
	return p.Name + " " + p.Port.String()
}

// serviceExplainJSON: Allowed is true when every backend is allowed, so
// that .allowed answers for a Service as for any other destination.
type serviceExplainJSON struct {
	Allowed   bool               `json:"allowed"`
	Service   string             `json:"service"`
	Type      string             `json:"type"`
	Port      servicePortJSON    `json:"port"`
	From      endpointOut        `json:"from"`
	Summary   string             `json:"summary"`
	Reachable int                `json:"reachable"`
	Backends  []explainJSON      `json:"backends"`
	Staged    *stagedServiceJSON `json:"staged,omitempty"`
}

type stagedServiceJSON struct {
	Allowed   bool          `json:"allowed"`
	Summary   string        `json:"summary"`
	Reachable int           `json:"reachable"`
	Backends  []explainJSON `json:"backends"`
}

type servicePortJSON struct {
	Name       string `json:"name,omitempty"`
	Port       int    `json:"port"`
	Protocol   string `json:"protocol"`
	TargetPort string `json:"targetPort"`
}

func servicePortOut(p *state.ServicePort) servicePortJSON {
	return servicePortJSON{Name: p.Name, Port: int(p.Port.Num), Protocol: p.Port.Proto.String(), TargetPort: p.Target.String()}
}

// backendsJSON is each backend's verdict in explain's one-flow shape.
func backendsJSON(v engine.ServiceVerdict) []explainJSON {
	out := make([]explainJSON, 0, len(v.Backends))
	for _, b := range v.Backends {
		out = append(out, flowJSON(b.Flow, b.Verdict))
	}
	return out
}
