package lab_test

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/lab"
)

// adversarialZone adds to domainLab's zone names under the allowed
// wildcard that stand for the cluster's own addresses: the nodes and a
// pod. (Addresses of no host, such as 169.254.169.254, are the learner's
// unit test's: the lab's zone holds only the lab's addresses.)
const adversarialZone = `    node.allowed.test 60 A 198.19.255.2
    self.allowed.test 60 A 198.19.255.1
    self.allowed.test 60 AAAA fd00:198:19::1
    pod.allowed.test 60 A 198.18.1.2
    pod.allowed.test 60 AAAA fd00:198:18:1::2
`

// denied4 and denied6 are ext/denied, which no answer for an allowed name
// gives: a forged answer that teaches them opened a flow.
var denied4, denied6 = netip.MustParseAddr("198.18.3.2"), netip.MustParseAddr("fd00:198:18:3::2")

// TestLabAdversarialDNS attacks node-1's DNS learning as pods can, with
// real packets, in one lab (domainLab with adversarialZone): every
// subtest ends in what node-1's domain sets hold and what the governed
// client can reach.
func TestLabAdversarialDNS(t *testing.T) {
	requireLab(t)
	manifests := strings.Replace(domainLab, "    api.other.test 60 A 198.18.3.2\n", adversarialZone+"    api.other.test 60 A 198.18.3.2\n", 1)
	l := upLab(t, labName("dnx"), manifests)
	pod := func(key string) lab.Pod {
		i := slices.IndexFunc(l.Pods, func(p lab.Pod) bool { return p.Key == key })
		if i < 0 {
			t.Fatalf("no pod %s", key)
		}
		return l.Pods[i]
	}
	client, plain, coredns := pod("app/client"), pod("other/plain"), pod("kube-system/coredns")
	node1 := l.Nodes[0]
	waitFor(t, "node-1's proxy diverts the client's answers", func() bool { return diverting(l) })
	v4, v6 := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("fd00::1")
	https := l4.Port{Proto: l4.TCP, Num: 443}
	sets := func(t *testing.T) string {
		t.Helper()
		out, err := exec.Command("ip", "netns", "exec", node1.Namespace, "nft", "list", "table", "inet", "netpol").CombinedOutput()
		if err != nil {
			t.Fatalf("nft list table: %v: %s", err, out)
		}
		return string(out)
	}
	learned := func(t *testing.T, a netip.Addr) bool {
		t.Helper()
		return strings.Contains(sets(t), " "+a.String()+" timeout")
	}
	// settle resolves a name the rule allows, in both families, from the
	// client: the proxy handles what reaches each of its sockets in
	// order, so what was sent before has been handled when it returns.
	settle := func(t *testing.T) {
		t.Helper()
		for _, like := range []netip.Addr{v4, v6} {
			if _, err := l.Resolve(client, "settle.allowed.test", like); err != nil {
				t.Errorf("resolving settle.allowed.test after the attack: %v", err)
			}
		}
	}
	reached := func(t *testing.T, a netip.Addr) bool {
		t.Helper()
		ok, err := l.Probe(client, a, https)
		if err != nil {
			t.Fatalf("client -> %s: %v", a, err)
		}
		return ok
	}
	mustNotLearn := func(t *testing.T, what string, addrs ...netip.Addr) {
		t.Helper()
		settle(t)
		for _, a := range addrs {
			if learned(t, a) {
				t.Errorf("%s: node-1 learned %s\n%s", what, a, sets(t))
			}
		}
		if (slices.Contains(addrs, denied4) || slices.Contains(addrs, denied6)) && (reached(t, denied4) || reached(t, denied6)) {
			t.Errorf("%s: the client reached ext/denied on 443", what)
		}
	}

	t.Run("datagram to the proxy port", func(t *testing.T) {
		// Item 1: a pod under no policy sends an answer for an allowed
		// name straight to the proxy's port on node-1's addresses, and
		// one with TC set, which must not make the node dial it.
		ln, err := listenTCPIn(plain.Namespace, netip.AddrPortFrom(plain.IP, 0))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		port := uint16(ln.Addr().(*net.TCPAddr).Port)
		for _, dst := range []netip.Addr{node1.IP, node1.IP6, netip.MustParseAddr("169.254.1.1")} {
			msg := forgedAnswer(t, 7, "forged.allowed.test", false, denied4, denied6)
			if err := sendUDPFrom(plain.Namespace, netip.AddrPortFrom(netip.Addr{}, port), netip.AddrPortFrom(dst, 15353), msg); err != nil {
				t.Fatalf("plain -> %s:15353: %v", dst, err)
			}
		}
		tc := forgedAnswer(t, 8, "tc.allowed.test", true)
		if err := sendUDPFrom(plain.Namespace, netip.AddrPortFrom(netip.Addr{}, port), netip.AddrPortFrom(node1.IP, 15353), tc); err != nil {
			t.Fatal(err)
		}
		// The governed client over IPv6 link-local: its egress policy
		// denies the node, and the port must not read it either.
		ll, err := gatewayLinkLocal(client.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		msg := forgedAnswer(t, 9, "ll.allowed.test", false, denied4, denied6)
		if err := sendUDPFrom(client.Namespace, netip.AddrPort{}, netip.AddrPortFrom(ll, 15353), msg); err != nil {
			t.Fatalf("client -> [%s]:15353: %v", ll, err)
		}
		mustNotLearn(t, "answers sent to node-1's proxy port", denied4, denied6)
		_ = ln.(*net.TCPListener).SetDeadline(time.Now().Add(3 * time.Second))
		if c, err := ln.Accept(); err == nil {
			c.Close()
			t.Errorf("node-1 connected to plain's port %d after plain sent it an answer with TC set", port)
		}
	})

	t.Run("forged reply", func(t *testing.T) {
		// Item 2: the client asks; from the DNS backend's address come,
		// besides the real answer, replies with another ID, and with the
		// query's ID but another question: neither teaches.
		var c *net.UDPConn
		err := lab.InNamespace(client.Namespace, func() error {
			var err error
			c, err = net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.MustParseAddrPort("198.18.0.10:53")))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		q := query(t, 0x1234, "q.allowed.test", dnsmessage.TypeA)
		if _, err := c.Write(q); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 1500)
		if _, err := c.Read(buf); err != nil {
			t.Fatalf("the real answer: %v", err)
		}
		clientPort := netip.MustParseAddrPort(c.LocalAddr().String()).Port()
		for _, f := range []struct {
			id   uint16
			name string
		}{{0x1235, "q.allowed.test"}, {0x1234, "other.allowed.test"}, {0x4321, "spray.allowed.test"}} {
			msg := forgedAnswer(t, f.id, f.name, false, denied4)
			if err := rawUDP4(coredns.Namespace, 53, netip.AddrPortFrom(client.IP, clientPort), msg); err != nil {
				t.Fatal(err)
			}
		}
		mustNotLearn(t, "replies from the DNS backend that answer no query the client sent", denied4)
	})

	t.Run("names that stand for cluster addresses", func(t *testing.T) {
		// Item 3: names under the allowed wildcard whose answers give a
		// node or a pod.
		for _, name := range []string{"node", "self", "pod"} {
			for _, like := range []netip.Addr{v4, v6} {
				_, _ = l.Resolve(client, name+".allowed.test", like) // some have no record of the family
			}
		}
		var never []netip.Addr
		for _, a := range []string{"198.19.255.2", "198.19.255.1", "fd00:198:19::1", "198.18.1.2", "fd00:198:18:1::2"} {
			never = append(never, netip.MustParseAddr(a))
		}
		mustNotLearn(t, "answers that name cluster addresses", never...)
		// The control: an ordinary answer still teaches.
		if a, err := l.Resolve(client, "www.allowed.test", v4); err != nil || len(a) != 1 || !learned(t, a[0]) || !reached(t, a[0]) {
			t.Errorf("www.allowed.test: %v %v, want 198.18.3.1 learned and reached", a, err)
		}
	})

	t.Run("shutdown removes the routing", func(t *testing.T) {
		// Item 18: an agent that stops (SIGTERM) leaves no routing rule
		// or route of its mark behind.
		if err := syscall.Kill(l.PIDs[0], syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "node-1's agent exits", func() bool { return syscall.Kill(l.PIDs[0], 0) != nil })
		out, err := exec.Command("ip", "netns", "exec", node1.Namespace, "sh", "-c",
			"ip -4 rule; ip -6 rule; ip -4 route show table all; ip -6 route show table all").CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, "lookup 153") || strings.Contains(line, "table 153") {
				t.Errorf("node-1 after its agent stopped: %q, want no rule or route of the DNS divert", line)
			}
		}
	})
}

// TestLabAdversarialDNSTargetPort: CoreDNS listens on 5353 behind the
// kube-dns Service's port 53 (as many clusters run it): answers must
// teach as they do from 53.
func TestLabAdversarialDNSTargetPort(t *testing.T) {
	requireLab(t)
	manifests := strings.Replace(domainLab, "{name: dns, containerPort: 53, protocol: UDP}, {name: dns-tcp, containerPort: 53, protocol: TCP}",
		"{name: dns, containerPort: 5353, protocol: UDP}, {name: dns-tcp, containerPort: 5353, protocol: TCP}", 1)
	if manifests == domainLab {
		t.Fatal("domainLab's DNS pod has changed: no port to move")
	}
	// The client may reach the DNS pod on its real port.
	manifests = strings.Replace(manifests, "ports: [{portNumber: {port: 53, protocol: UDP}}, {portNumber: {port: 53, protocol: TCP}}]",
		"ports: [{portNumber: {port: 5353, protocol: UDP}}, {portNumber: {port: 5353, protocol: TCP}}]", 1)
	l := upLab(t, labName("dnp"), manifests)
	client := l.Pods[slices.IndexFunc(l.Pods, func(p lab.Pod) bool { return p.Key == "app/client" })]
	waitFor(t, "node-1's proxy diverts the client's answers", func() bool { return diverting(l) })
	for _, like := range []netip.Addr{netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("fd00::1")} {
		addr, c, err := l.ResolveThenDial(client, "www.allowed.test", like, 443)
		if err != nil {
			log, _ := os.ReadFile(l.AgentLog("node-1"))
			t.Errorf("client resolving www.allowed.test through kube-dns (CoreDNS on 5353) and connecting to %s: %v\nnode-1's agent:\n%s", addr, err, log)
			continue
		}
		c.Close()
	}
}

// forgedAnswer is a DNS response with id for name: an A or AAAA record
// per address (TTL 60), or none and TC set.
func forgedAnswer(t *testing.T, id uint16, name string, tc bool, addrs ...netip.Addr) []byte {
	t.Helper()
	n := dnsmessage.MustNewName(name + ".")
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, Response: true, Truncated: tc, RecursionAvailable: true})
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.StartQuestions())
	must(b.Question(dnsmessage.Question{Name: n, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}))
	must(b.StartAnswers())
	for _, a := range addrs {
		h := dnsmessage.ResourceHeader{Name: n, Class: dnsmessage.ClassINET, TTL: 60}
		if a.Is4() {
			must(b.AResource(h, dnsmessage.AResource{A: a.As4()}))
		} else {
			must(b.AAAAResource(h, dnsmessage.AAAAResource{AAAA: a.As16()}))
		}
	}
	msg, err := b.Finish()
	must(err)
	return msg
}

// query is a DNS query with id for name.
func query(t *testing.T, id uint16, name string, typ dnsmessage.Type) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, RecursionDesired: true})
	if err := b.StartQuestions(); err != nil {
		t.Fatal(err)
	}
	if err := b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name + "."), Type: typ, Class: dnsmessage.ClassINET}); err != nil {
		t.Fatal(err)
	}
	msg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// sendUDPFrom sends one datagram from network namespace ns, from src's
// port (any when zero), to dst.
func sendUDPFrom(ns string, src, dst netip.AddrPort, msg []byte) error {
	return lab.InNamespace(ns, func() error {
		laddr := &net.UDPAddr{Port: int(src.Port())}
		network := "udp4"
		if dst.Addr().Is6() {
			network = "udp6"
		}
		var d net.Dialer
		d.LocalAddr = laddr
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1) })
			return errors.Join(err, serr)
		}
		c, err := d.Dial(network, dst.String())
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.Write(msg)
		return err
	})
}

// listenTCPIn listens on addr in network namespace ns.
func listenTCPIn(ns string, addr netip.AddrPort) (net.Listener, error) {
	var ln net.Listener
	err := lab.InNamespace(ns, func() error {
		var err error
		ln, err = net.Listen("tcp", addr.String())
		return err
	})
	return ln, err
}

// gatewayLinkLocal is the link-local address of the pod's gateway (the
// node's side of its veth), with the pod's interface as its zone.
func gatewayLinkLocal(ns string) (netip.Addr, error) {
	var a netip.Addr
	err := lab.InNamespace(ns, func() error {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return err
		}
		a = netip.MustParseAddr("fe80::1").WithZone(ifi.Name)
		return nil
	})
	return a, err
}

// rawUDP4 sends msg from port sport of the namespace's own address to
// dst, through a raw socket: the port may be one a server there holds.
func rawUDP4(ns string, sport uint16, dst netip.AddrPort, msg []byte) error {
	return lab.InNamespace(ns, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_UDP)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		pkt := binary.BigEndian.AppendUint16(nil, sport)
		pkt = binary.BigEndian.AppendUint16(pkt, dst.Port())
		pkt = binary.BigEndian.AppendUint16(pkt, uint16(8+len(msg)))
		pkt = append(pkt, 0, 0) // no checksum (IPv4 allows it)
		pkt = append(pkt, msg...)
		return unix.Sendto(fd, pkt, 0, &unix.SockaddrInet4{Addr: dst.Addr().As4()})
	})
}
