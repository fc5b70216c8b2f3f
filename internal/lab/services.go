package lab

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/state"
)

// The lab plays kube-proxy: each node translates a connection to a
// Service address into a connection to one of its backends, in a nat
// prerouting chain of its own table, before netpol's rules see it (they
// run in the forward hook, after the translation, as on a real node).
//
// The translation picks backends round-robin (numgen inc), not at random
// as kube-proxy does: N connections in a row to one Service port reach
// each of its N backends once, so a probe learns, backend by backend,
// what the kernel allows through the Service. The servers answer a probe
// with the name of their pod (whoAsk), which says which backend a
// connection reached.

// proxyTable is the lab's kube-proxy table in each node namespace; deleting
// the namespace deletes it.
const proxyTable = "netpol-lab-proxy"

// serviceRange4 is where the lab puts a Service whose cluster IP it cannot
// use (outside 198.18.0.0/15, or a pod's address): inside the lab's range,
// beside the nodes' 198.19.255.0/24.
var serviceRange4 = netip.MustParsePrefix("198.19.254.0/24")

// Service is a Service as the lab serves it.
type Service struct {
	Key string `json:"service"`
	// Addrs are the addresses the lab translates: the Service's cluster
	// IPs where the lab's ranges allow them, else one of serviceRange4.
	Addrs []netip.Addr `json:"addrs"`
	// Declared are the cluster IPs of the input, when the lab uses others.
	Declared []netip.Addr  `json:"declared,omitempty"`
	Ports    []ServicePort `json:"ports"`
}

// ServicePort is one port of a Service and its backends that are lab pods.
type ServicePort struct {
	Index    int       `json:"index"` // in the input Service's ports
	Name     string    `json:"name,omitempty"`
	Port     l4.Port   `json:"port"`
	Backends []Backend `json:"backends"`
	// Outside counts backends that are not lab pods (host-network pods,
	// addresses no pod owns): the lab does not translate to them.
	Outside int `json:"outside,omitempty"`
}

// Backend is a lab pod behind a Service port.
type Backend struct {
	Pod  string     `json:"pod"`
	IP   netip.Addr `json:"ip"`
	Port l4.Port    `json:"port"`
}

// planServices lays out the Services of c whose ports have backends among
// the lab's pods. ClusterIP, NodePort and LoadBalancer Services have
// cluster IPs; headless and ExternalName Services have none to translate.
func (l *Lab) planServices(c *state.Cluster) {
	inLab := map[netip.Addr]string{}
	for _, p := range l.Pods {
		for _, a := range p.Addrs() {
			inLab[a] = p.Key
		}
	}
	next := serviceRange4.Addr()
	fresh := func() netip.Addr {
		for {
			next = next.Next()
			if _, taken := inLab[next]; !taken {
				return next
			}
		}
	}
	for _, s := range c.Services {
		if len(s.ClusterIPs) == 0 {
			continue
		}
		ls := Service{Key: s.Key()}
		for _, a := range s.ClusterIPs {
			_, taken := inLab[a]
			switch {
			case a.Is4() && podRange4.Contains(a) && !taken, a.Is6() && ula.Contains(a) && !taken:
				ls.Addrs = append(ls.Addrs, a)
			case a.Is4():
				ls.Addrs = append(ls.Addrs, fresh())
				ls.Declared = append(ls.Declared, a)
			default:
				ls.Declared = append(ls.Declared, a) // an IPv6 address the lab may not use: IPv4 only
			}
		}
		for i, sp := range s.Ports {
			p := ServicePort{Index: i, Name: sp.Name, Port: sp.Port}
			for _, b := range sp.Backends {
				if b.Pod == nil || inLab[b.IP] != b.Pod.Key() {
					p.Outside++
					continue
				}
				p.Backends = append(p.Backends, Backend{Pod: b.Pod.Key(), IP: b.IP, Port: b.Port})
			}
			ls.Ports = append(ls.Ports, p)
		}
		if len(ls.Addrs) > 0 {
			l.Services = append(l.Services, ls)
		}
	}
}

// proxyRules is the nft script of the lab's kube-proxy table: the same on
// every node, as kube-proxy's rules are. Connections from pods meet the
// translation in prerouting, the node's own (the agent's DNS proxy asking
// over TCP) in output, as with kube-proxy.
func (l *Lab) proxyRules() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n", proxyTable)
	b.WriteString("\tchain prerouting {\n\t\ttype nat hook prerouting priority dstnat; policy accept;\n\t\tjump services\n\t}\n")
	b.WriteString("\tchain output {\n\t\ttype nat hook output priority -100; policy accept;\n\t\tjump services\n\t}\n")
	var chains strings.Builder
	b.WriteString("\tchain services {\n")
	for si, s := range l.Services {
		for _, addr := range s.Addrs {
			fam, host := "ip", addr.String()
			if addr.Is6() {
				fam = "ip6"
			}
			for _, p := range s.Ports {
				var backends []Backend
				for _, be := range p.Backends {
					if be.IP.Is4() == addr.Is4() {
						backends = append(backends, be)
					}
				}
				match := fmt.Sprintf("%s daddr %s %s dport %d", fam, host, strings.ToLower(p.Port.Proto.String()), p.Port.Num)
				if len(backends) == 0 {
					// kube-proxy rejects a connection to a port without endpoints.
					fmt.Fprintf(&b, "\t\t%s reject\n", match)
					continue
				}
				var vmap []string
				for bi, be := range backends {
					chain := fmt.Sprintf("s%d-%s-%d-b%d", si, fam, p.Index, bi)
					vmap = append(vmap, fmt.Sprintf("%d : goto %s", bi, chain))
					to := be.IP.String()
					if be.IP.Is6() {
						to = "[" + to + "]"
					}
					// nft maps a port only after a protocol match.
					fmt.Fprintf(&chains, "\tchain %s {\n\t\tmeta l4proto %s dnat %s to %s:%d\n\t}\n",
						chain, strings.ToLower(be.Port.Proto.String()), fam, to, be.Port.Num)
				}
				fmt.Fprintf(&b, "\t\t%s numgen inc mod %d vmap { %s }\n", match, len(backends), strings.Join(vmap, ", "))
			}
		}
	}
	b.WriteString("\t}\n")
	b.WriteString(chains.String())
	b.WriteString("}\n")
	return b.String()
}

// programProxy loads the kube-proxy table into every node namespace.
func (l *Lab) programProxy() error {
	if len(l.Services) == 0 {
		return nil
	}
	rules := l.proxyRules()
	for _, n := range l.Nodes {
		cmd := exec.Command("ip", "netns", "exec", n.Namespace, "nft", "-f", "-")
		cmd.Stdin = strings.NewReader(rules)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("the Service translation on node %s: %v: %s", n.Name, err, out)
		}
		// The node's own connections are routed before output translates
		// them: a Service address needs a route, as a node's default
		// route gives it, and only that (lab nodes route nothing else).
		for _, s := range l.Services {
			for _, a := range s.Addrs {
				if a.Is6() && !n.IP6.IsValid() {
					continue
				}
				if err := ip("-n", n.Namespace, "route", "replace", netip.PrefixFrom(a, a.BitLen()).String(), "dev", "fab"); err != nil {
					return fmt.Errorf("a route to Service %s on node %s: %w", s.Key, n.Name, err)
				}
			}
		}
	}
	return nil
}

// whoAsk is what a service probe sends; a lab server answers it with
// whoAnswer and its pod's name instead of an echo.
const (
	whoAsk    = "netpol-lab: who?\n"
	whoAnswer = "netpol-lab: "
)

// ServiceCell is one probed Service port from one pod over one address.
type ServiceCell struct {
	From    string
	Service string
	Port    ServicePort // Backends: those of Addr's family
	Addr    netip.Addr
	// Reached are the backends (pod names) that some connection reached.
	Reached map[string]bool
	// Hairpin: the source is one of the backends. It is probed like any
	// source, but its connection to itself never counts: upstream leaves
	// what policy does to a pod reaching itself through its Service
	// undefined, kube-proxy masquerades it, and the lab does not.
	Hairpin bool
	Err     error
}

// PredictService is what e decides for c's source and each backend of its
// Service port (by pod), over c's address family: what the kernel should
// do.
func PredictService(e *engine.Engine, c ServiceCell) (map[string]bool, error) {
	ns, name, _ := strings.Cut(c.Service, "/")
	svc := e.Cluster().Service(ns, name)
	if svc == nil || c.Port.Index >= len(svc.Ports) {
		return nil, fmt.Errorf("the input has no Service %s port %d", c.Service, c.Port.Index)
	}
	src, err := e.Endpoint(c.From)
	if err != nil {
		return nil, err
	}
	v := e.DecideService(src, svc, &svc.Ports[c.Port.Index], c.Addr)
	out := map[string]bool{}
	for _, b := range v.Backends {
		if p := b.Flow.Dst.Pod; p != nil {
			out[p.Key()] = b.Verdict.Allowed
		}
	}
	return out, nil
}

// ProbeServices connects from every pod to every Service port over each
// address the lab serves it at, once per backend in a row (the
// round-robin reaches each backend once), and once more per backend when
// some backend was not reached (an allowed connection may be unlucky
// once). Connections to one Service port are made one after another, or
// the round-robin would be shared; different ports are probed in parallel.
// ports, when not nil, limits the probe to those Service ports. SCTP ports
// are not probed: this machine has no SCTP sockets, and the raw-packet
// probe of pods cannot name a backend.
func (l *Lab) ProbeServices(ctx context.Context, ports []l4.Port, progress func(done, total int)) []ServiceCell {
	type target struct {
		service string
		port    ServicePort
		addr    netip.Addr
	}
	var targets []target
	for _, s := range l.Services {
		for _, addr := range s.Addrs {
			for _, p := range s.Ports {
				q := p
				q.Backends = nil
				for _, be := range p.Backends {
					if be.IP.Is4() == addr.Is4() {
						q.Backends = append(q.Backends, be)
					}
				}
				probed := p.Port.Proto == l4.TCP || p.Port.Proto == l4.UDP
				if len(q.Backends) > 0 && probed && (ports == nil || contains(ports, p.Port)) {
					targets = append(targets, target{s.Key, q, addr})
				}
			}
		}
	}
	cells := make([][]ServiceCell, len(targets))
	var mu sync.Mutex
	done, total := 0, len(targets)*len(l.Pods)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for ti, t := range targets {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			for _, src := range l.Pods {
				c := ServiceCell{From: src.Key, Service: t.service, Port: t.port, Addr: t.addr, Reached: map[string]bool{}}
				for _, be := range t.port.Backends {
					c.Hairpin = c.Hairpin || be.Pod == src.Key
				}
				if _, ok := src.Addr(t.addr); ok {
					c.Err = l.probeService(ctx, src, t.addr, t.port, c.Reached)
					delete(c.Reached, src.Key) // hairpin: see ServiceCell
					cells[ti] = append(cells[ti], c)
				}
				mu.Lock()
				done++
				if progress != nil {
					progress(done, total)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var out []ServiceCell
	for _, cs := range cells {
		out = append(out, cs...)
	}
	return out
}

// probeService makes the connections of one ServiceCell.
func (l *Lab) probeService(ctx context.Context, src Pod, addr netip.Addr, p ServicePort, reached map[string]bool) error {
	n := len(p.Backends)
	others := n // the backends src can reach: all but itself
	for _, be := range p.Backends {
		if be.Pod == src.Key {
			others--
		}
	}
	for round := 0; round < 2 && len(reached) < others; round++ {
		for range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			pod, err := l.who(src, addr, p.Port)
			if err != nil {
				return err
			}
			if pod != "" {
				reached[pod] = true
			}
		}
	}
	return nil
}

// who connects from src to addr:port and returns the pod that answered,
// "" when nothing did before ProbeTimeout (the policy dropped it).
func (l *Lab) who(src Pod, addr netip.Addr, port l4.Port) (string, error) {
	conn, err := dialFrom(src, addr, port)
	if err != nil {
		if isTimeout(err) {
			return "", nil
		}
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(ProbeTimeout))
	if _, err := conn.Write([]byte(whoAsk)); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		if isTimeout(err) {
			return "", nil
		}
		return "", err
	}
	if !strings.HasPrefix(line, whoAnswer) {
		return "", fmt.Errorf("%s answered %q, not a lab server's name", addr, line)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, whoAnswer)), nil
}
