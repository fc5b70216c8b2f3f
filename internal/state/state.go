// Package state is the cluster snapshot: namespaces, pods and nodes, built from
// decoded objects, with workloads expanded to the pods their controllers would
// create and every pod given an address; and Services with the backends their
// ports lead to (service.go). It sits below source and above policy
// in the data flow; it must not import policy, engine or cli.
package state

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/source"
)

// Namespace is a namespace with its labels. Declared is false for namespaces
// that exist only because something refers to them.
type Namespace struct {
	Name     string
	Labels   labels.Set
	Declared bool
	// LegacyIngressIsolation is the DefaultDeny annotation of the v1beta1
	// proposal; it isolates every pod of the namespace for ingress when the
	// engine is asked to honour it.
	LegacyIngressIsolation bool
}

// ContainerPort is a declared port of a pod; Name may be empty.
type ContainerPort struct {
	Name string
	Port l4.Port
}

// String is the port as messages and keys write it: "http=8080/tcp", or
// "8080/tcp" without a name.
func (cp ContainerPort) String() string { return namedPort(cp.Name, cp.Port) }

func namedPort(name string, port l4.Port) string {
	if name == "" {
		return port.String()
	}
	return name + "=" + port.String()
}

// Pod is what policy needs of a pod.
type Pod struct {
	ID          int32 // index in Cluster.Pods
	Namespace   *Namespace
	Name        string
	Labels      labels.Set   // shared by the snapshot's pods with the same labels: never written
	IPs         []netip.Addr // IPv4 first when the pod has one
	Node        string
	HostNetwork bool
	Ports       []ContainerPort
	Owner       string // "Deployment web" for pods made from a workload object or naming their controller in ownerReferences
	// NotReady is a pod whose status says Ready=False: the endpoint
	// controller leaves it out of its Services' backends. A pod without the
	// condition (a workload's, a manifest without status) counts as ready.
	NotReady bool
	Origin   diag.Origin
}

// Compare is the order of a snapshot's pods (and so of their IDs): by
// namespace, then name.
func (p *Pod) Compare(q *Pod) int {
	return cmp.Or(strings.Compare(p.Namespace.Name, q.Namespace.Name), strings.Compare(p.Name, q.Name))
}

// Before reports whether p comes before q in a snapshot (Compare).
func (p *Pod) Before(q *Pod) bool { return p.Compare(q) < 0 }

// Key is "namespace/name".
func (p *Pod) Key() string { return p.Namespace.Name + "/" + p.Name }

// Workload names what made the pod, as recorded flows name their ends:
// "namespace/Kind/name" for a controller's pod, which outlives the pod's
// own name across rollouts, or its Key for a bare pod.
func (p *Pod) Workload() string {
	kind, name := p.Controller()
	if kind == "" {
		return p.Key()
	}
	return p.Namespace.Name + "/" + kind + "/" + name
}

// Controller returns the kind and name of the workload that made the pod
// (Owner), or "" and the pod's own name for a bare pod.
func (p *Pod) Controller() (kind, name string) {
	kind, name, ok := strings.Cut(p.Owner, " ")
	if !ok {
		return "", p.Name
	}
	return kind, name
}

// IP returns the pod's address of the family of like (IPv4 when like is invalid).
func (p *Pod) IP(like netip.Addr) (netip.Addr, bool) {
	want4 := !like.IsValid() || like.Is4()
	for _, ip := range p.IPs {
		if ip.Is4() == want4 {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// NamedPort resolves a container port name. proto 0 accepts any protocol.
func (p *Pod) NamedPort(name string, proto l4.Protocol) (l4.Port, bool) {
	for _, cp := range p.Ports {
		if cp.Name == name && (proto == 0 || cp.Port.Proto == proto) {
			return cp.Port, true
		}
	}
	return l4.Port{}, false
}

// Node is a node with its labels and addresses.
type Node struct {
	Name     string
	Labels   labels.Set
	IPs      []netip.Addr
	Declared bool
}

// Cluster is one consistent snapshot. Slices are sorted by name (pods by
// namespace/name) so every output built from them is stable.
type Cluster struct {
	Namespaces []*Namespace
	Pods       []*Pod
	Nodes      []*Node
	// Services are the Services of the input with their backends, sorted
	// by namespace/name.
	Services []*Service
	// Policies are the policy objects of the input, in input order, for the
	// policy layer to normalise.
	Policies []source.Object

	// The look-ups hold pod IDs, not pointers: a snapshot that replaces a
	// few pods (Builder) shares them with the one it was made from.
	namespaces map[string]*Namespace
	pods       map[string]int32
	nodes      map[string]*Node
	podsByIP   map[netip.Addr]int32
	nodesByIP  map[netip.Addr]*Node
	podsByNS   map[*Namespace]span // pods are sorted by namespace first
	// services and servicesByIP look up Services by "namespace/name" and
	// cluster IP.
	services     map[string]*Service
	servicesByIP map[netip.Addr]*Service
	// labelSets are the pods' label sets by their text, one value for each
	// distinct set (builder.internLabels); the snapshots a Builder makes
	// from this one share it, so that pods added later share sets too.
	labelSets map[string]labels.Set
}

// span is the IDs [first, end) of a namespace's pods.
type span struct{ first, end int32 }

// Namespace returns the namespace called name, or nil.
func (c *Cluster) Namespace(name string) *Namespace { return c.namespaces[name] }

// Pod returns the pod "namespace/name", or nil.
func (c *Cluster) Pod(key string) *Pod {
	if id, ok := c.pods[key]; ok {
		return c.Pods[id]
	}
	return nil
}

// Node returns the node called name, or nil.
func (c *Cluster) Node(name string) *Node { return c.nodes[name] }

// PodByIP returns the pod that owns ip (not host-network pods), or nil.
func (c *Cluster) PodByIP(ip netip.Addr) *Pod {
	if id, ok := c.podsByIP[ip]; ok {
		return c.Pods[id]
	}
	return nil
}

// NodeByIP returns the node that owns ip, or nil.
func (c *Cluster) NodeByIP(ip netip.Addr) *Node { return c.nodesByIP[ip] }

// PodsIn returns the pods of a namespace, sorted by name.
func (c *Cluster) PodsIn(ns *Namespace) []*Pod {
	s, ok := c.podsByNS[ns]
	if !ok {
		return nil
	}
	return c.Pods[s.first:s.end:s.end]
}

// index fills the lookup maps after the slices are final.
func (c *Cluster) index() {
	slices.SortFunc(c.Namespaces, func(a, b *Namespace) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(c.Nodes, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(c.Pods, (*Pod).Compare)
	for i, p := range c.Pods {
		p.ID = int32(i)
	}
	c.lookups()
}

// lookups makes the look-ups of the pods and nodes, in their final order.
func (c *Cluster) lookups() {
	c.pods = make(map[string]int32, len(c.Pods))
	c.podsByIP = make(map[netip.Addr]int32, len(c.Pods))
	c.podsByNS = make(map[*Namespace]span, len(c.Namespaces))
	for i, p := range c.Pods {
		c.pods[p.Key()] = p.ID
		if i+1 == len(c.Pods) || c.Pods[i+1].Namespace != p.Namespace {
			// The last of its namespace's pods, which are together.
			first := i
			for first > 0 && c.Pods[first-1].Namespace == p.Namespace {
				first--
			}
			c.podsByNS[p.Namespace] = span{int32(first), int32(i + 1)}
		}
		if !p.HostNetwork {
			for _, ip := range p.IPs {
				c.podsByIP[ip] = p.ID
			}
		}
	}
	c.nodesByIP = make(map[netip.Addr]*Node, len(c.Nodes))
	for _, n := range c.Nodes {
		for _, ip := range n.IPs {
			c.nodesByIP[ip] = n
		}
	}
}
