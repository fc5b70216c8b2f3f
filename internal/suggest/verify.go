package suggest

import (
	"net/netip"
	"slices"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/state"
)

// Report says what suggested policies do, from the engine's verdicts on
// the input before and after they are applied, enforced.
type Report struct {
	Flows   int    `json:"flows"`   // observed flows
	Allowed int    `json:"allowed"` // of those, allowed after
	Denied  []Flow `json:"denied,omitempty"`
	// Lost counts pod pairs x the destination's declared ports allowed
	// before and denied after: what the suggestion takes away.
	Lost int `json:"lost"`
	// OpenUnobserved counts pod pairs x declared ports allowed after that
	// no flow was observed on: the least-privilege gap that is left.
	OpenUnobserved int `json:"openUnobserved"`
	// Cells is how many pod pairs x declared ports were compared.
	Cells int `json:"cells"`
}

// Verify decides every observed flow after, and every pod pair on every
// port its destination declares before and after. A flow that names a
// workload is allowed only if it is for every pod of the workload (every
// pair of pods, when both ends are workloads), and marks every such pair
// observed.
//
// The work follows behaviour classes, not pods (engine.ClassMatrix): pods
// that every verdict treats alike are decided once per class pair, and a
// cell count is the product of the classes' sizes. A pod's class before
// and its class after together (its joint class) decide whether its cells
// are lost. Observed flows are few next to the cells and are decided one
// pair at a time, each class pair once.
func Verify(before, after *engine.Engine, flows []Flow) (Report, error) {
	v := newVerifier(before, after)
	r, observed, err := observeFlows(after, flows, v.allowed)
	if err != nil {
		return r, err
	}
	v.count(&r)
	// The observed cells allowed after are not a gap.
	for c := range observed {
		if v.class[c.src.ID] < 0 || v.class[c.dst.ID] < 0 || c.src == c.dst {
			continue // host network: not a cell
		}
		declared := 0
		for _, cp := range c.dst.Ports {
			if cp.Port == c.port {
				declared++
			}
		}
		if declared > 0 && v.podsAllowed(c.src, c.dst, c.port) {
			r.OpenUnobserved -= declared
		}
	}
	return r, nil
}

// observeFlows decides every flow after with allowed, counted into a
// Report, and returns the pod pairs and ports they were observed on. A
// flow that names a workload is allowed only if it is for every pod of
// the workload (every pair of pods, when both ends are workloads).
func observeFlows(after *engine.Engine, flows []Flow, allowed func(src, dst engine.Endpoint, port l4.Port) bool) (Report, map[obsCell]bool, error) {
	r := Report{Flows: len(flows)}
	observed := map[obsCell]bool{}
	named := NewEnds(after.Cluster())
	for _, f := range flows {
		srcs, err := endpoints(after, named, f.From)
		if err != nil {
			return r, nil, err
		}
		dsts, err := endpoints(after, named, f.To)
		if err != nil {
			return r, nil, err
		}
		ok := true
		for _, src := range srcs {
			for _, dst := range dsts {
				if src.Pod != nil && src.Pod == dst.Pod {
					continue // a pod of the workload towards itself
				}
				ok = ok && allowed(src, dst, f.Port)
				if src.Pod != nil && dst.Pod != nil {
					observed[obsCell{src.Pod, dst.Pod, f.Port}] = true
				}
			}
		}
		if ok {
			r.Allowed++
		} else {
			r.Denied = append(r.Denied, f)
		}
	}
	return r, observed, nil
}

// obsCell is an observed pod pair on a port.
type obsCell struct {
	src, dst *state.Pod
	port     l4.Port
}

// verifier holds the classes of the pods compared.
type verifier struct {
	before, after *engine.Engine
	// pods are after's pods but host-network ones (policies never select
	// them: no cell), ports every port they declare.
	pods  []*state.Pod
	ports []l4.Port
	am    *engine.ClassMatrix // after, over pods and ports
	// class[ID] is an after pod's class (am.Class), -1 for a host-network
	// pod.
	class []int
	// verdicts memoises a class pair's verdict on a port, for the
	// observed flows (many name the same workloads).
	verdicts map[classPort]bool
}

type classPort struct {
	src, dst int
	port     l4.Port
}

func newVerifier(before, after *engine.Engine) *verifier {
	v := &verifier{before: before, after: after, verdicts: map[classPort]bool{}}
	all := after.Cluster().Pods
	seen := map[l4.Port]bool{}
	for _, p := range all {
		if p.HostNetwork {
			continue
		}
		v.pods = append(v.pods, p)
		for _, cp := range p.Ports {
			if !seen[cp.Port] {
				seen[cp.Port] = true
				v.ports = append(v.ports, cp.Port)
			}
		}
	}
	v.class = make([]int, len(all))
	for i := range v.class {
		v.class[i] = -1
	}
	v.am = after.ClassMatrix(v.pods, v.ports)
	for i, c := range v.am.Class {
		v.class[v.pods[i].ID] = c
	}
	return v
}

// allowed decides one pair of a flow's ends after: named pods by their
// classes' verdict (decided once), an end named by its address as named
// (its family is the one the flow took).
func (v *verifier) allowed(src, dst engine.Endpoint, port l4.Port) bool {
	if src.Pod != nil && dst.Pod != nil && !src.ByAddress && !dst.ByAddress && v.class[src.Pod.ID] >= 0 && v.class[dst.Pod.ID] >= 0 {
		return v.podsAllowed(src.Pod, dst.Pod, port)
	}
	return flowAllowed(v.after, src, dst, port)
}

// podsAllowed decides pod src -> pod dst (distinct, not host network) on
// port after, once per class pair and port: every pair of the same classes
// decides alike.
func (v *verifier) podsAllowed(src, dst *state.Pod, port l4.Port) bool {
	k := classPort{v.class[src.ID], v.class[dst.ID], port}
	allowed, ok := v.verdicts[k]
	if !ok {
		f, common := v.after.PodFlow(src, dst, port)
		allowed = common && v.after.Allowed(f)
		v.verdicts[k] = allowed
	}
	return allowed
}

// joint is the pods of one class after and one class before (-1: not in
// the input before): their cells are lost or kept alike.
type joint struct {
	after, before int
	pods          int
	// ports counts the pods' declared ports, by index in verifier.ports
	// (a pod declaring a port twice counts twice, as its cells do).
	ports []portCount
}

type portCount struct{ k, n int }

// count adds the cells, the lost cells and every cell allowed after (the
// observed ones are taken off by the caller) to r.
func (v *verifier) count(r *Report) {
	portIdx := make(map[l4.Port]int, len(v.ports))
	for k, p := range v.ports {
		portIdx[p] = k
	}
	// The pods of before, classed among themselves.
	var was []*state.Pod
	wasOf := make([]int, len(v.pods)) // index in was, -1 when absent
	for i, p := range v.pods {
		wasOf[i] = -1
		if w := v.before.Cluster().Pod(p.Key()); w != nil {
			wasOf[i] = len(was)
			was = append(was, w)
		}
	}
	bm := v.before.ClassMatrix(was, v.ports)
	am := v.am
	// Address families: a pair with none in common has no cell. (Before,
	// such a pair's verdict is "denied": nothing to lose.)
	famAfter := make([]uint8, am.Classes())
	var joints []*joint
	at := map[[2]int]int{}
	for i, p := range v.pods {
		key := [2]int{am.Class[i], -1}
		if wasOf[i] >= 0 {
			key[1] = bm.Class[wasOf[i]]
		}
		famAfter[key[0]] = families(p)
		j, ok := at[key]
		if !ok {
			j = len(joints)
			at[key] = j
			joints = append(joints, &joint{after: key[0], before: key[1]})
		}
		jt := joints[j]
		jt.pods++
	ports:
		for _, cp := range p.Ports {
			k := portIdx[cp.Port]
			for x := range jt.ports {
				if jt.ports[x].k == k {
					jt.ports[x].n++
					continue ports
				}
			}
			jt.ports = append(jt.ports, portCount{k, 1})
		}
	}
	// Source joints in order of their class before, then after, so that
	// each row is decided once per run of equal classes.
	order := make([]int, len(joints))
	for j := range order {
		order[j] = j
	}
	slices.SortFunc(order, func(a, b int) int {
		ja, jb := joints[a], joints[b]
		if ja.before != jb.before {
			return ja.before - jb.before
		}
		return ja.after - jb.after
	})
	np := len(v.ports)
	afterRow, beforeRow := make([]bool, am.Classes()*np), make([]bool, bm.Classes()*np)
	rowAfter, rowBefore := -1, -1
	for _, j1 := range order {
		s := joints[j1]
		if s.after != rowAfter {
			am.Row(s.after, afterRow)
			rowAfter = s.after
		}
		if s.before >= 0 && s.before != rowBefore {
			bm.Row(s.before, beforeRow)
			rowBefore = s.before
		}
		for j2, d := range joints {
			if famAfter[s.after]&famAfter[d.after] == 0 {
				continue // no connection, no cell
			}
			wasCell := s.before >= 0 && d.before >= 0
			for _, pc := range d.ports {
				cells := s.pods * pc.n
				if j1 == j2 {
					cells -= pc.n // a pod towards itself is no cell
				}
				if cells == 0 {
					continue
				}
				r.Cells += cells
				switch {
				case afterRow[d.after*np+pc.k]:
					r.OpenUnobserved += cells
				case wasCell && beforeRow[d.before*np+pc.k]:
					r.Lost += cells
				}
			}
		}
	}
}

// families is a pod's address families as bits: 1 IPv4, 2 IPv6.
func families(p *state.Pod) uint8 {
	var f uint8
	for _, ip := range p.IPs {
		if ip.Is4() {
			f |= 1
		} else {
			f |= 2
		}
	}
	return f
}

// endpoints are the ends a flow end names: an address (a pod's, a node's,
// or outside the cluster), a pod, or a workload's pods.
func endpoints(e *engine.Engine, named *Ends, end string) ([]engine.Endpoint, error) {
	if a, err := netip.ParseAddr(end); err == nil {
		ep, err := e.Endpoint(a.String())
		return []engine.Endpoint{ep}, err
	}
	pods, err := named.Pods(end)
	if err != nil {
		return nil, err
	}
	eps := make([]engine.Endpoint, len(pods))
	for i, p := range pods {
		eps[i] = e.PodEndpoint(p, netip.Addr{})
	}
	return eps, nil
}

// flowAllowed decides src -> dst on port, a pod named by name over the
// family the other end has (engine.NewFlow); ends with no family in
// common have no connection to allow.
func flowAllowed(e *engine.Engine, src, dst engine.Endpoint, port l4.Port) bool {
	f, err := e.NewFlow(src, dst, l4.PortSpec{Num: port.Num, Proto: port.Proto})
	return err == nil && e.Allowed(f)
}
