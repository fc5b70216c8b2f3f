// Package synth generates synthetic clusters for benchmarks: namespaces,
// pods, NetworkPolicies and admin policies shaped like a real multi-team
// cluster, deterministic for a given size. It hands over typed objects as
// the source decoder does, so it sits beside the sources in the data flow;
// only tests and benchmarks import it.
package synth

import (
	"fmt"
	"math/rand"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/network-policy-api/apis/v1alpha1"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/source"
)

// Size is the shape of a synthetic cluster.
type Size struct {
	Name       string
	Namespaces int // kube-system included
	Pods       int // the kube-dns pods included
	NetPols    int
	Admin      int // AdminNetworkPolicies; the BaselineAdminNetworkPolicy "default" comes on top
	// Nodes, when not 0, adds Node objects node-001... (198.19.255.N, and
	// past 254 nodes 198.19.240.0/20) and places the pods on them
	// round-robin.
	Nodes int
	// Running gives every pod phase Running and an address, as an API
	// server holds them (see podAddress), instead of leaving netpol to
	// assign addresses: the agent's scale benchmarks read clusters as a
	// node does.
	Running bool
}

// The sizes of the benchmark issue: (a) 1k pods / 1k policies, (b) 10k pods /
// 10k NetworkPolicies / 100 admin policies, (c) 100k pods / 75k
// NetworkPolicies / 25k namespaces. Size2k is twice the 1k cluster, the
// size at which the issue measured the matrix's memory; Size30k is the 100k
// cluster's shape at 30k pods, for the growth of the class view.
var (
	Size1k   = Size{Name: "1k", Namespaces: 50, Pods: 1000, NetPols: 990, Admin: 10}
	Size2k   = Size{Name: "2k", Namespaces: 100, Pods: 2000, NetPols: 1980, Admin: 20}
	Size10k  = Size{Name: "10k", Namespaces: 500, Pods: 10000, NetPols: 10000, Admin: 100}
	Size30k  = Size{Name: "30k", Namespaces: 7500, Pods: 30000, NetPols: 22500, Admin: 300}
	Size100k = Size{Name: "100k", Namespaces: 25000, Pods: 100000, NetPols: 75000, Admin: 1000}
)

// The agent's scale sizes: pods running with addresses, spread over nodes
// at about 100 a node. Scale150k is the 100k cluster grown to what
// Kubernetes supports (150,000 pods; 5,000 nodes would give 30 a node, so
// 1,500 nodes is the denser case for one node), with 75,000
// NetworkPolicies and 1,500 admin policies.
var (
	Scale10k  = Size{Name: "scale-10k", Namespaces: 500, Pods: 10000, NetPols: 10000, Admin: 100, Nodes: 100, Running: true}
	Scale15k  = Size{Name: "scale-15k", Namespaces: 750, Pods: 15000, NetPols: 15000, Admin: 150, Nodes: 150, Running: true}
	Scale30k  = Size{Name: "scale-30k", Namespaces: 7500, Pods: 30000, NetPols: 22500, Admin: 300, Nodes: 300, Running: true}
	Scale150k = Size{Name: "scale-150k", Namespaces: 37500, Pods: 150000, NetPols: 75000, Admin: 1500, Nodes: 1500, Running: true}
)

// Small vocabularies, so that pods share labels and therefore behaviours, as
// the replicas and sibling services of a real cluster do.
var (
	genTeams = []string{"payments", "checkout", "search", "identity", "catalog", "ads", "ml", "data",
		"platform", "observability", "mobile", "web", "billing", "growth", "infra", "security"}
	genEnvs     = []string{"prod", "prod", "prod", "staging", "staging", "dev"} // weighted
	genVersions = []string{"v1", "v1", "v2", "v3"}
	genApps     = []genApp{
		{"frontend", "web", []corev1.ContainerPort{genTCP("http", 80), genTCP("https", 443)}},
		{"gateway", "web", []corev1.ContainerPort{genTCP("http", 80), genTCP("https", 443), genTCP("https-alt", 8443)}},
		{"api", "app", []corev1.ContainerPort{genTCP("http", 8080), genTCP("metrics", 9090)}},
		{"backend", "app", []corev1.ContainerPort{genTCP("http", 8080), genTCP("grpc", 9000)}},
		{"auth", "app", []corev1.ContainerPort{genTCP("https", 443), genTCP("http", 8080)}},
		{"search", "app", []corev1.ContainerPort{genTCP("http", 9200), genTCP("transport", 9300)}},
		{"worker", "app", []corev1.ContainerPort{genTCP("metrics", 9090)}},
		{"payments", "app", []corev1.ContainerPort{genTCP("https", 443), genTCP("http-alt", 8080)}},
		{"db", "data", []corev1.ContainerPort{genTCP("postgres", 5432)}},
		{"cache", "data", []corev1.ContainerPort{genTCP("redis", 6379)}},
		{"queue", "data", []corev1.ContainerPort{genTCP("amqp", 5672), genTCP("http", 15672)}},
		{"resolver", "app", []corev1.ContainerPort{genUDP("dns", 53), genTCP("dns-tcp", 53)}},
	}
	// Distinct IP blocks stay few, as in real clusters (a handful of
	// corporate ranges and "the internet except the cluster").
	genBlocks = []networkingv1.IPBlock{
		{CIDR: "198.18.0.0/15", Except: []string{"198.19.0.0/16"}},
		{CIDR: "198.18.0.0/15", Except: []string{"198.18.0.0/17", "198.19.128.0/17"}},
		{CIDR: "198.18.0.0/16", Except: []string{"198.18.64.0/18"}},
		{CIDR: "0.0.0.0/0", Except: []string{"198.18.0.0/15"}},
		{CIDR: "10.0.0.0/8"},
		{CIDR: "203.0.113.0/24"},
	}
)

type genApp struct {
	name, tier string
	ports      []corev1.ContainerPort
}

func genTCP(name string, port int32) corev1.ContainerPort {
	return corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP}
}

func genUDP(name string, port int32) corev1.ContainerPort {
	return corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolUDP}
}

// Cluster makes a synthetic cluster as typed objects, the way the decoder
// would hand them over. It is deterministic for a given size.
func Cluster(size Size) []source.Object {
	g := &generator{r: rand.New(rand.NewSource(20240611)), size: size,
		objs: make([]source.Object, 0, size.Nodes+size.Namespaces+size.Pods+size.NetPols+size.Admin+1)}
	g.nodes()
	g.namespaces()
	g.pods()
	g.netpols()
	g.adminPolicies()
	g.baseline()
	return g.objs
}

type generator struct {
	r      *rand.Rand
	size   Size
	objs   []source.Object
	nsName []string
	nsApps [][]string // apps running in each namespace
	placed int        // pods made so far
}

func (g *generator) add(kind, namespace, name string, v any) {
	g.objs = append(g.objs, source.Object{
		Origin:    diag.Origin{File: "generated/" + g.size.Name, Doc: 1, Item: len(g.objs) + 1},
		Kind:      kind,
		Namespace: namespace,
		Name:      name,
		Value:     v,
	})
}

func (g *generator) pick(s []string) string { return s[g.r.Intn(len(s))] }

// NodeName is the name of node i (from 0) of a cluster with nodes.
func NodeName(i int) string { return fmt.Sprintf("node-%03d", i+1) }

// MaxNodes is the most nodes a synthetic cluster can have: their addresses
// are 198.19.255.1-254, then 198.19.240.1-198.19.254.254.
const MaxNodes = 254 + 15*254

// nodeAddress is node i's address: the first 254 in 198.19.255.0/24, as
// they always were, the others below it.
func nodeAddress(i int) string {
	if i < 254 {
		return fmt.Sprintf("198.19.255.%d", i+1)
	}
	i -= 254
	return fmt.Sprintf("198.19.%d.%d", 240+i/254, 1+i%254)
}

func (g *generator) nodes() {
	if g.size.Nodes > MaxNodes {
		panic(fmt.Sprintf("synth: at most %d nodes", MaxNodes))
	}
	for i := 0; i < g.size.Nodes; i++ {
		g.add("Node", "", NodeName(i), &corev1.Node{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{Name: NodeName(i)},
			Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: nodeAddress(i)}}},
		})
	}
}

// podAddresses are the addresses of the n-th running pod (from 0). IPv4
// addresses come from 198.18.0.0 up to 198.19.239.255 in an order that
// scatters consecutive pods (n times an odd stride, modulo the range), as
// per-node address blocks scatter a workload's replicas; the pods past the
// range's 126,976 addresses get an IPv6 address only (fd00:18::/64), the way
// a cluster that outgrew its IPv4 range adds IPv6.
func podAddresses(n int) []corev1.PodIP {
	const v4Count = 2*65536 - 16*256 // 198.18.0.0/15 without 198.19.240.0/20
	if n < v4Count {
		v := uint64(n) * 40503 % v4Count
		return []corev1.PodIP{{IP: fmt.Sprintf("198.%d.%d.%d", 18+v>>16, v>>8&255, v&255)}}
	}
	return []corev1.PodIP{{IP: fmt.Sprintf("fd00:18::%x:%x", n>>16, n&0xffff)}}
}

func (g *generator) namespaces() {
	for i := 0; i < g.size.Namespaces; i++ {
		name := fmt.Sprintf("ns-%05d", i)
		team, env := g.pick(genTeams), g.pick(genEnvs)
		if i == 0 {
			name, team, env = "kube-system", "platform", "prod"
		}
		g.nsName = append(g.nsName, name)
		g.add("Namespace", "", name, &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"team": team, "env": env}},
		})
	}
	g.nsApps = make([][]string, g.size.Namespaces)
}

// pods spreads pods over namespaces: half evenly, half with a Zipf skew, so
// that a few namespaces are large, as in real clusters. kube-system holds the
// two cluster DNS pods.
func (g *generator) pods() {
	counts := make([]int, g.size.Namespaces)
	remaining := g.size.Pods - 2
	counts[0] = 2
	even := remaining / 2 / g.size.Namespaces
	for i := range counts {
		counts[i] += even
		remaining -= even
	}
	if g.size.Namespaces > 1 {
		zipf := rand.NewZipf(g.r, 1.2, 1, uint64(g.size.Namespaces-2))
		for ; remaining > 0; remaining-- {
			counts[1+int(zipf.Uint64())]++
		}
	} else {
		counts[0] += remaining
	}
	n := 0
	for ns, count := range counts {
		for i := 0; i < count; i++ {
			n++
			if ns == 0 && i < 2 {
				g.pod(ns, fmt.Sprintf("coredns-%d", i), map[string]string{"k8s-app": "kube-dns", "app": "coredns", "tier": "infra", "version": "v1"},
					[]corev1.ContainerPort{genUDP("dns", 53), genTCP("dns-tcp", 53), genTCP("metrics", 9153)})
				continue
			}
			// A namespace runs a few apps with several replicas each.
			app := genApps[(ns*7+g.r.Intn(4))%len(genApps)]
			g.nsApps[ns] = appendNew(g.nsApps[ns], app.name)
			l := map[string]string{"app": app.name, "tier": app.tier, "version": g.pick(genVersions)}
			g.pod(ns, fmt.Sprintf("%s-%06d", app.name, n), l, app.ports)
		}
	}
}

func appendNew(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

func (g *generator) pod(ns int, name string, l map[string]string, ports []corev1.ContainerPort) {
	spec := corev1.PodSpec{Containers: []corev1.Container{{
		Name: "main", Image: "registry.example/" + l["app"] + ":" + l["version"], Ports: ports,
	}}}
	if g.size.Nodes > 0 {
		spec.NodeName = NodeName(g.placed % g.size.Nodes)
	}
	var status corev1.PodStatus
	if g.size.Running {
		ips := podAddresses(g.placed)
		status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ips[0].IP, PodIPs: ips}
	}
	g.placed++
	g.add("Pod", g.nsName[ns], name, &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: g.nsName[ns], Labels: l},
		Spec:       spec,
		Status:     status,
	})
}

// app returns an app that runs in namespace ns (or any app when none does).
func (g *generator) app(ns int) string {
	if apps := g.nsApps[ns]; len(apps) > 0 {
		return g.pick(apps)
	}
	return g.anyApp()
}

func (g *generator) anyApp() string { return genApps[g.r.Intn(len(genApps))].name }

func genMatch(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func genPort(proto corev1.Protocol, port intstr.IntOrString, end int32) networkingv1.NetworkPolicyPort {
	p := networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port}
	if end != 0 {
		p.EndPort = &end
	}
	return p
}

// netpols spreads NetworkPolicies round-robin over namespaces. The first of
// a namespace is a default deny (ingress, or one time in four both
// directions followed by an allowance for DNS); the others take the usual
// shapes, ingress rules far more often than egress ones.
func (g *generator) netpols() {
	perNS := make([]int, g.size.Namespaces)
	denyAll := make([]bool, g.size.Namespaces)
	for i := 0; i < g.size.NetPols; i++ {
		ns, k := i%g.size.Namespaces, perNS[i%g.size.Namespaces]
		shape := g.r.Intn(20)
		switch {
		case k == 0 && g.r.Intn(4) == 0:
			shape, denyAll[ns] = -2, true
		case k == 0:
			shape = -1
		case k == 1 && denyAll[ns]:
			shape = 12
		case shape == 12: // DNS egress comes only with a deny-all
			shape = 0
		case shape == 19 && g.r.Intn(3) != 0: // egress rules are the rarer kind
			shape = 15
		}
		g.netpol(ns, k, shape)
		perNS[ns]++
	}
}

func (g *generator) netpol(ns, k, shape int) {
	nsName := g.nsName[ns]
	ingress := []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	egress := []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	var name string
	var spec networkingv1.NetworkPolicySpec
	switch shape {
	case -1:
		name = "default-deny-ingress"
		spec = networkingv1.NetworkPolicySpec{PolicyTypes: ingress}
	case -2:
		name = "default-deny-all"
		spec = networkingv1.NetworkPolicySpec{PolicyTypes: append(ingress, egress...)}
	case 0, 1, 2, 3, 4:
		// Allow from the same namespace, app to app.
		app := g.app(ns)
		name = "allow-" + app
		spec = networkingv1.NetworkPolicySpec{
			PodSelector: *genMatch("app", app),
			PolicyTypes: ingress,
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: genMatch("app", g.app(ns))}},
				Ports: []networkingv1.NetworkPolicyPort{genPort(corev1.ProtocolTCP, intstr.FromInt32(80), 0), genPort(corev1.ProtocolTCP, intstr.FromInt32(8080), 0)},
			}},
		}
	case 5, 6, 7, 8:
		// Allow another team's clients, on a named port.
		app, team := g.app(ns), g.pick(genTeams)
		name = "allow-" + team + "-to-" + app
		spec = networkingv1.NetworkPolicySpec{
			PodSelector: *genMatch("app", app),
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: genMatch("team", team), PodSelector: genMatch("app", g.anyApp())}},
				Ports: []networkingv1.NetworkPolicyPort{genPort(corev1.ProtocolTCP, intstr.FromString("http"), 0), genPort(corev1.ProtocolTCP, intstr.FromString("https"), 0)},
			}},
		}
	case 9:
		// Address ranges: the lab range with holes in, and sometimes egress
		// to the internet except the cluster.
		name = "allow-ranges"
		in := genBlocks[g.r.Intn(3)]
		spec = networkingv1.NetworkPolicySpec{
			PodSelector: *genMatch("tier", "web"),
			PolicyTypes: ingress,
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{IPBlock: &in}}}},
		}
		if g.r.Intn(2) == 0 {
			out := genBlocks[3+g.r.Intn(3)]
			spec.PolicyTypes = append(ingress, egress...)
			spec.Egress = []networkingv1.NetworkPolicyEgressRule{{
				To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &out}},
				Ports: []networkingv1.NetworkPolicyPort{genPort(corev1.ProtocolTCP, intstr.FromInt32(443), 0)},
			}}
		}
	case 10, 11:
		// A port range from the production namespaces.
		app := g.app(ns)
		name = "allow-range-" + app
		spec = networkingv1.NetworkPolicySpec{
			PodSelector: *genMatch("app", app),
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: genMatch("env", "prod")}},
				Ports: []networkingv1.NetworkPolicyPort{genPort(corev1.ProtocolTCP, intstr.FromInt32(8000), 8100)},
			}},
		}
	case 12:
		// Egress to the cluster DNS only.
		name = "allow-dns"
		spec = networkingv1.NetworkPolicySpec{
			PolicyTypes: egress,
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To: []networkingv1.NetworkPolicyPeer{{
					NamespaceSelector: genMatch(corev1.LabelMetadataName, "kube-system"),
					PodSelector:       genMatch("k8s-app", "kube-dns"),
				}},
				Ports: []networkingv1.NetworkPolicyPort{genPort(corev1.ProtocolUDP, intstr.FromInt32(53), 0), genPort(corev1.ProtocolTCP, intstr.FromInt32(53), 0)},
			}},
		}
	case 13, 14:
		// Set-based selectors.
		a, b := g.app(ns), g.anyApp()
		name = "allow-set-" + a
		spec = networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{a, b}},
			}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{
					{PodSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"data"}},
					}}},
					{NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod", "staging"}},
						{Key: "team", Operator: metav1.LabelSelectorOpExists},
					}}},
				},
				Ports: []networkingv1.NetworkPolicyPort{genPort(corev1.ProtocolTCP, intstr.FromInt32(443), 0), genPort(corev1.ProtocolTCP, intstr.FromInt32(8443), 0)},
			}},
		}
	case 15, 16, 17:
		// Open to everyone (a public endpoint).
		app := g.app(ns)
		name = "allow-all-" + app
		spec = networkingv1.NetworkPolicySpec{
			PodSelector: *genMatch("app", app),
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{}},
		}
	case 18:
		// Monitoring scrapes every pod of the namespace.
		name = "allow-monitoring"
		spec = networkingv1.NetworkPolicySpec{
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: genMatch("team", "observability"), PodSelector: &metav1.LabelSelector{}}},
				Ports: []networkingv1.NetworkPolicyPort{genPort(corev1.ProtocolTCP, intstr.FromString("metrics"), 0)},
			}},
		}
	default:
		// Application tier to its data stores.
		name = "egress-to-data"
		spec = networkingv1.NetworkPolicySpec{
			PodSelector: *genMatch("tier", "app"),
			PolicyTypes: egress,
			Egress: []networkingv1.NetworkPolicyEgressRule{{
				To: []networkingv1.NetworkPolicyPeer{{PodSelector: genMatch("tier", "data")}},
				Ports: []networkingv1.NetworkPolicyPort{genPort(corev1.ProtocolTCP, intstr.FromInt32(5432), 0), genPort(corev1.ProtocolTCP, intstr.FromInt32(6379), 0),
					genPort(corev1.ProtocolTCP, intstr.FromString("amqp"), 0)},
			}},
		}
	}
	name = fmt.Sprintf("%s-%d", name, k)
	g.add("NetworkPolicy", nsName, name, &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: nsName},
		Spec:       spec,
	})
}

var genActions = []v1alpha1.AdminNetworkPolicyRuleAction{
	v1alpha1.AdminNetworkPolicyRuleActionDeny, v1alpha1.AdminNetworkPolicyRuleActionAllow, v1alpha1.AdminNetworkPolicyRuleActionPass,
}

// adminPorts returns nil (all ports) or one of the three port forms; named
// ports only when the peers are pods (the API forbids them with networks).
func (g *generator) adminPorts(named bool) *[]v1alpha1.AdminNetworkPolicyPort {
	var ports []v1alpha1.AdminNetworkPolicyPort
	form := g.r.Intn(4)
	if form == 2 && !named {
		form = 1
	}
	switch form {
	case 0:
		return nil
	case 1:
		ports = []v1alpha1.AdminNetworkPolicyPort{{PortNumber: &v1alpha1.Port{Protocol: corev1.ProtocolTCP, Port: 80}}, {PortNumber: &v1alpha1.Port{Protocol: corev1.ProtocolUDP, Port: 53}}}
	case 2:
		name := g.pick([]string{"http", "https", "dns"})
		ports = []v1alpha1.AdminNetworkPolicyPort{{NamedPort: &name}}
	default:
		ports = []v1alpha1.AdminNetworkPolicyPort{{PortRange: &v1alpha1.PortRange{Protocol: corev1.ProtocolTCP, Start: 8000, End: 9000}}}
	}
	return &ports
}

func (g *generator) namespacedPod() *v1alpha1.NamespacedPod {
	return &v1alpha1.NamespacedPod{NamespaceSelector: *genMatch("team", g.pick(genTeams)), PodSelector: *genMatch("app", g.anyApp())}
}

// adminPolicies makes AdminNetworkPolicies with priorities over 0-1000, one in
// eight sharing its predecessor's priority.
func (g *generator) adminPolicies() {
	priority := int32(0)
	for i := 0; i < g.size.Admin; i++ {
		if i == 0 || g.r.Intn(8) != 0 {
			priority = int32(g.r.Intn(1001))
		}
		var subject v1alpha1.AdminNetworkPolicySubject
		switch g.r.Intn(10) {
		case 0, 1, 2, 3, 4:
			subject.Namespaces = genMatch("team", g.pick(genTeams))
		case 5, 6, 7:
			subject.Pods = &v1alpha1.NamespacedPod{NamespaceSelector: *genMatch("env", g.pick(genEnvs)), PodSelector: *genMatch("app", g.anyApp())}
		default:
			subject.Namespaces = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "env", Operator: metav1.LabelSelectorOpIn, Values: []string{"prod"}},
				{Key: "team", Operator: metav1.LabelSelectorOpNotIn, Values: []string{g.pick(genTeams)}},
			}}
		}
		spec := v1alpha1.AdminNetworkPolicySpec{Priority: priority, Subject: subject}
		for j, n := 0, 1+g.r.Intn(3); j < n; j++ {
			var from v1alpha1.AdminNetworkPolicyIngressPeer
			if g.r.Intn(2) == 0 {
				from.Namespaces = genMatch("env", g.pick(genEnvs))
			} else {
				from.Pods = g.namespacedPod()
			}
			spec.Ingress = append(spec.Ingress, v1alpha1.AdminNetworkPolicyIngressRule{
				Name: fmt.Sprintf("in-%d", j), Action: genActions[g.r.Intn(3)], From: []v1alpha1.AdminNetworkPolicyIngressPeer{from}, Ports: g.adminPorts(true),
			})
		}
		for j, n := 0, g.r.Intn(3); j < n; j++ {
			var to v1alpha1.AdminNetworkPolicyEgressPeer
			switch g.r.Intn(3) {
			case 0:
				to.Namespaces = genMatch("team", g.pick(genTeams))
			case 1:
				to.Pods = g.namespacedPod()
			default:
				to.Networks = []v1alpha1.CIDR{"203.0.113.0/24", "198.51.100.0/24"}
			}
			spec.Egress = append(spec.Egress, v1alpha1.AdminNetworkPolicyEgressRule{
				Name: fmt.Sprintf("out-%d", j), Action: genActions[g.r.Intn(3)], To: []v1alpha1.AdminNetworkPolicyEgressPeer{to}, Ports: g.adminPorts(to.Networks == nil),
			})
		}
		name := fmt.Sprintf("anp-%04d", i)
		g.add("AdminNetworkPolicy", "", name, &v1alpha1.AdminNetworkPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "policy.networking.k8s.io/v1alpha1", Kind: "AdminNetworkPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       spec,
		})
	}
}

// baseline is the cluster's default: development namespaces may not reach
// the others, and nobody reaches the cloud metadata service.
func (g *generator) baseline() {
	g.add("BaselineAdminNetworkPolicy", "", "default", &v1alpha1.BaselineAdminNetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy.networking.k8s.io/v1alpha1", Kind: "BaselineAdminNetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: v1alpha1.BaselineAdminNetworkPolicySpec{
			Subject: v1alpha1.AdminNetworkPolicySubject{Namespaces: &metav1.LabelSelector{}},
			Ingress: []v1alpha1.BaselineAdminNetworkPolicyIngressRule{{
				Name: "deny-from-dev", Action: v1alpha1.BaselineAdminNetworkPolicyRuleActionDeny,
				From: []v1alpha1.AdminNetworkPolicyIngressPeer{{Namespaces: genMatch("env", "dev")}},
			}},
			Egress: []v1alpha1.BaselineAdminNetworkPolicyEgressRule{
				{Name: "allow-dns", Action: v1alpha1.BaselineAdminNetworkPolicyRuleActionAllow,
					To: []v1alpha1.BaselineAdminNetworkPolicyEgressPeer{{Pods: &v1alpha1.NamespacedPod{
						NamespaceSelector: *genMatch(corev1.LabelMetadataName, "kube-system"), PodSelector: *genMatch("k8s-app", "kube-dns")}}}},
				{Name: "deny-metadata", Action: v1alpha1.BaselineAdminNetworkPolicyRuleActionDeny,
					To: []v1alpha1.BaselineAdminNetworkPolicyEgressPeer{{Networks: []v1alpha1.CIDR{"169.254.169.254/32", "fd00:ec2::254/128"}}}},
			},
		},
	})
}
