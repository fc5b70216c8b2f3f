package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/netpol/netpol/internal/l4"
)

// Servers listens on every pod's declared TCP and UDP ports, on each of its
// addresses, until Close.
// A TCP server echoes what it reads until the client closes; a UDP server
// echoes each datagram. Both answer whoAsk with their pod's name.
type Servers struct {
	closers []interface{ Close() error }
}

// Serve opens the listeners of every pod of l.
func (l *Lab) Serve() (*Servers, error) {
	s := &Servers{}
	for _, p := range l.Pods {
		err := inNamespace(p.Namespace, func() error {
			for _, ip := range p.Addrs() {
				for _, port := range p.Ports {
					addr := net.JoinHostPort(ip.String(), strconv.Itoa(int(port.Num)))
					switch port.Proto {
					case l4.TCP:
						ln, err := net.Listen(network("tcp", ip), addr)
						if err != nil {
							return err
						}
						s.closers = append(s.closers, ln)
						if l.servesDNS(p.Key, port) {
							go dnsTCPLoop(ln, l.Zone)
						} else {
							go acceptLoop(ln, p.Key)
						}
					case l4.UDP:
						pc, err := net.ListenPacket(network("udp", ip), addr)
						if err != nil {
							return err
						}
						s.closers = append(s.closers, pc)
						if l.servesDNS(p.Key, port) {
							go dnsUDPLoop(pc, l.Zone, p.Key)
						} else {
							go echoLoop(pc, p.Key)
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("serving pod %s: %w", p.Key, err)
		}
	}
	return s, nil
}

// Addrs are the pod's addresses: IPv4, then IPv6 if it has one.
func (p Pod) Addrs() []netip.Addr {
	if p.IP6.IsValid() {
		return []netip.Addr{p.IP, p.IP6}
	}
	return []netip.Addr{p.IP}
}

// Addr returns the pod's address of the family of like.
func (p Pod) Addr(like netip.Addr) (netip.Addr, bool) {
	if like.Is4() {
		return p.IP, p.IP.IsValid()
	}
	return p.IP6, p.IP6.IsValid()
}

// network names the socket family for an address: "tcp" becomes tcp4 or
// tcp6, so that a probe never falls back to the other family.
func network(proto string, ip netip.Addr) string {
	if ip.Is4() {
		return proto + "4"
	}
	return proto + "6"
}

// Close stops every listener.
func (s *Servers) Close() {
	for _, c := range s.closers {
		_ = c.Close()
	}
}

// reply is what a server sends back for data: an echo, or its pod's name
// when asked (a service probe).
func reply(data []byte, pod string) []byte {
	if string(data) == whoAsk {
		return []byte(whoAnswer + pod + "\n")
	}
	return data
}

func acceptLoop(ln net.Listener, pod string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			// Hold the connection until the client closes it, so that a
			// test can keep a connection open across a policy change.
			buf := make([]byte, 64)
			for {
				n, err := c.Read(buf)
				if err != nil {
					_ = c.Close()
					return
				}
				if _, err := c.Write(reply(buf[:n], pod)); err != nil {
					_ = c.Close()
					return
				}
			}
		}()
	}
}

func echoLoop(pc net.PacketConn, pod string) {
	buf := make([]byte, 512)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		_, _ = pc.WriteTo(reply(buf[:n], pod), from)
	}
}

// ProbeTimeout is how long a probe waits: denied traffic is dropped, so a
// denied probe always takes this long (twice: ProbeAll retries timeouts).
// Between namespaces of one machine an allowed handshake takes well under
// a millisecond.
const ProbeTimeout = 600 * time.Millisecond

// Probe reports whether src reaches dst on port with real packets: a TCP
// handshake, a UDP datagram echoed back, or an SCTP INIT that arrives.
func (l *Lab) Probe(src Pod, dst netip.Addr, port l4.Port) (bool, error) {
	if port.Proto == l4.SCTP {
		return l.probeSCTP(src, dst, port.Num)
	}
	conn, err := dialFrom(src, dst, port)
	if err != nil {
		if isTimeout(err) {
			return false, nil
		}
		return false, err // refused or unreachable: the lab is broken, not the policy
	}
	defer conn.Close()
	if port.Proto == l4.TCP {
		return true, nil
	}
	_ = conn.SetDeadline(time.Now().Add(ProbeTimeout))
	if _, err := conn.Write([]byte("netpol")); err != nil {
		return false, err
	}
	buf := make([]byte, 16)
	if _, err := conn.Read(buf); err != nil {
		if isTimeout(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// ProbeSure is Probe, once more before a connection counts as denied: a
// lost datagram or SYN must not pass for a policy's drop (ProbeAll
// retries its denied cells the same way, in a batch).
func (l *Lab) ProbeSure(src Pod, dst netip.Addr, port l4.Port) (bool, error) {
	ok, err := l.Probe(src, dst, port)
	if err == nil && !ok {
		ok, err = l.Probe(src, dst, port)
	}
	return ok, err
}

// Cell is one probed flow: from pod From's address of the family of SrcIP
// to pod To at DstIP.
type Cell struct {
	From, To     string
	SrcIP, DstIP netip.Addr
	Port         l4.Port
	Observed     bool
	Err          error
}

// ProbeAll probes every ordered pair of distinct pods on every port the
// destination serves among ports (all its ports when ports is nil), over
// each address family both pods have, in parallel. Probes that time out are
// tried once more, together, before they count as denied: a denied flow
// never connects, an allowed one may be unlucky once. progress, when not
// nil, is called as probes finish.
func (l *Lab) ProbeAll(ctx context.Context, ports []l4.Port, progress func(done, total int)) []Cell {
	var cells []Cell
	for _, src := range l.Pods {
		for _, dst := range l.Pods {
			if src.Key == dst.Key {
				continue
			}
			for _, dstIP := range dst.Addrs() {
				srcIP, ok := src.Addr(dstIP)
				if !ok {
					continue
				}
				for _, port := range dst.Ports {
					if ports == nil || contains(ports, port) {
						cells = append(cells, Cell{From: src.Key, To: dst.Key, SrcIP: srcIP, DstIP: dstIP, Port: port})
					}
				}
			}
		}
	}
	var mu sync.Mutex
	done, total := 0, len(cells)
	report := func(again int) {
		if progress == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		total += again
		if again == 0 {
			done++
		}
		progress(done, total)
	}
	byKey := map[string]Pod{}
	for _, p := range l.Pods {
		byKey[p.Key] = p
	}
	probe := func(idx []int) {
		sem := make(chan struct{}, 128)
		var wg sync.WaitGroup
		for _, i := range idx {
			if ctx.Err() != nil {
				cells[i].Err = ctx.Err()
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func(c *Cell) {
				defer func() { <-sem; wg.Done(); report(0) }()
				c.Observed, c.Err = l.Probe(byKey[c.From], c.DstIP, c.Port)
			}(&cells[i])
		}
		wg.Wait()
	}
	all := make([]int, len(cells))
	for i := range cells {
		all[i] = i
	}
	probe(all)
	var again []int
	for i, c := range cells {
		if !c.Observed && c.Err == nil {
			again = append(again, i)
		}
	}
	if len(again) > 0 {
		report(len(again))
	}
	probe(again)
	return cells
}

func contains(ports []l4.Port, p l4.Port) bool {
	for _, q := range ports {
		if q == p {
			return true
		}
	}
	return false
}

// InPod runs fn in the network namespace of pod p: sockets that fn makes
// live there, whichever thread uses them later (tests open their own
// servers and clients this way).
func (l *Lab) InPod(p Pod, fn func() error) error { return inNamespace(p.Namespace, fn) }

// InNode runs fn in the network namespace of node n, as InPod does for a
// pod: what fn opens there is a service of the node itself.
func (l *Lab) InNode(n Node, fn func() error) error { return inNamespace(n.Namespace, fn) }

// Dial opens a TCP connection from src that the caller keeps.
func (l *Lab) Dial(src Pod, dst netip.Addr, port l4.Port) (net.Conn, error) {
	return dialFrom(src, dst, l4.Port{Proto: l4.TCP, Num: port.Num})
}

// dialFrom connects from pod src's namespace to dst on port (TCP or UDP),
// giving up after ProbeTimeout (isTimeout: policy dropped it).
func dialFrom(src Pod, dst netip.Addr, port l4.Port) (net.Conn, error) {
	proto := "tcp"
	switch port.Proto {
	case l4.TCP:
	case l4.UDP:
		proto = "udp"
	default:
		return nil, fmt.Errorf("cannot probe %s", port)
	}
	var conn net.Conn
	var dialErr error
	err := inNamespace(src.Namespace, func() error {
		d := net.Dialer{Timeout: ProbeTimeout}
		conn, dialErr = d.Dial(network(proto, dst), net.JoinHostPort(dst.String(), strconv.Itoa(int(port.Num))))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return conn, dialErr
}

// isTimeout reports whether err is a probe's time running out.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
