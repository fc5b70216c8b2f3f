package dnsproxy

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/dns"
)

// Config of a proxy.
type Config struct {
	Kernel Kernel
	Limits Limits
	// Write puts elements into the policy table's sets
	// (dataplane.Elements.Write with nothing unused).
	Write func([]dataplane.Element) error
	// NFT is the divert table's interface (TableName, family inet).
	NFT knftables.Interface
	// CapHit, when set, is called (at most once a minute) when an answer
	// taught less than it gave because Limits.MaxAddresses were learned.
	CapHit func(Stats)
}

// Proxy holds DNS answers until the addresses they teach are in the
// kernel's sets (see the package doc).
type Proxy struct {
	cfg     Config
	learner *learner
	held    prometheus.Histogram    // how long answers were held
	queries atomic.Pointer[queries] // set by Run

	mu       sync.Mutex
	want     diversion     // what Update asked for
	changed  chan struct{} // Update tells Run
	capSaid  time.Time
	capCount uint64
}

// diversion is what the divert table holds: answers of these servers to
// these pods.
type diversion struct {
	servers, clients []netip.Addr
}

// delivers reports whether an answer from src to dst is one the divert
// delivers: from port 53 of a server, to a pod. Nothing else that reaches
// the socket is read (the divert table drops it before it does, but the
// socket listens before the table is written), or sent anywhere: the
// proxy never sends to the node itself.
func (d diversion) delivers(src, dst netip.AddrPort) bool {
	_, server := slices.BinarySearchFunc(d.servers, src.Addr().Unmap(), netip.Addr.Compare)
	_, client := slices.BinarySearchFunc(d.clients, dst.Addr().Unmap(), netip.Addr.Compare)
	return server && client && src.Port() == dnsPort && dst.Port() != 0
}

// dnsPort is the port pods ask DNS servers on (the Service's port, not
// the backend's).
const dnsPort = 53

func (d diversion) equal(o diversion) bool {
	return slices.Equal(d.servers, o.servers) && slices.Equal(d.clients, o.clients)
}

// New returns a proxy; Run starts it.
func New(cfg Config) *Proxy {
	if cfg.Limits == (Limits{}) {
		cfg.Limits = DefaultLimits
	}
	held := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "netpol_dns_answer_hold_seconds",
		Help:    "Time a DNS answer was held on its way to a pod: parsing it, asking its question again over TCP when it was truncated (at most 2 s), and programming the addresses it teaches.",
		Buckets: prometheus.ExponentialBuckets(0.00005, 2, 17)}) // 50 µs to 3.3 s: a truncated answer's ask
	return &Proxy{cfg: cfg, learner: newLearner(cfg.Limits, cfg.Write), held: held, changed: make(chan struct{}, 1)}
}

// Collectors are the proxy's own metrics (its counters are Stats).
func (p *Proxy) Collectors() []prometheus.Collector { return []prometheus.Collector{p.held} }

// Scope is what the agent tells the proxy after every pass.
type Scope struct {
	// Servers are the DNS servers whose answers teach, as pods ask them
	// (the cluster DNS Service's addresses).
	Servers []netip.Addr
	// Clients are the local pods that a domainNames rule governs.
	Clients []netip.Addr
	// Sets are the domain sets that answers are learned into.
	Sets []*compile.DomainSet
	// Cluster reports whether an address is the cluster's own (a node's,
	// a pod's, a Service's): no answer teaches one (nil: none is).
	Cluster func(netip.Addr) bool
}

// Update sets what the proxy holds answers for: from these DNS servers, to
// these local pods, learned into these domain sets. The agent calls it
// after every pass. Run writes the divert table when it is listening, so
// that no answer is diverted to a socket that is not there.
func (p *Proxy) Update(_ context.Context, s Scope) error {
	p.learner.setTargets(s.Sets, s.Cluster)
	p.mu.Lock()
	p.want = diversion{sorted(s.Servers), sorted(s.Clients)}
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default: // Run has been told already
	}
	return nil
}

// Stats returns what the proxy did so far.
func (p *Proxy) Stats() Stats {
	s := p.learner.Stats()
	if q := p.queries.Load(); q != nil {
		s.QueriesLost = q.lostCount()
	}
	return s
}

// NamesOf returns the names whose answers taught addr, while they last.
func (p *Proxy) NamesOf(addr netip.Addr) []string { return p.learner.NamesOf(addr) }

// Run waits until Update first gives pods to divert answers to, then sets
// up routing, listens, and keeps the divert table as Update asks and its
// rule alive until ctx is done; then it deletes the table, so
// answers go straight to the pods again. If the agent dies instead, they
// do so within aliveTimeout (fail-static).
func (p *Proxy) Run(ctx context.Context) error {
	// Nothing is set up on a node until a domainNames rule governs one of
	// its pods: no routing rule, socket or table where none is used.
	for {
		p.mu.Lock()
		want := p.want
		p.mu.Unlock()
		if len(want.servers) > 0 && len(want.clients) > 0 {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.changed:
		}
	}
	select {
	case p.changed <- struct{}{}: // the loop below writes the table at once
	default:
	}
	if err := p.cfg.Kernel.route(); err != nil {
		return err
	}
	defer func() {
		if err := p.cfg.Kernel.unroute(); err != nil {
			klog.ErrorS(err, "Removing the DNS divert's routing rules", "mark", p.cfg.Kernel.Mark, "table", p.cfg.Kernel.RouteTable)
		}
	}()
	log, err := p.cfg.Kernel.openLog()
	if err != nil {
		return err
	}
	queries := newQueries(log, p.learner.now)
	p.queries.Store(queries)
	var conns []*net.UDPConn
	var wg sync.WaitGroup
	// The sockets close first, so that serve returns; then the log, which
	// serve may read to its last answer.
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
		log.Close()
	}()
	go func() {
		err := queries.run()
		klog.V(2).InfoS("DNS query log reader stopped", "reason", err)
	}()
	for _, network := range []string{"udp4", "udp6"} {
		c, err := listen(ctx, network, p.cfg.Kernel.Port)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.serve(c)
		}()
	}
	tick := time.NewTicker(aliveEvery)
	defer tick.Stop()
	var have *diversion // what the divert table holds; nil: unknown
	for {
		select {
		case <-ctx.Done():
			tx := p.cfg.NFT.NewTransaction()
			tx.Delete(&knftables.Table{})
			if err := p.cfg.NFT.Run(context.Background(), tx); err != nil && !knftables.IsNotFound(err) {
				klog.ErrorS(err, "Deleting the DNS divert table; answers reach pods directly once its rule's gate expires")
			}
			return nil
		case <-p.changed:
		case <-tick.C:
		}
		p.mu.Lock()
		want := p.want
		p.mu.Unlock()
		if have != nil && have.equal(want) {
			if alive(ctx, p.cfg.NFT) == nil {
				continue
			}
			klog.InfoS("The DNS divert table was gone (someone else's change); writing it again")
		}
		if err := p.cfg.Kernel.divertTable(ctx, p.cfg.NFT, want.servers, want.clients); err != nil {
			have = nil
			klog.ErrorS(err, "Writing the DNS divert table; answers reach pods without being learned until it works")
			continue
		}
		have = &want
	}
}

// serve handles the answers diverted to c, one at a time: the sets are
// written before the next answer is read, so answers stay in order.
func (p *Proxy) serve(c *net.UDPConn) {
	buf, oob := make([]byte, 65535), make([]byte, 512)
	// senders are sockets bound to the servers' addresses, kept: there
	// are few servers, and a socket made for each answer cost more than
	// the rest of the hold.
	senders := map[netip.AddrPort]*net.UDPConn{}
	defer func() {
		for _, s := range senders {
			s.Close()
		}
	}()
	for {
		n, oobn, _, src, err := c.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			klog.ErrorS(err, "Reading a diverted DNS answer")
			continue
		}
		start := time.Now()
		dst, ok := originalDst(oob[:oobn])
		p.mu.Lock()
		want := p.want
		p.mu.Unlock()
		if !ok || !want.delivers(src, dst) {
			p.learner.refused()
			continue
		}
		asked := func(a dns.Answer) bool { return p.queries.Load().answered(dst, src.Addr(), a) }
		if a, named, err := p.learner.learn(buf[:n], asked); err == nil && named && a.Truncated {
			p.askOverTCP(src, buf[:n], a)
		}
		p.capCheck()
		if err := sendAs(senders, src, dst, buf[:n]); err != nil {
			klog.ErrorS(err, "Sending a DNS answer on to its pod", "from", src, "to", dst)
			continue
		}
		p.held.Observe(time.Since(start).Seconds())
	}
}

// askTimeout bounds how long a truncated answer waits for the proxy's own
// TCP question, the connection included.
const askTimeout = 2 * time.Second

// askOverTCP asks server, over TCP, the question that the truncated answer
// msg (read as a) answers, and learns from the full answer (see the
// package doc). The server is one of the configured ones
// (diversion.delivers), and a answered a query of the pod's.
func (p *Proxy) askOverTCP(server netip.AddrPort, msg []byte, a dns.Answer) {
	id := uint16(time.Now().UnixNano())
	query, err := dns.QueryAgain(msg, id)
	if err != nil {
		return
	}
	full, err := dns.ExchangeTCP(server, query, askTimeout)
	if err != nil {
		klog.V(2).InfoS("Asking over TCP after a truncated DNS answer", "server", server, "err", err)
		p.learner.failedAsk()
		return
	}
	// The proxy's own question: its answer must be to it.
	_, _, _ = p.learner.learn(full, func(f dns.Answer) bool { return f.ID == id && f.Name == a.Name && f.Type == a.Type })
}

// capCheck tells CapHit, at most once a minute, that the cap held
// addresses back. It runs after every answer, so it reads a counter, not
// Stats (which sweeps every learned address).
func (p *Proxy) capCheck() {
	if p.cfg.CapHit == nil {
		return
	}
	hits, now := p.learner.capHits(), p.learner.now()
	p.mu.Lock()
	say := hits > p.capCount && now.Sub(p.capSaid) >= time.Minute
	if say {
		p.capSaid, p.capCount = now, hits
	}
	p.mu.Unlock()
	if say {
		p.cfg.CapHit(p.learner.Stats())
	}
}

// listen opens the socket that diverted answers arrive at: transparent
// (TPROXY hands it packets addressed to others) and told each packet's
// original destination, the pod.
func listen(ctx context.Context, network string, port uint16) (*net.UDPConn, error) {
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			if network == "udp4" {
				serr = setsockopts(int(fd), unix.SOL_IP, unix.IP_TRANSPARENT, unix.IP_RECVORIGDSTADDR)
			} else {
				serr = setsockopts(int(fd), unix.SOL_IPV6, unix.IPV6_TRANSPARENT, unix.IPV6_RECVORIGDSTADDR, unix.IPV6_V6ONLY)
			}
		})
		return errors.Join(err, serr)
	}}
	addr := fmt.Sprintf("0.0.0.0:%d", port)
	if network == "udp6" {
		addr = fmt.Sprintf("[::]:%d", port)
	}
	pc, err := lc.ListenPacket(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("DNS proxy socket %s: %w", addr, err)
	}
	return pc.(*net.UDPConn), nil
}

// setsockopts sets boolean options of one level.
func setsockopts(fd, level int, opts ...int) error {
	for _, o := range opts {
		if err := unix.SetsockoptInt(fd, level, o, 1); err != nil {
			return fmt.Errorf("setsockopt %d/%d: %w", level, o, err)
		}
	}
	return nil
}

// originalDst reads the destination a diverted packet had (the pod) from
// its control message.
func originalDst(oob []byte) (netip.AddrPort, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return netip.AddrPort{}, false
	}
	for _, m := range msgs {
		switch {
		case m.Header.Level == unix.SOL_IP && m.Header.Type == unix.IP_ORIGDSTADDR && len(m.Data) >= unix.SizeofSockaddrInet4:
			return netip.AddrPortFrom(netip.AddrFrom4([4]byte(m.Data[4:8])), binary.BigEndian.Uint16(m.Data[2:4])), true
		case m.Header.Level == unix.SOL_IPV6 && m.Header.Type == unix.IPV6_ORIGDSTADDR && len(m.Data) >= unix.SizeofSockaddrInet6:
			return netip.AddrPortFrom(netip.AddrFrom16([16]byte(m.Data[8:24])), binary.BigEndian.Uint16(m.Data[2:4])), true
		}
	}
	return netip.AddrPort{}, false
}

// sendAs sends msg to dst from src, an address that is not the node's:
// the answer goes on to the pod as the DNS server sent it. The socket
// bound to src is kept in senders, and made again after a failure.
func sendAs(senders map[netip.AddrPort]*net.UDPConn, src, dst netip.AddrPort, msg []byte) error {
	c := senders[src]
	if c == nil {
		var err error
		if c, err = transparentSender(src); err != nil {
			return err
		}
		if len(senders) >= maxSenders {
			for k, s := range senders { // a bound: pods asked unknown servers?
				s.Close()
				delete(senders, k)
			}
		}
		senders[src] = c
	}
	if _, err := c.WriteToUDPAddrPort(msg, dst); err != nil {
		c.Close()
		delete(senders, src)
		return err
	}
	return nil
}

// maxSenders bounds the kept sockets; answers only come from the
// configured servers, so this is never reached in practice.
const maxSenders = 64

// transparentSender returns a UDP socket bound to src, an address that is
// not the node's.
func transparentSender(src netip.AddrPort) (*net.UDPConn, error) {
	network := "udp4"
	if src.Addr().Is6() && !src.Addr().Is4In6() {
		network = "udp6"
	}
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = setsockopts(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR)
			if serr == nil && network == "udp4" {
				serr = setsockopts(int(fd), unix.SOL_IP, unix.IP_TRANSPARENT)
			} else if serr == nil {
				serr = setsockopts(int(fd), unix.SOL_IPV6, unix.IPV6_TRANSPARENT)
			}
		})
		return errors.Join(err, serr)
	}}
	pc, err := lc.ListenPacket(context.Background(), network, src.String())
	if err != nil {
		return nil, err
	}
	return pc.(*net.UDPConn), nil
}

func sorted(a []netip.Addr) []netip.Addr {
	a = slices.Clone(a)
	slices.SortFunc(a, netip.Addr.Compare)
	return slices.Compact(a)
}
