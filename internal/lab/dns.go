package lab

// The lab's cluster DNS. When the manifests hold a ConfigMap kube-system/
// lab-dns, the backends of the Service kube-system/kube-dns answer DNS on
// their port 53 (UDP and TCP) from the zone in its data key "zone", one
// record a line:
//
//	NAME [TTL] TYPE VALUE      (TYPE: A, AAAA or CNAME; TTL 60 when left out)
//
// NAME may be a wildcard, "*.allowed.test", standing for every name below
// it that the zone does not name itself. Addresses must be the lab's own
// (198.18.0.0/15, fd00::/8): a name stands for a lab pod. A pod resolves
// through the kube-dns Service's address (Resolve), through the lab's
// kube-proxy, as a pod's resolver does: so the agents' DNS proxies see the
// answers as they would on a node.

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"sigs.k8s.io/yaml"

	"github.com/netpol/netpol/internal/dns"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
)

// ZoneRecord is one record of the lab's zone.
type ZoneRecord struct {
	Name  string `json:"name"` // canonical (policy.CanonicalDomain); "*." for a wildcard
	TTL   uint32 `json:"ttl"`
	Type  string `json:"type"` // A, AAAA, CNAME
	Value string `json:"value"`
}

// The objects that make the lab's DNS.
const (
	dnsNamespace = "kube-system"
	dnsService   = "kube-dns"
	zoneMap      = "lab-dns"
)

// zoneFromManifests reads the zone of the ConfigMap kube-system/lab-dns,
// if the manifests have one.
func zoneFromManifests(manifests []byte) ([]ZoneRecord, error) {
	for _, doc := range source.SplitDocuments(manifests) {
		if !bytes.Contains(doc, []byte(zoneMap)) {
			continue
		}
		var cm struct {
			Kind     string
			Metadata struct{ Name, Namespace string }
			Data     map[string]string
		}
		if err := yaml.Unmarshal(doc, &cm); err != nil || cm.Kind != "ConfigMap" || cm.Metadata.Name != zoneMap || cm.Metadata.Namespace != dnsNamespace {
			continue
		}
		zone, err := parseZone(cm.Data["zone"])
		if err != nil {
			return nil, fmt.Errorf("ConfigMap %s/%s data.zone: %w", dnsNamespace, zoneMap, err)
		}
		return zone, nil
	}
	return nil, nil
}

// parseZone reads the zone's lines.
func parseZone(text string) ([]ZoneRecord, error) {
	var zone []ZoneRecord
	for i, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		r := ZoneRecord{TTL: 60}
		if len(f) == 4 {
			ttl, err := strconv.ParseUint(f[1], 10, 32)
			if err != nil {
				return nil, fmt.Errorf("line %d: TTL %q: %w", i+1, f[1], err)
			}
			r.TTL, f = uint32(ttl), append(f[:1], f[2:]...)
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: %q is not NAME [TTL] TYPE VALUE", i+1, line)
		}
		r.Name, r.Type, r.Value = policy.CanonicalDomain(f[0]), strings.ToUpper(f[1]), f[2]
		switch r.Type {
		case "A", "AAAA":
			a, err := netip.ParseAddr(r.Value)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", i+1, err)
			}
			if (r.Type == "A") != a.Is4() || a.Is4() && !podRange4.Contains(a) || a.Is6() && !ula.Contains(a) {
				return nil, fmt.Errorf("line %d: %s %s: the lab's names stand for its own addresses (%s as A, %s as AAAA)", i+1, r.Type, a, podRange4, ula)
			}
		case "CNAME":
			r.Value = policy.CanonicalDomain(r.Value)
		default:
			return nil, fmt.Errorf("line %d: type %q: the lab's zone has A, AAAA and CNAME records", i+1, f[1])
		}
		zone = append(zone, r)
	}
	return zone, nil
}

// lookup returns the records of name: its own, or else those of the
// closest wildcard above it.
func lookup(zone []ZoneRecord, name string) []ZoneRecord {
	find := func(n string) []ZoneRecord {
		var out []ZoneRecord
		for _, r := range zone {
			if r.Name == n {
				out = append(out, r)
			}
		}
		return out
	}
	if rs := find(name); len(rs) > 0 {
		return rs
	}
	for rest := name; ; {
		_, parent, ok := strings.Cut(rest, ".")
		if !ok {
			return nil
		}
		if rs := find("*." + parent); len(rs) > 0 {
			return rs
		}
		rest = parent
	}
}

// answerQuery answers a DNS query from zone: the records of the asked
// type, through CNAMEs of the zone, or NXDOMAIN.
func answerQuery(zone []ZoneRecord, query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired})
	b.EnableCompression()
	_ = b.StartQuestions()
	_ = b.Question(q)
	_ = b.StartAnswers()
	owner, name := q.Name, policy.CanonicalDomain(q.Name.String())
	found := false
	for hops := 0; hops < 8; hops++ {
		rs := lookup(zone, name)
		found = found || len(rs) > 0
		var next string
		for _, r := range rs {
			hdr := dnsmessage.ResourceHeader{Name: owner, Class: dnsmessage.ClassINET, TTL: r.TTL}
			switch {
			case r.Type == "CNAME":
				target, err := dnsmessage.NewName(r.Value + ".")
				if err != nil {
					return nil, err
				}
				if err := b.CNAMEResource(hdr, dnsmessage.CNAMEResource{CNAME: target}); err != nil {
					return nil, err
				}
				next, owner = r.Value, target
			case r.Type == "A" && q.Type == dnsmessage.TypeA:
				if err := b.AResource(hdr, dnsmessage.AResource{A: netip.MustParseAddr(r.Value).As4()}); err != nil {
					return nil, err
				}
			case r.Type == "AAAA" && q.Type == dnsmessage.TypeAAAA:
				if err := b.AAAAResource(hdr, dnsmessage.AAAAResource{AAAA: netip.MustParseAddr(r.Value).As16()}); err != nil {
					return nil, err
				}
			}
		}
		if next == "" {
			break
		}
		name = next
	}
	msg, err := b.Finish()
	if err != nil {
		return nil, err
	}
	if !found {
		msg[3] |= byte(dnsmessage.RCodeNameError) // the RCODE bits of the header
	}
	return msg, nil
}

// servesDNS reports whether pod key answers DNS on port: a backend of
// kube-system/kube-dns on the port the Service sends to (53, or another
// such as CoreDNS's 5353), when the lab has a zone.
func (l *Lab) servesDNS(key string, port l4.Port) bool {
	if len(l.Zone) == 0 {
		return false
	}
	for _, s := range l.Services {
		if s.Key != dnsNamespace+"/"+dnsService {
			continue
		}
		for _, sp := range s.Ports {
			for _, b := range sp.Backends {
				if b.Pod == key && b.Port == port {
					return true
				}
			}
		}
	}
	return false
}

// dnsUDPLoop answers DNS queries from zone, and anything else as every
// lab server does (a probe's datagram is echoed).
func dnsUDPLoop(pc net.PacketConn, zone []ZoneRecord, pod string) {
	buf := make([]byte, 512)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		msg, err := answerQuery(zone, buf[:n])
		if err != nil {
			msg = reply(buf[:n], pod)
		} else if len(msg) > maxUDPAnswer {
			msg = truncate(msg)
		}
		_, _ = pc.WriteTo(msg, from)
	}
}

// maxUDPAnswer is the most a UDP answer holds without EDNS (RFC 1035
// 4.2.1); a larger one goes as its header and question with TC set, and
// the resolver asks again over TCP.
const maxUDPAnswer = 512

// truncate returns msg's header, with TC set and no records, and question.
func truncate(msg []byte) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(msg)
	if err != nil {
		return msg[:12]
	}
	q, err := p.Question()
	if err != nil {
		return msg[:12]
	}
	h.Truncated = true
	b := dnsmessage.NewBuilder(nil, h)
	_ = b.StartQuestions()
	_ = b.Question(q)
	out, err := b.Finish()
	if err != nil {
		return msg[:12]
	}
	return out
}

func dnsTCPLoop(ln net.Listener, zone []ZoneRecord) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			query, err := dns.ReadTCP(c)
			if err != nil {
				return
			}
			if msg, err := answerQuery(zone, query); err == nil {
				_ = dns.WriteTCP(c, msg)
			}
		}()
	}
}

// dnsAddr is the kube-dns Service's address of like's family.
func (l *Lab) dnsAddr(like netip.Addr) (netip.Addr, error) {
	for _, s := range l.Services {
		if s.Key != dnsNamespace+"/"+dnsService {
			continue
		}
		for _, a := range s.Addrs {
			if a.Is4() == like.Is4() {
				return a, nil
			}
		}
	}
	return netip.Addr{}, fmt.Errorf("the lab has no Service %s/%s with an address of %s's family", dnsNamespace, dnsService, like)
}

// ErrNoSuchName is Resolve's error for a name the zone does not have.
var ErrNoSuchName = errors.New("no such name")

// Resolve asks the lab's DNS, from pod src, for the addresses of name of
// the family of like (A for IPv4, AAAA for IPv6), over UDP, as a pod's
// resolver does: through the kube-dns Service's address.
func (l *Lab) Resolve(src Pod, name string, like netip.Addr) ([]netip.Addr, error) {
	server, err := l.dnsAddr(like)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	err = inNamespace(src.Namespace, func() error {
		addrs, err = resolve(server, name, like)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("resolving %s from %s through %s: %w", name, src.Key, server, err)
	}
	return addrs, nil
}

// ResolveThenDial resolves name from pod src as Resolve does and, in the
// same breath, connects to the first address on port (TCP), as an
// application does: nothing happens between the answer's arrival and the
// connection's first packet but reading the answer.
func (l *Lab) ResolveThenDial(src Pod, name string, like netip.Addr, port uint16) (netip.Addr, net.Conn, error) {
	server, err := l.dnsAddr(like)
	if err != nil {
		return netip.Addr{}, nil, err
	}
	var addr netip.Addr
	var conn net.Conn
	var dialErr error
	err = inNamespace(src.Namespace, func() error {
		addrs, err := resolve(server, name, like)
		if err != nil {
			return err
		}
		if len(addrs) == 0 {
			return fmt.Errorf("%s: no address", name)
		}
		addr = addrs[0]
		d := net.Dialer{Timeout: ProbeTimeout}
		conn, dialErr = d.Dial(network("tcp", addr), net.JoinHostPort(addr.String(), strconv.Itoa(int(port))))
		return nil
	})
	if err != nil {
		return addr, nil, fmt.Errorf("resolving %s from %s through %s: %w", name, src.Key, server, err)
	}
	return addr, conn, dialErr
}

// resolve asks server, from the namespace of the calling thread.
func resolve(server netip.Addr, name string, like netip.Addr) ([]netip.Addr, error) {
	typ := dnsmessage.TypeA
	if like.Is6() {
		typ = dnsmessage.TypeAAAA
	}
	qname, err := dnsmessage.NewName(policy.CanonicalDomain(name) + ".")
	if err != nil {
		return nil, fmt.Errorf("name %q: %w", name, err)
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: uint16(time.Now().UnixNano()), RecursionDesired: true})
	_ = b.StartQuestions()
	_ = b.Question(dnsmessage.Question{Name: qname, Type: typ, Class: dnsmessage.ClassINET})
	query, err := b.Finish()
	if err != nil {
		return nil, err
	}
	c, err := net.Dial(network("udp", server), net.JoinHostPort(server.String(), "53"))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write(query); err != nil {
		return nil, err
	}
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		return nil, err
	}
	a, err := dns.ParseResponse(buf[:n])
	if err != nil {
		return nil, err
	}
	if a.Truncated { // as a resolver does: the whole answer over TCP
		if a, err = resolveTCP(server, query); err != nil {
			return nil, err
		}
	}
	if a.RCode == int(dnsmessage.RCodeNameError) {
		return nil, fmt.Errorf("%s: %w", name, ErrNoSuchName)
	}
	addrs := make([]netip.Addr, len(a.Addrs))
	for i, ad := range a.Addrs {
		addrs[i] = ad.IP
	}
	return addrs, nil
}

// resolveTCP asks server query over TCP.
func resolveTCP(server netip.Addr, query []byte) (dns.Answer, error) {
	msg, err := dns.ExchangeTCP(netip.AddrPortFrom(server, 53), query, 2*time.Second)
	if err != nil {
		return dns.Answer{}, err
	}
	return dns.ParseResponse(msg)
}

// NameCell is one connection to a name: resolved from pod From through the
// lab's DNS, then probed to the answer's address on Port.
type NameCell struct {
	From     string     `json:"from"`
	Name     string     `json:"name"`
	Addr     netip.Addr `json:"addr"`
	To       string     `json:"to"` // the lab pod that holds Addr
	Port     l4.Port    `json:"port"`
	Observed bool       `json:"observed"`
	Err      error      `json:"-"`
}

// zoneNames are the names to ask for: each name of the zone, and for a
// wildcard one name below it.
func zoneNames(zone []ZoneRecord) []string {
	var names []string
	seen := map[string]bool{}
	for _, r := range zone {
		n := r.Name
		if rest, ok := strings.CutPrefix(n, "*."); ok {
			n = "probe." + rest
		}
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names
}

// ProbeNames has every pod resolve every name of the zone (zoneNames), in
// each family it has, and connect to the answer on the ports its pod
// serves among ports (all when nil): as a client does, one name at a time,
// the connection right after its answer. Names without an answer in a
// family are left out.
func (l *Lab) ProbeNames(ports []l4.Port) []NameCell {
	owner := map[netip.Addr]Pod{}
	for _, p := range l.Pods {
		for _, a := range p.Addrs() {
			owner[a] = p
		}
	}
	var cells []NameCell
	for _, src := range l.Pods {
		if l.servesDNS(src.Key, l4.Port{Proto: l4.UDP, Num: 53}) {
			continue
		}
		for _, name := range zoneNames(l.Zone) {
			for _, like := range src.Addrs() {
				addrs, err := l.Resolve(src, name, like)
				if errors.Is(err, ErrNoSuchName) || err == nil && len(addrs) == 0 {
					continue
				}
				if err != nil {
					cells = append(cells, NameCell{From: src.Key, Name: name, Err: err})
					continue
				}
				dst, ok := owner[addrs[0]]
				if !ok {
					cells = append(cells, NameCell{From: src.Key, Name: name, Addr: addrs[0], Err: fmt.Errorf("%s resolved to %s, no lab pod's address", name, addrs[0])})
					continue
				}
				for _, port := range dst.Ports {
					if ports != nil && !contains(ports, port) || port.Proto != l4.TCP && port.Proto != l4.UDP {
						continue
					}
					c := NameCell{From: src.Key, Name: name, Addr: addrs[0], To: dst.Key, Port: port}
					c.Observed, c.Err = l.ProbeSure(src, addrs[0], port)
					cells = append(cells, c)
				}
			}
		}
	}
	return cells
}

// Answered are the names each address was an answer for in a run of
// probes: in the kernel an address that an answer taught stays allowed by
// a rule naming the name until the answer's TTL expires, whoever connects
// and however they came by the address, so a prediction gives the address
// all of them (engine.Endpoint.ResolvedAs).
type Answered map[netip.Addr][]string

// Add notes that c's name resolved to c's address.
func (a Answered) Add(c NameCell) {
	if !slices.Contains(a[c.Addr], c.Name) {
		a[c.Addr] = append(a[c.Addr], c.Name)
	}
}

// Predict is e's flow and verdict from pod or address from to address to
// on port, to standing for the names it was an answer for.
func (a Answered) Predict(e *engine.Engine, from string, to netip.Addr, port l4.Port) (engine.Flow, engine.Verdict, error) {
	src, err := e.Endpoint(from)
	if err != nil {
		return engine.Flow{}, engine.Verdict{}, err
	}
	dst, err := e.Endpoint(to.String())
	if err == nil {
		dst, err = dst.ResolvedAs(a[to])
	}
	if err != nil {
		return engine.Flow{}, engine.Verdict{}, err
	}
	f := engine.Flow{Src: src, Dst: dst, Port: port}
	return f, e.Decide(f), nil
}
