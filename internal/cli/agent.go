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
	"syscall"
	"time"

	"github.com/spf13/cobra"
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
	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/dataplane/nflog"
	"github.com/netpol/netpol/internal/dnsproxy"
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

func newAgent() *cobra.Command {
	var cfg agent.Config
	var sources []string
	var anpShape, kubeconfig, kubeContext string
	var inCluster, once, elementsViaNft bool
	var listen, auditLog string
	reportStatus := true
	dnsProxy, dnsKernel, dnsLimits := true, dnsproxy.DefaultKernel, dnsproxy.DefaultLimits
	var dnsServers []net.IP
	cmd := &cobra.Command{
		Use:   "agent --node NAME (--source DIR | --kubeconfig FILE | --in-cluster)",
		Short: "Enforce the policies for the pods of one node with nftables",
		Long: `agent programs the kernel of one node: it reads the manifests under --source,
or watches a Kubernetes API server (--kubeconfig, --context, or --in-cluster
when it runs as a DaemonSet pod), compiles what the node's pods must enforce
(see netpol compile) and loads it into the nftables table "inet netpol" in
one transaction. Then it watches the source: on every change it sends only
the difference (a pod joining a selector is one set element, sent straight
over netlink; a changed policy adds only its new chains, through nft, and the
netlink batch that points its pods at them deletes the old ones), and it
deletes the conntrack entries of connections that are now denied, judged by
the backend they reached (after a Service's DNAT), so that existing
connections are cut as well as new ones refused. A cut connection is held in
the kernel (sets cut-4, cut-6) so that neither side re-opens it by sending
next; the hold lasts while packets keep coming and two minutes after.

An invalid object is left out (the others stay enforced) and reported; in a
cluster: every AdminNetworkPolicy, BaselineAdminNetworkPolicy and
ClusterNetworkPolicy gets the conditions Accepted and Programmed, a node that
cannot program gets its own netpol.io/NotProgrammed.<node> condition, and an
invalid policy gets a Warning Event (reason InvalidPolicy).

On start it takes over whatever "inet netpol" holds (after a restart or a
crash) in the same single transaction: there is no moment without rules and
no stale rule is left. While the API server is unreachable the rules last
programmed stay, and the watch catches up within seconds when it is back.
The admin policy kinds are CRDs: one whose CRD is not installed has no
policies, and is looked for again every minute; while the agent cannot
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

Needs root (CAP_NET_ADMIN) and the nft binary; --dry-run needs neither
netlink nor write access: it prints each transaction instead.`,
		Example: `  netpol agent --node node-1 --source /etc/netpol/manifests
  NODE_NAME=node-1 netpol agent --source manifests/ --status /run/netpol/status.json
  netpol agent --node node-1 --source examples/tenants --dry-run --once
  netpol agent --node node-1 --kubeconfig ~/.kube/config --dry-run
  NODE_NAME=node-1 netpol agent --in-cluster --listen :9745
  netpol agent --node node-1 --source manifests/ --audit-denies --audit-log /var/log/netpol/audit.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Node == "" {
				cfg.Node = os.Getenv("NODE_NAME")
			}
			if cfg.Node == "" {
				return usageError{fmt.Errorf("--node is required (or set NODE_NAME)")}
			}
			shape, err := source.ParseANPShape(anpShape)
			if err != nil {
				return usageError{err}
			}
			opts := source.Options{ANPShape: shape}
			for _, ip := range dnsServers {
				a, _ := netip.AddrFromSlice(ip)
				cfg.DNSServers = append(cfg.DNSServers, a.Unmap())
			}
			var rec record.EventRecorder // nil: no Events
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			cluster := inCluster || kubeconfig != "" || kubeContext != ""
			switch {
			case len(sources) > 0 && cluster:
				return usageError{fmt.Errorf("read either manifests (--source) or a cluster (--kubeconfig, --context, --in-cluster), not both")}
			case len(sources) > 0:
				cfg.Input = &agent.Files{Paths: sources, Options: opts}
			case cluster:
				var rc *rest.Config
				if inCluster {
					rc, err = rest.InClusterConfig()
				} else {
					rc, err = restConfig(kubeconfig, kubeContext)
				}
				if err != nil {
					return usageError{fmt.Errorf("no cluster: %w", err)}
				}
				// Events only where status is reported: a dry run or
				// --report-status=false writes nothing to the cluster.
				if reportStatus && !cfg.DryRun {
					if rec, err = eventRecorder(ctx, rc, cfg.Node); err != nil {
						return err
					}
				}
				w, err := kube.NewWatchWithOptions(rc, kube.WatchOptions{Source: opts, Recorder: rec, Node: cfg.Node})
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "netpol agent: listing the cluster at %s...\n", rc.Host)
				if err := w.Start(ctx); err != nil {
					return err
				}
				cfg.Input = w
				if dnsProxy && len(cfg.DNSServers) == 0 && !cfg.DryRun {
					cfg.DNSServers = clusterDNSServers(ctx, rc)
				}
				if rec != nil {
					if cfg.Reporter, err = statusWriter(rc, cfg.Node, w, rec); err != nil {
						return err
					}
				}
			default:
				return usageError{fmt.Errorf("no input: give --source DIR, or a cluster with --kubeconfig, --context or --in-cluster")}
			}
			var iface knftables.Interface
			if cfg.DryRun {
				iface = knftables.NewFake(knftables.InetFamily, nft.TableName)
			} else {
				if iface, err = knftables.New(knftables.InetFamily, nft.TableName); err != nil {
					return fmt.Errorf("nftables is not usable here: %w", err)
				}
				cfg.Conntrack = dataplane.Conntrack{}
				cfg.Generation = dataplane.Generation
				if dnsProxy {
					p, err := startDNSProxy(ctx, cfg.Node, dnsKernel, dnsLimits, rec)
					if err != nil {
						return err
					}
					cfg.DNS = p
				}
				if auditLog != "off" {
					closeAudit, err := startAudit(cmd, &cfg, auditLog)
					if err != nil {
						return err
					}
					defer closeAudit()
				}
			}
			renderer := nft.New(iface)
			if !cfg.DryRun && !elementsViaNft {
				renderer.WriteElementsWith(dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName})
			}
			if !cfg.DryRun {
				var uts unix.Utsname
				release := "unknown"
				if err := unix.Uname(&uts); err == nil {
					release = unix.ByteSliceToString(uts.Release[:])
				}
				if nft.NeedsDeleteLater(release) {
					klog.InfoS("Kernel before 6.2, or release unknown: chains and sets a change leaves unused are deleted in a later transaction", "release", release)
					renderer.DeleteLater(true)
				}
			}
			out := cmd.OutOrStdout()
			a := agent.New(cfg, renderer, func(tx string) { fmt.Fprint(out, tx) })
			if listen != "" {
				stopServer, err := serve(listen, a.Handler())
				if err != nil {
					return err
				}
				defer stopServer()
			}
			if once {
				return a.Pass(ctx)
			}
			return a.Run(ctx)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.Node, "node", "", "the node whose pods to program (default: $NODE_NAME)")
	fl.StringSliceVar(&sources, "source", nil, "manifest files or directories to watch; repeatable")
	fl.StringVar(&kubeconfig, "kubeconfig", "", "watch the cluster of this kubeconfig")
	fl.StringVar(&kubeContext, "context", "", "the kubeconfig context of the cluster to watch")
	fl.BoolVar(&inCluster, "in-cluster", false, "watch the cluster this pod runs in (service account credentials)")
	fl.DurationVar(&cfg.Interval, "interval", 500*time.Millisecond, "how often to look at the input for changes (a cluster watch also wakes the agent on every change)")
	fl.DurationVar(&cfg.Resync, "resync", 5*time.Minute, "rewrite the whole table this often even when nothing changed (repairs what the drift check cannot see: a rule or element removed inside a chain or set); 0 turns it off")
	fl.StringVar(&cfg.Status, "status", "", "file to rewrite with the agent's status (JSON) after every pass")
	fl.BoolVar(&cfg.DryRun, "dry-run", false, "print each nftables transaction instead of applying it")
	fl.BoolVar(&elementsViaNft, "elements-via-nft", false, "send every change through nft, set elements too (slower: by default elements, and the chains and sets a change leaves unused, go to the kernel in one netlink batch)")
	fl.StringVar(&listen, "listen", "", "serve /metrics (Prometheus), /healthz and /readyz on this address without authentication: 127.0.0.1:9745 (the default in deploy/) keeps them on the node, NODE_IP:9745 on the node's network; to expose metrics beyond, put an authenticating proxy in front (deploy/README.md)")
	fl.BoolVar(&reportStatus, "report-status", reportStatus, "in a cluster, write conditions on the admin policies, and Events for invalid ones and for admin policy kinds that discovery cannot tell")
	fl.StringVar(&auditLog, "audit-log", "-", `where audit lines go: a file (appended to), "-" for stdout, or "off"`)
	fl.BoolVar(&cfg.AuditDenies, "audit-denies", false, "log every denied connection, not only those of policies annotated netpol.io/audit")
	fl.BoolVar(&dnsProxy, "dns-proxy", dnsProxy, "learn the addresses of domainNames rules from the DNS answers local pods receive, holding each answer until they are programmed; false: connections to domainNames are denied")
	fl.IPSliceVar(&dnsServers, "dns-server", nil, "the DNS server addresses whose answers teach, as pods ask them (the cluster DNS Service's cluster IPs); default: those of the Service kube-system/kube-dns in the input")
	fl.DurationVar(&dnsLimits.MinTTL, "dns-min-ttl", dnsLimits.MinTTL, "the least time a learned address stays programmed, whatever the answer's TTL")
	fl.DurationVar(&dnsLimits.MaxTTL, "dns-max-ttl", dnsLimits.MaxTTL, "the most time a learned address stays programmed without a new answer")
	fl.IntVar(&dnsLimits.MaxAddresses, "dns-max-addresses", dnsLimits.MaxAddresses, "the most addresses learned on this node at once; past it an answer teaches nothing new (metric netpol_dns_addresses_capped_total, a Warning Event DNSAddressCapReached)")
	fl.Uint16Var(&dnsKernel.Port, "dns-proxy-port", dnsKernel.Port, "the node port that held DNS answers are diverted to (TPROXY; any address)")
	fl.Uint32Var(&dnsKernel.Mark, "dns-mark", dnsKernel.Mark, "the packet mark bit that routes held DNS answers to the proxy; pick one that kube-proxy and the CNI leave alone")
	fl.IntVar(&dnsKernel.RouteTable, "dns-route-table", dnsKernel.RouteTable, "the routing table that the mark's rule looks up (it holds one local default route)")
	// klog's verbosity, as every Kubernetes component spells it.
	klogFlags := goflag.NewFlagSet("klog", goflag.ContinueOnError)
	klog.InitFlags(klogFlags)
	if v := klogFlags.Lookup("v"); v != nil {
		fl.AddGoFlag(v)
		fl.Lookup("v").Shorthand = "v"
	}
	fl.BoolVar(&once, "once", false, "program once and exit (exit 1 if that failed)")
	fl.StringVar(&anpShape, "anp-shape", "auto", "AdminNetworkPolicy peer shape: auto, v0.1.7 or kep")
	fl.BoolVar(&cfg.Pipeline.LegacyNamespaceIsolation, "legacy-namespace-isolation", false, "honour the v1beta1 namespace DefaultDeny annotation for ingress")
	fl.IntVar(&cfg.Pipeline.ReplicaCap, "replica-cap", 0, "most pods modelled per workload (default 10)")
	return cmd
}

// clusterDNSServers reads the cluster IPs of the Service kube-system/
// kube-dns, the servers whose answers teach domainNames addresses (the
// agent watches no Services; deploy/dns-role.yaml lets it get this one).
// None, with the reason logged, when it cannot: domainNames connections
// are then denied until --dns-server names the servers.
func clusterDNSServers(ctx context.Context, rc *rest.Config) []netip.Addr {
	cs, err := kubernetes.NewForConfig(rc)
	if err == nil {
		var addrs []netip.Addr
		if addrs, err = serviceAddrs(ctx, cs, "kube-system", "kube-dns"); err == nil {
			klog.InfoS("DNS answers of the cluster DNS teach domainNames addresses", "service", "kube-system/kube-dns", "addresses", addrs)
			return addrs
		}
	}
	klog.ErrorS(err, "No cluster DNS to learn domainNames addresses from: their connections are denied; give --dns-server")
	return nil
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
// logged and their connections are denied.
func startDNSProxy(ctx context.Context, node string, k dnsproxy.Kernel, limits dnsproxy.Limits, rec record.EventRecorder) (*dnsproxy.Proxy, error) {
	divert, err := knftables.New(knftables.InetFamily, dnsproxy.TableName)
	if err != nil {
		return nil, fmt.Errorf("nftables is not usable here: %w", err)
	}
	elements := dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName}
	p := dnsproxy.New(dnsproxy.Config{Kernel: k, Limits: limits, NFT: divert,
		Write: func(elems []dataplane.Element) error { return elements.Write(elems, dataplane.Unused{}) },
		CapHit: func(s dnsproxy.Stats) {
			klog.InfoS("DNS answers teach no new address: the node's cap is reached", "node", node, "addresses", s.Addresses, "capped", s.CapHits)
			if rec != nil {
				ref := &corev1.ObjectReference{Kind: "Node", Name: node, UID: types.UID(node)}
				rec.Eventf(ref, corev1.EventTypeWarning, "DNSAddressCapReached",
					"%d addresses learned from DNS answers, the most --dns-max-addresses allows: connections to addresses of new answers for domainNames are denied", s.Addresses)
			}
		}})
	go func() {
		if err := p.Run(ctx); err != nil {
			klog.ErrorS(err, "No DNS proxy: addresses of domainNames rules are not learned, their connections are denied", "node", node)
		}
	}()
	return p, nil
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
