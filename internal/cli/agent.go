package cli

import (
	"context"
	goflag "flag"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/audit"
	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/dataplane/nflog"
	"github.com/netpol/netpol/internal/dnsproxy"
	"github.com/netpol/netpol/internal/observed"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/source/kube"
	"github.com/netpol/netpol/internal/status"
)

// eventRecorder sends Events as the agent of node.
func eventRecorder(ctx context.Context, rc *rest.Config, node string) (record.EventRecorder, error) {
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "netpol-agent", Host: node}), nil
}

// statusWriter reports on the cluster's admin policies, and sends Events
// with rec, as the agent of node.
func statusWriter(rc *rest.Config, node string, w *kube.Watch, rec record.EventRecorder) (*status.Writer, error) {
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	return &status.Writer{Node: node, Client: dyn, Recorder: rec, Policies: w.AdminPolicies}, nil
}

// serve serves h on addr until the returned function is called.
func serve(addr string, h http.Handler) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--listen: %w", err)
	}
	// Scrapes and probes are small and quick: a client that holds a
	// connection open without finishing its request, or never reads the
	// answer, is dropped instead of holding a goroutine and a socket.
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 60 * time.Second, MaxHeaderBytes: 16 << 10}
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			klog.ErrorS(err, "Metrics and health server stopped")
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

// agentOptions are the flags of netpol agent. complete, validate and run
// turn them into a running agent, as Kubernetes components do with their
// options.
type agentOptions struct {
	cfg                               agent.Config
	sources                           []string
	anpShape, kubeconfig, kubeContext string
	inCluster, once, elementsViaNft   bool
	listen, auditLog, recordPath      string
	recordEvery                       time.Duration
	recordMax                         int
	reportStatus, dnsProxy            bool
	dnsKernel                         dnsproxy.Kernel
	dnsLimits                         dnsproxy.Limits
	dnsServers                        []net.IP

	source source.Options // made by complete
}

func newAgentOptions() *agentOptions {
	return &agentOptions{reportStatus: true, dnsProxy: true, dnsKernel: dnsproxy.DefaultKernel, dnsLimits: dnsproxy.DefaultLimits}
}

func newAgent() *cobra.Command {
	o := newAgentOptions()
	cmd := &cobra.Command{
		Use:   "agent --node NAME (--source DIR | --kubeconfig FILE | --in-cluster)",
		Short: "Enforce the policies for the pods of one node with nftables",
		Long: `agent programs the kernel of one node: it reads the manifests under --source,
or watches a Kubernetes API server (--kubeconfig, --context, or --in-cluster
when it runs as a DaemonSet pod), compiles what the node's pods must enforce
(see netpol compile) and loads it into the nftables table "inet netpol":
the address sets (over netlink) and the pods' chains first, where no packet
meets them yet, then one transaction that points the pods at them. Then it
watches the source: on every change it sends only
the difference (a pod joining a selector is one set element, sent straight
over netlink; a changed policy adds only its new chains, through nft, and the
netlink batch that points its pods at them deletes the old ones), and it
deletes the conntrack entries of connections that are now denied, judged by
the backend they reached (after a Service's DNAT), so that existing
connections are cut as well as new ones refused. A cut connection is held in
the kernel (sets cut-4, cut-6) so that neither side re-opens it by sending
next; the hold lasts while packets keep coming and two minutes after.

An invalid object is left out (the others stay enforced) and reported, but
for an invalid admin policy, which would lift its denies: it is enforced
failed closed (an invalid rule denies all traffic, an invalid Allow rule
matches nothing), the agent is not ready (/readyz and the --status file name
it and why) and sets netpol_admin_policy_failed_closed. In a cluster: every
AdminNetworkPolicy, BaselineAdminNetworkPolicy and ClusterNetworkPolicy gets
the conditions Accepted and Programmed (an invalid one Accepted=False and
Programmed=False/FailedClosed), a node that cannot program gets its own
netpol.io/NotProgrammed.<node> condition, and an invalid policy gets a
Warning Event (reason InvalidPolicy).

On start it takes over whatever "inet netpol" holds (after a restart or a
crash) the same way: the sets the table has are refilled together in one
netlink batch, then the switching transaction replaces the rest; there is no
moment without rules and no stale rule is left. While the API server is unreachable the rules last
programmed stay, and the watch catches up within seconds when it is back.
The admin policy kinds are CRDs: one whose CRD is not installed has no
policies, and is looked for again every minute (a kind is taken as not
installed only when discovery says so three times over 10 s and a list of it
answers 404 too; meanwhile it keeps its policies and the agent is not
ready); while the agent cannot
tell whether the API server serves one (discovery fails: a timeout, a 503,
a 403), it keeps the rules last programmed, is not ready (/readyz), sets
netpol_admin_policy_resource_state{state="unknown"}, sends a Warning Event
(reason AdminPolicyDiscoveryFailed) about its node, and retries. When the
input cannot be read or the kernel refuses the transaction, the rules last
programmed stay in place, the error is logged, written to --status and
answered by /readyz, and the pass is retried with a backoff (doubling from
--interval up to 30s). The kernel is shared: when the nftables generation
moves past the agent's own last write (a firewall reload, nft flush ruleset),
the agent checks its table and programs it again if anything is missing, and
--resync rewrites it whole periodically. deploy/README.md lists what the
agent guarantees under each fault.

Audit log: a policy annotated netpol.io/audit ("all" or "true", "deny",
"allow") has its decisions logged, one JSON line per new connection, to
--audit-log (stdout by default): time, source and destination (pod and IP),
protocol, port, verdict, direction, tier, policy and rule; an implicit
NetworkPolicy deny names the policies that isolate the pod.
--audit-denies logs every deny, annotated or not. A policy annotated
netpol.io/staged: "true" is not enforced: its denies are logged as
"would-deny" (its allows as "would-allow" when it is also audited). The
kernel logs through NFLOG group 100 with a rate limit per rule; repeats of a
connection attempt within 10s are folded into one line ("repeats"), and at
most 100 lines a second are written ("rateLimited" counts the rest).

Record (--record FILE): every new connection of the node's pods, allowed or
denied, is logged by the kernel (NFLOG group 101; no verdict changes) once
per source, destination, protocol and port every 10 s (a chatty or retrying
sender is one line a window; at most 1000 lines a second per verdict), and
folded into one entry per source workload, destination (workload, or
address outside the cluster), port and verdict, with a count (of those
windows) and the first and last time seen. A pod is named by its
controller ("shop/Deployment/web"), so the record outlives rollouts. The
file is one JSON line per entry, replaced atomically every
--record-interval in which the record changed and when the agent stops; an
agent that restarts continues it. It holds at most --record-max-flows
entries of each verdict. Give the files of
every node to netpol suggest --flows to get the policies that allow what
was seen. A damaged file is moved aside (FILE.damaged-TIME) and recording
starts anew; a record that cannot be kept (no NFLOG, the file cannot be
written) is logged and leaves enforcement alone.

Domain names: an admin rule's domainNames allow the addresses that DNS
answers gave the node's pods for those names. The agent holds each UDP
answer of the cluster DNS (the cluster IPs of kube-system/kube-dns, or
--dns-server) to a pod that such a rule governs until the addresses are in
the rule's sets (timeout: the answer's TTL within --dns-min-ttl and
--dns-max-ttl), so the first connection with the answer is allowed; the
query itself meets the policies like any connection. Answers are diverted
with TPROXY (table inet netpol-dns, port --dns-proxy-port, a routing rule on
--dns-mark) only on nodes with such pods. If the agent dies, DNS keeps
working (within 5 s), learned addresses stay until they expire, and new
names are denied. A truncated answer waits while the agent asks its
question over TCP and learns the full answer, which the pod's resolver asks
for next. deploy/README.md, "Domain names", has the details.

Needs root (CAP_NET_ADMIN) and the nft binary; --dry-run needs neither
netlink nor write access: it prints each transaction instead.`,
		Example: `  netpol agent --node node-1 --source /etc/netpol/manifests
  NODE_NAME=node-1 netpol agent --source manifests/ --status /run/netpol/status.json
  netpol agent --node node-1 --source examples/tenants --dry-run --once
  netpol agent --node node-1 --kubeconfig ~/.kube/config --dry-run
  NODE_NAME=node-1 netpol agent --in-cluster --listen :9745
  netpol agent --node node-1 --source manifests/ \
    --audit-denies --audit-log /var/log/netpol/audit.jsonl
  netpol agent --node node-1 --source manifests/ --record /var/lib/netpol/record.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.complete(); err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd)
		},
	}
	o.addFlags(cmd.Flags())
	return cmd
}

func (o *agentOptions) addFlags(fl *pflag.FlagSet) {
	fl.StringVar(&o.cfg.Node, "node", "", "the node whose pods to program (default: $NODE_NAME)")
	fl.StringSliceVar(&o.sources, "source", nil, "manifest files or directories to watch; repeatable")
	fl.StringVar(&o.kubeconfig, "kubeconfig", "", "watch the cluster of this kubeconfig")
	fl.StringVar(&o.kubeContext, "context", "", "the kubeconfig context of the cluster to watch")
	fl.BoolVar(&o.inCluster, "in-cluster", false, "watch the cluster this pod runs in (service account credentials)")
	fl.DurationVar(&o.cfg.Interval, "interval", 500*time.Millisecond, "how often to look at the input for changes (a cluster watch also wakes the agent on every change)")
	fl.DurationVar(&o.cfg.Resync, "resync", 5*time.Minute, "rewrite the whole table this often even when nothing changed (repairs what the drift check cannot see: a rule or element removed inside a chain or set); 0 turns it off")
	fl.StringVar(&o.cfg.Status, "status", "", "file to rewrite with the agent's status (JSON) after every pass")
	fl.StringSliceVar(&o.cfg.PodInterfaces, "pod-interfaces", defaultPodInterfaces, `the node's ends of pod links, as names or globs ("veth*"): a packet from or to one must carry an address of the pod the node routes to that interface, or it is dropped (a forged source, IPv6 link-local, a pod not programmed yet); "" turns the check off`)
	fl.BoolVar(&o.cfg.DryRun, "dry-run", false, "print each nftables transaction instead of applying it")
	fl.BoolVar(&o.elementsViaNft, "elements-via-nft", false, "send every change through nft, set elements too (slower: by default elements, and the chains and sets a change leaves unused, go to the kernel in one netlink batch)")
	fl.StringVar(&o.listen, "listen", "", "serve /metrics (Prometheus), /healthz and /readyz on this address without authentication: 127.0.0.1:9745 (the default in deploy/) keeps them on the node, NODE_IP:9745 on the node's network; to expose metrics beyond, put an authenticating proxy in front (deploy/README.md)")
	fl.BoolVar(&o.reportStatus, "report-status", o.reportStatus, "in a cluster, write conditions on the admin policies, and Events for invalid ones and for admin policy kinds that discovery cannot tell")
	fl.StringVar(&o.auditLog, "audit-log", "-", `where audit lines go: a file (appended to), "-" for stdout, or "off"`)
	fl.BoolVar(&o.cfg.AuditDenies, "audit-denies", false, "log every denied connection, not only those of policies annotated netpol.io/audit")
	fl.StringVar(&o.recordPath, "record", "", "record every new connection of this node's pods, allowed or denied, into this file: one JSON line per (source workload, destination, port, verdict) with counts and first and last seen, rewritten every --record-interval in which it changed; an existing file is continued. netpol suggest --flows reads it")
	fl.DurationVar(&o.recordEvery, "record-interval", 10*time.Second, "how often the --record file is rewritten (and once more when the agent stops)")
	fl.IntVar(&o.recordMax, "record-max-flows", 10000, "the most entries of each verdict the record keeps; connections of new entries past it are counted (netpol_record_dropped_total), not kept")
	fl.BoolVar(&o.dnsProxy, "dns-proxy", o.dnsProxy, "learn the addresses of domainNames rules from the DNS answers local pods receive, holding each answer until they are programmed; false: connections to domainNames are denied")
	fl.IPSliceVar(&o.dnsServers, "dns-server", nil, "the DNS server addresses whose answers teach, as pods ask them (the cluster DNS Service's cluster IPs); default: those of the Service kube-system/kube-dns in the input")
	fl.DurationVar(&o.dnsLimits.MinTTL, "dns-min-ttl", o.dnsLimits.MinTTL, "the least time a learned address stays programmed, whatever the answer's TTL")
	fl.DurationVar(&o.dnsLimits.MaxTTL, "dns-max-ttl", o.dnsLimits.MaxTTL, "the most time a learned address stays programmed without a new answer")
	fl.IntVar(&o.dnsLimits.MaxAddresses, "dns-max-addresses", o.dnsLimits.MaxAddresses, "the most addresses learned on this node at once; past it an answer teaches nothing new (metric netpol_dns_addresses_capped_total, a Warning Event DNSAddressCapReached)")
	fl.Uint16Var(&o.dnsKernel.Port, "dns-proxy-port", o.dnsKernel.Port, "the node port that held DNS answers are diverted to (TPROXY; any address)")
	fl.Uint32Var(&o.dnsKernel.Mark, "dns-mark", o.dnsKernel.Mark, "the packet mark bit that routes held DNS answers to the proxy; pick one that kube-proxy and the CNI leave alone")
	fl.IntVar(&o.dnsKernel.RouteTable, "dns-route-table", o.dnsKernel.RouteTable, "the routing table that the mark's rule looks up (it holds one local default route); the rule and the route are removed when the agent stops")
	fl.Uint16Var(&o.dnsKernel.LogGroup, "dns-log-group", o.dnsKernel.LogGroup, "the NFLOG group that local pods' DNS queries are logged to: an answer teaches only if it answers one")
	fl.IntVar(&o.dnsLimits.MaxNamesPerAddress, "dns-max-names-per-address", o.dnsLimits.MaxNamesPerAddress, "the most names kept for one learned address (the audit log's); names past an address's first count toward --dns-max-addresses")
	// klog's verbosity, as every Kubernetes component spells it.
	klogFlags := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(klogFlags)
	if v := klogFlags.Lookup("v"); v != nil {
		fl.AddGoFlag(v)
		fl.Lookup("v").Shorthand = "v"
	}
	fl.BoolVar(&o.once, "once", false, "program once and exit (exit 1 if that failed)")
	fl.StringVar(&o.anpShape, "anp-shape", "auto", "AdminNetworkPolicy peer shape: auto, v0.1.7 or kep")
	fl.BoolVar(&o.cfg.Pipeline.LegacyNamespaceIsolation, "legacy-namespace-isolation", false, "honour the v1beta1 namespace DefaultDeny annotation for ingress")
	fl.IntVar(&o.cfg.Pipeline.ReplicaCap, "replica-cap", 0, "most pods modelled per workload (default 10)")
}

// defaultPodInterfaces are the host-side names of pod links that CNIs give
// when netpol enforces policy alone beside them: veth* (the ptp and bridge
// plugins' veths, kindnet's, the lab's), cali* (Calico's), and cni0 (the
// bridge of the bridge plugin and of flannel, which the IP hooks see as
// the interface of every pod behind it).
var defaultPodInterfaces = []string{"veth*", "cali*", "cni0"}

// complete fills in what the flags leave to the environment and reads
// them into their types.
func (o *agentOptions) complete() error {
	if o.cfg.Node == "" {
		o.cfg.Node = os.Getenv("NODE_NAME")
	}
	shape, err := source.ParseANPShape(o.anpShape)
	if err != nil {
		return usageError{err}
	}
	// The agent keeps every pod of the cluster: as much as policy reads.
	o.source = source.Options{ANPShape: shape, CompactPods: true}
	for _, ip := range o.dnsServers {
		a, _ := netip.AddrFromSlice(ip)
		o.cfg.DNSServers = append(o.cfg.DNSServers, a.Unmap())
	}
	return nil
}

// cluster reports whether the input is a cluster's API server.
func (o *agentOptions) cluster() bool {
	return o.inCluster || o.kubeconfig != "" || o.kubeContext != ""
}

// validate refuses flags that contradict each other or leave no input.
func (o *agentOptions) validate() error {
	switch {
	case o.cfg.Node == "":
		return usageError{fmt.Errorf("--node is required (or set NODE_NAME)")}
	case len(o.sources) > 0 && o.cluster():
		return usageError{fmt.Errorf("read either manifests (--source) or a cluster (--kubeconfig, --context, --in-cluster), not both")}
	case len(o.sources) == 0 && !o.cluster():
		return usageError{fmt.Errorf("no input: give --source DIR, or a cluster with --kubeconfig, --context or --in-cluster")}
	case o.recordPath != "" && o.cfg.DryRun:
		return usageError{fmt.Errorf("--record: a dry run programs no kernel, so nothing is recorded")}
	case slices.ContainsFunc(o.cfg.PodInterfaces, func(g string) bool { return !compile.ValidInterfaceGlob(g) }):
		return usageError{fmt.Errorf("--pod-interfaces %q: want interface names of 1-15 letters, digits and _.@-, each with an optional * at the end", o.cfg.PodInterfaces)}
	case o.recordEvery <= 0 || o.recordMax <= 0:
		return usageError{fmt.Errorf("--record-interval and --record-max-flows must be positive")}
	}
	return nil
}

// run wires the input, the kernel and the agent, and runs it until a
// signal (or once).
func (o *agentOptions) run(cmd *cobra.Command) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rec, err := o.input(ctx, cmd)
	if err != nil {
		return err
	}
	iface, closeKernel, err := o.kernel(ctx, cmd, rec)
	if err != nil {
		return err
	}
	defer closeKernel()
	out := cmd.OutOrStdout()
	a := agent.New(o.cfg, o.renderer(iface), func(tx string) { fmt.Fprint(out, tx) })
	if o.listen != "" {
		stopServer, err := serve(o.listen, a.Handler())
		if err != nil {
			return err
		}
		defer stopServer()
	}
	if o.once {
		return a.Pass(ctx)
	}
	return a.Run(ctx)
}

// input sets the agent's input: the manifests, or a cluster's watch with
// its status reporter. It returns the recorder of Events (nil: none).
func (o *agentOptions) input(ctx context.Context, cmd *cobra.Command) (record.EventRecorder, error) {
	if !o.cluster() {
		o.cfg.Input = &agent.Files{Paths: o.sources, Options: o.source}
		return nil, nil
	}
	var rc *rest.Config
	var err error
	if o.inCluster {
		rc, err = rest.InClusterConfig()
	} else {
		rc, err = restConfig(o.kubeconfig, o.kubeContext)
	}
	if err != nil {
		return nil, usageError{fmt.Errorf("no cluster: %w", err)}
	}
	// Events only where status is reported: a dry run or
	// --report-status=false writes nothing to the cluster.
	var rec record.EventRecorder
	if o.reportStatus && !o.cfg.DryRun {
		if rec, err = eventRecorder(ctx, rc, o.cfg.Node); err != nil {
			return nil, err
		}
	}
	w, err := kube.NewWatchWithOptions(rc, kube.WatchOptions{Source: o.source, Recorder: rec, Node: o.cfg.Node})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "netpol agent: listing the cluster at %s...\n", rc.Host)
	if err := w.Start(ctx); err != nil {
		return nil, err
	}
	o.cfg.Input = w
	// A pod the API server has no address for yet gets none: it is
	// programmed when its address is known, and never as one made up.
	o.cfg.Pipeline.Observed = true
	if o.dnsProxy && len(o.cfg.DNSServers) == 0 && !o.cfg.DryRun {
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			return nil, err
		}
		d := &clusterDNS{cs: cs}
		go d.run(ctx)
		o.cfg.ClusterDNS = d.current
	}
	if rec != nil {
		if o.cfg.Reporter, err = statusWriter(rc, o.cfg.Node, w, rec); err != nil {
			return nil, err
		}
	}
	return rec, nil
}

// kernel returns the nftables interface to program through, and starts
// what else works in the kernel (conntrack cuts, the DNS proxy, the audit
// log); a dry run gets a fake and nothing else. The returned function
// closes what was started.
func (o *agentOptions) kernel(ctx context.Context, cmd *cobra.Command, rec record.EventRecorder) (knftables.Interface, func(), error) {
	if o.cfg.DryRun {
		return knftables.NewFake(knftables.InetFamily, nft.TableName), func() {}, nil
	}
	iface, err := knftables.New(knftables.InetFamily, nft.TableName)
	if err != nil {
		return nil, nil, fmt.Errorf("nftables is not usable here: %w", err)
	}
	o.cfg.Conntrack = dataplane.Conntrack{}
	o.cfg.Generation = dataplane.Generation
	stopDNS := func() {}
	o.cfg.PodLinks = dataplane.RouteDevices
	o.cfg.LocalAddrs = dataplane.LocalAddrs
	if o.dnsProxy {
		p, stop, err := startDNSProxy(ctx, o.cfg.Node, o.dnsKernel, o.dnsLimits, rec)
		if err != nil {
			return nil, nil, err
		}
		o.cfg.DNS, stopDNS = p, stop
	}
	closeAudit, closeRecord := func() {}, func() {}
	if o.auditLog != "off" {
		if closeAudit, err = startAudit(cmd, &o.cfg, o.auditLog); err != nil {
			return nil, nil, err
		}
	}
	if o.recordPath != "" {
		closeRecord = o.startRecord(ctx)
	}
	return iface, func() { closeRecord(); closeAudit(); stopDNS() }, nil
}

// startRecord opens the kernel's record group, continues the record file,
// and rewrites it every --record-interval until the returned function is
// called, which writes it a last time.
func (o *agentOptions) startRecord(ctx context.Context) func() {
	// Recording costs the record, never enforcement: when its file cannot
	// be written the agent goes on without it, and says why.
	rec := observed.New(observed.Options{MaxFlows: o.recordMax, Node: o.cfg.Node})
	err := os.MkdirAll(filepath.Dir(o.recordPath), 0o755)
	if err == nil {
		var aside string
		if aside, err = rec.Continue(o.recordPath); aside != "" {
			klog.InfoS("The record of observed traffic was damaged: moved aside, recording anew", "file", o.recordPath, "movedTo", aside)
		}
	}
	if err == nil {
		_, err = rec.SaveIfChanged(o.recordPath)
	}
	if err != nil {
		klog.ErrorS(err, "No record of observed traffic: its file cannot be continued", "file", o.recordPath)
		return func() {}
	}
	r, err := nflog.Open(nft.RecordGroup)
	if err != nil {
		klog.ErrorS(err, "No record of observed traffic: the kernel's log group cannot be read", "group", nft.RecordGroup)
		return func() {}
	}
	o.cfg.Record = rec
	go func() {
		err := rec.Run(r, func(err error) { klog.ErrorS(err, "Record of observed traffic") })
		klog.V(2).InfoS("Record reader stopped", "reason", err)
	}()
	save := func() {
		if _, err := rec.SaveIfChanged(o.recordPath); err != nil {
			klog.ErrorS(err, "The record of observed traffic could not be written", "file", o.recordPath)
		}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(o.recordEvery)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				save()
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		r.Close()
		save()
	}
}

// renderer returns the nftables renderer, set for this kernel.
func (o *agentOptions) renderer(iface knftables.Interface) *nft.Renderer {
	r := nft.New(iface)
	if o.cfg.DryRun {
		return r
	}
	if !o.elementsViaNft {
		r.WriteElementsWith(dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName})
	}
	r.ListObjectsWith(dataplane.Objects{Family: unix.NFPROTO_INET, Table: nft.TableName})
	release := kernelRelease()
	if nft.NeedsDeleteLater(release) {
		klog.InfoS("Kernel before 6.2, or release unknown: chains and sets a change leaves unused are deleted in a later transaction", "release", release)
		r.DeleteLater(true)
	}
	return r
}

// kernelRelease is uname -r, or "unknown".
func kernelRelease() string {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return "unknown"
	}
	return unix.ByteSliceToString(uts.Release[:])
}

// clusterDNS follows the cluster IPs of the Service kube-system/kube-dns,
// the servers whose answers teach domainNames addresses (the agent
// watches no Services; deploy/dns-role.yaml lets it get this one): read
// at start, again every clusterDNSEvery, and sooner after a failure. Until
// it is read, domainNames connections are denied and the agent is not
// ready (agent.Config.ClusterDNS).
type clusterDNS struct {
	cs kubernetes.Interface

	mu    sync.Mutex
	addrs []netip.Addr
	err   error
}

// How often the cluster DNS is read: it rarely changes, and a failed
// read is retried from clusterDNSRetry, doubling up to clusterDNSEvery.
const (
	clusterDNSEvery = 30 * time.Second
	clusterDNSRetry = time.Second
)

func (d *clusterDNS) run(ctx context.Context) {
	retry := clusterDNSRetry
	for {
		wait := clusterDNSEvery
		if d.read(ctx) != nil {
			wait, retry = retry, min(2*retry, clusterDNSEvery)
		} else {
			retry = clusterDNSRetry
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// read reads the Service once; a failure keeps no addresses (the Service
// may be gone), and is logged when it is new.
func (d *clusterDNS) read(ctx context.Context) error {
	addrs, err := serviceAddrs(ctx, d.cs, "kube-system", "kube-dns")
	d.mu.Lock()
	changed := !slices.Equal(addrs, d.addrs) || (err == nil) != (d.err == nil)
	d.addrs, d.err = addrs, err
	d.mu.Unlock()
	switch {
	case changed && err == nil:
		klog.InfoS("DNS answers of the cluster DNS teach domainNames addresses", "service", "kube-system/kube-dns", "addresses", addrs)
	case changed:
		klog.ErrorS(err, "No cluster DNS to learn domainNames addresses from: their connections are denied until it can be read; or give --dns-server")
	}
	return err
}

// current is what the last read found.
func (d *clusterDNS) current() ([]netip.Addr, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.addrs == nil && d.err == nil {
		return nil, fmt.Errorf("Service kube-system/kube-dns not read yet")
	}
	return d.addrs, d.err
}

// serviceAddrs returns the cluster IPs of one Service.
func serviceAddrs(ctx context.Context, cs kubernetes.Interface, namespace, name string) ([]netip.Addr, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	svc, err := cs.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var addrs []netip.Addr
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err == nil {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("Service %s/%s has no cluster IP", namespace, name)
	}
	return addrs, nil
}

// startDNSProxy starts the proxy that learns domainNames addresses
// (package dnsproxy) in the background. A kernel that cannot divert
// answers (no TPROXY) costs domainNames, not enforcement: the error is
// logged and their connections are denied. The returned function stops
// it and waits until it has taken its table and routing away (at most
// dnsStopTimeout).
func startDNSProxy(ctx context.Context, node string, k dnsproxy.Kernel, limits dnsproxy.Limits, rec record.EventRecorder) (*dnsproxy.Proxy, func(), error) {
	divert, err := knftables.New(knftables.InetFamily, dnsproxy.TableName)
	if err != nil {
		return nil, nil, fmt.Errorf("nftables is not usable here: %w", err)
	}
	// Every answer must push its addresses' expiry out again, also when
	// it repeats the TTL that taught them.
	elements := dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName,
		RefreshByDelete: !dataplane.RefreshesInPlace(kernelRelease())}
	p := dnsproxy.New(dnsproxy.Config{Kernel: k, Limits: limits, NFT: divert,
		Write:  func(elems []dataplane.Element) error { return elements.Write(elems, dataplane.Unused{}) },
		CapHit: capReached(node, rec)})
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.Run(ctx); err != nil {
			klog.ErrorS(err, "No DNS proxy: addresses of domainNames rules are not learned, their connections are denied", "node", node)
		}
	}()
	return p, func() {
		cancel()
		select {
		case <-done:
		case <-time.After(dnsStopTimeout):
			klog.InfoS("The DNS proxy did not stop in time; its routing rule may stay", "mark", k.Mark, "table", k.RouteTable)
		}
	}, nil
}

// dnsStopTimeout bounds how long an agent that stops waits for the DNS
// proxy to remove its table and routing.
const dnsStopTimeout = 5 * time.Second

// capReached says, in the log and with a Warning Event about the node,
// that DNS answers teach nothing new because --dns-max-addresses are
// learned (the proxy calls it at most once a minute).
func capReached(node string, rec record.EventRecorder) func(dnsproxy.Stats) {
	return func(s dnsproxy.Stats) {
		klog.InfoS("DNS answers teach no new address: the node's cap is reached", "node", node, "addresses", s.Addresses, "capped", s.CapHits)
		if rec != nil {
			ref := &corev1.ObjectReference{Kind: "Node", Name: node, UID: types.UID(node)}
			rec.Eventf(ref, corev1.EventTypeWarning, "DNSAddressCapReached",
				"%d addresses learned from DNS answers, the most --dns-max-addresses allows: connections to addresses of new answers for domainNames are denied", s.Addresses)
		}
	}
}

// startAudit opens the kernel's log group and the audit log, and reads the
// one into the other until the returned function is called. A kernel
// without NFLOG costs the audit log, not enforcement: the error is logged.
func startAudit(cmd *cobra.Command, cfg *agent.Config, path string) (func(), error) {
	w := cmd.OutOrStdout()
	closeFile := func() {}
	if path != "-" {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
		if err != nil {
			return nil, fmt.Errorf("--audit-log: %w", err)
		}
		w, closeFile = f, func() { f.Close() }
	}
	r, err := nflog.Open(nft.LogGroup)
	if err != nil {
		klog.ErrorS(err, "No audit log: the kernel's log group cannot be read", "group", nft.LogGroup)
		closeFile()
		return func() {}, nil
	}
	opts := audit.Options{}
	if cfg.DNS != nil {
		opts.NamesOf = cfg.DNS.NamesOf
	}
	l := audit.New(w, opts)
	cfg.Audit = l
	go func() {
		err := l.Run(r, func(err error) { klog.ErrorS(err, "Audit log") })
		klog.V(2).InfoS("Audit log reader stopped", "reason", err)
	}()
	return func() { r.Close(); closeFile() }, nil
}
