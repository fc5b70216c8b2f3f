package engine

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/state"
)

// Services are destinations people name, but policy applies after the
// translation (the NetworkPolicy documentation: policies see the backend pod
// and target port, not the Service). So a flow to a Service port is decided
// as one flow per backend, pod to pod on the target port, with the trace of
// each.
//
// Hairpin, a pod reaching itself through its own Service: kube-proxy
// translates the connection to the pod's own address (kubelet's hairpin
// mode exists so that the packet comes back to it: Kubernetes' "Debug
// Services" page, "a Pod fails to reach itself via the Service IP"), and the
// NetworkPolicy documentation says pods cannot block access from
// themselves (localhost) or their node. Cilium skips policy for this
// "service loopback" for the same reason (cilium/cilium#15709). Our rule:
// after translation the flow is the pod to itself, which Decide always
// allows, as for a pod reaching its own IP.

// ServiceName parses what a user names as a Service: svc/NAMESPACE/NAME,
// NAME.NAMESPACE.svc, NAME.NAMESPACE.svc.cluster.local, or a cluster IP.
// ok is false when s is none of those forms (a pod, a node or another
// address); err is set when it is one but names no Service.
func (e *Engine) ServiceName(s string) (svc *state.Service, ok bool, err error) {
	s = strings.TrimSpace(s)
	if ip, perr := netip.ParseAddr(s); perr == nil {
		svc = e.c.ServiceByIP(ip.Unmap())
		return svc, svc != nil, nil
	}
	var ns, name string
	switch {
	case strings.HasPrefix(s, "svc/"):
		var found bool
		if ns, name, found = strings.Cut(strings.TrimPrefix(s, "svc/"), "/"); !found {
			return nil, true, fmt.Errorf("%q: want svc/NAMESPACE/NAME", s)
		}
	case strings.HasSuffix(s, ".svc") || strings.HasSuffix(s, ".svc.cluster.local"):
		host := strings.TrimSuffix(strings.TrimSuffix(s, ".cluster.local"), ".svc")
		var found bool
		if name, ns, found = strings.Cut(host, "."); !found || strings.Contains(ns, ".") {
			return nil, true, fmt.Errorf("%q: want NAME.NAMESPACE.svc", s)
		}
	default:
		return nil, false, nil
	}
	if svc = e.c.Service(ns, name); svc == nil {
		var keys []string
		for _, s := range e.c.Services {
			keys = append(keys, s.Key())
		}
		return nil, true, fmt.Errorf("%q: no such Service%s", s, suggest(ns+"/"+name, keys))
	}
	return svc, true, nil
}

// ServicePort finds the port of svc that spec names: its port number or
// its name, of spec's protocol when spec has one.
func ServicePort(svc *state.Service, spec l4.PortSpec) (*state.ServicePort, error) {
	var have []string
	for i := range svc.Ports {
		p := &svc.Ports[i]
		if (spec.Proto == 0 || spec.Proto == p.Port.Proto) &&
			(spec.Name != "" && p.Name == spec.Name || spec.Name == "" && p.Port.Num == spec.Num) {
			return p, nil
		}
		have = append(have, p.String())
	}
	want := spec.Name
	if want == "" {
		want = fmt.Sprint(spec.Num)
	}
	if spec.Proto != 0 {
		want += "/" + strings.ToLower(spec.Proto.String())
	}
	return nil, fmt.Errorf("Service %s has no port %s (it has: %s)", svc.Key(), want, orNone(have))
}

// BackendVerdict is the decision on one backend of a Service port.
type BackendVerdict struct {
	Flow    Flow
	Verdict Verdict
}

// ServiceVerdict is the decision on a flow to a Service port: one verdict
// per backend (of the connection's address family).
type ServiceVerdict struct {
	Service   *state.Service
	Port      *state.ServicePort
	Backends  []BackendVerdict
	Reachable int // backends allowed
}

// Reach says whether the source reaches all, some or none of the backends.
func (v ServiceVerdict) Reach() Reach { return reachOf(v.Reachable, len(v.Backends)) }

// Summary is the verdict in one line.
func (v ServiceVerdict) Summary() string {
	switch v.Reach() {
	case ReachNoBackends:
		return "no backends: the Service port leads nowhere"
	case ReachAll:
		if len(v.Backends) == 1 {
			return "reachable through its only backend"
		}
	case ReachNone:
		if len(v.Backends) == 1 {
			return "not reachable: its only backend is denied"
		}
		return fmt.Sprintf("not reachable: all %d backends are denied", len(v.Backends))
	}
	return fmt.Sprintf("reachable through %d of %d backends", v.Reachable, len(v.Backends))
}

// DecideService decides src -> each backend of port on its target port.
// Over the address family of via (a cluster IP the user named), else the
// source's: kube-proxy translates a connection to backends of its family.
func (e *Engine) DecideService(src Endpoint, svc *state.Service, port *state.ServicePort, via netip.Addr) ServiceVerdict {
	v := ServiceVerdict{Service: svc, Port: port}
	family := via
	if !family.IsValid() {
		family = src.IP
	}
	for _, b := range port.Backends {
		if b.IP.Is4() != family.Is4() {
			continue
		}
		f, ok := e.backendFlow(src, b)
		if !ok {
			continue // the source has no address of the connection's family
		}
		d := e.Decide(f)
		if d.Allowed {
			v.Reachable++
		}
		v.Backends = append(v.Backends, BackendVerdict{Flow: f, Verdict: d})
	}
	return v
}

// backendFlow is the flow src -> b after the translation: the backend's
// address is fixed (the translation chose it), the source takes its address
// of that family; ok is false when it has none.
func (e *Engine) backendFlow(src Endpoint, b state.Backend) (Flow, bool) {
	dst := Endpoint{IP: b.IP, Node: e.c.NodeByIP(b.IP), ByAddress: true}
	if b.Pod != nil {
		dst = e.PodEndpoint(b.Pod, b.IP)
		dst.IP, dst.ByAddress = b.IP, true
	}
	f, err := e.NewFlow(src, dst, l4.PortSpec{Proto: b.Port.Proto, Num: b.Port.Num})
	return f, err == nil
}

// Reach says how many backends of a Service port a source may reach.
type Reach uint8

const (
	ReachNone       Reach = iota // no backend allowed
	ReachSome                    // some backends allowed, some denied
	ReachAll                     // every backend allowed
	ReachNoBackends              // the port leads nowhere
)

var reachNames = [...]string{"none", "some", "all", "no-backends"}

func (r Reach) String() string { return reachNames[r] }

// ParseReach reads a Reach by its name.
func ParseReach(s string) (Reach, error) {
	for r, name := range reachNames {
		if s == name {
			return Reach(r), nil
		}
	}
	return 0, fmt.Errorf("%q: want %s", s, strings.Join(reachNames[:], ", "))
}

// reachOf is the reach of a source that is allowed to allowed of total
// backends: the one place the words all, some and none are decided.
func reachOf(allowed, total int) Reach {
	switch {
	case total == 0:
		return ReachNoBackends
	case allowed == total:
		return ReachAll
	case allowed == 0:
		return ReachNone
	}
	return ReachSome
}

// ServiceColumn is one port of one Service.
type ServiceColumn struct {
	Service *state.Service
	Port    *state.ServicePort
}

func (c ServiceColumn) String() string {
	return "svc/" + c.Service.Key() + ":" + c.Port.String()
}

// ServiceMatrix says, for every source pod and Service port, whether the
// source reaches all, some or none of the backends.
type ServiceMatrix struct {
	Sources []*state.Pod
	Columns []ServiceColumn
	reach   []Reach
}

// Reach returns the cell of Sources[s] and Columns[c].
func (m *ServiceMatrix) Reach(s, c int) Reach { return m.reach[s*len(m.Columns)+c] }

// ServiceMatrix decides every source against every port of svcs. The pod
// backends are decided through Matrix (one decision per pair of behaviour
// classes); a backend pod counts once whatever its number of addresses.
func (e *Engine) ServiceMatrix(srcs []*state.Pod, svcs []*state.Service) *ServiceMatrix {
	m := &ServiceMatrix{Sources: srcs}
	var dsts []*state.Pod
	var ports []l4.Port
	dstIndex, portIndex := map[*state.Pod]int{}, map[l4.Port]int{}
	for _, s := range svcs {
		for i := range s.Ports {
			m.Columns = append(m.Columns, ServiceColumn{Service: s, Port: &s.Ports[i]})
			for _, b := range s.Ports[i].Backends {
				if _, ok := dstIndex[b.Pod]; b.Pod != nil && !ok {
					dstIndex[b.Pod] = len(dsts)
					dsts = append(dsts, b.Pod)
				}
				if _, ok := portIndex[b.Port]; !ok {
					portIndex[b.Port] = len(ports)
					ports = append(ports, b.Port)
				}
			}
		}
	}
	pods := e.Matrix(srcs, dsts, ports)
	m.reach = make([]Reach, len(srcs)*len(m.Columns))
	for si, src := range srcs {
		from := e.PodEndpoint(src, netip.Addr{})
		for ci, col := range m.Columns {
			type key struct {
				pod  *state.Pod
				ip   netip.Addr
				port l4.Port
			}
			seen := map[key]bool{}
			allowed, total := 0, 0
			for _, b := range col.Port.Backends {
				k := key{pod: b.Pod, port: b.Port}
				if b.Pod == nil {
					k.ip = b.IP
				}
				if seen[k] {
					continue
				}
				seen[k] = true
				total++
				ok := false
				if b.Pod != nil {
					ok = pods.Allowed(si, dstIndex[b.Pod], portIndex[b.Port])
				} else {
					f, family := e.backendFlow(from, b)
					ok = family && e.Allowed(f) // no address of its family: not reached
				}
				if ok {
					allowed++
				}
			}
			m.reach[si*len(m.Columns)+ci] = reachOf(allowed, total)
		}
	}
	return m
}
