package lab_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/lab"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
)

// Issue 25, section C: every packet of a pod is judged, and a cut holds for
// every protocol whichever side speaks next. Each test attacks with real
// packets (raw sockets where the attack needs NET_RAW).

// packetLab: client, other and late on node-1, server on node-2, all dual
// stack; no policy until a test adds one.
const packetLab = `
apiVersion: v1
kind: Node
metadata: {name: node-1}
status: {addresses: [{type: InternalIP, address: 198.19.255.1}, {type: InternalIP, address: "fd00:198:19::1"}]}
---
apiVersion: v1
kind: Node
metadata: {name: node-2}
status: {addresses: [{type: InternalIP, address: 198.19.255.2}, {type: InternalIP, address: "fd00:198:19::2"}]}
---
apiVersion: v1
kind: Namespace
metadata: {name: app, labels: {kubernetes.io/metadata.name: app}}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: app, labels: {app: client}}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIPs: [{ip: 198.18.1.1}, {ip: "fd00:198:18:1::1"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: app, labels: {app: other}}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIPs: [{ip: 198.18.1.2}, {ip: "fd00:198:18:1::2"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: server, namespace: app, labels: {app: server}}
spec: {nodeName: node-2, containers: [{name: c, ports: [{containerPort: 80}]}]}
status: {podIPs: [{ip: 198.18.2.1}, {ip: "fd00:198:18:2::1"}]}
`

// latePod is on node-1 too; some tests keep it from the agents.
const latePod = `
---
apiVersion: v1
kind: Pod
metadata: {name: late, namespace: app, labels: {app: late}}
spec: {nodeName: node-1, containers: [{name: c, ports: [{containerPort: 80}]}]}
status: {podIPs: [{ip: 198.18.1.3}, {ip: "fd00:198:18:1::3"}]}
`

// clientEgressDenied isolates the client's egress with nothing allowed:
// every address is denied to it, its node's included.
const clientEgressDenied = `
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: client-nothing-out, namespace: app}
spec:
  podSelector: {matchLabels: {app: client}}
  policyTypes: [Egress]
`

// serverIngressDenied isolates the server's ingress with nothing allowed.
const serverIngressDenied = `
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: server-nothing-in, namespace: app}
spec:
  podSelector: {matchLabels: {app: server}}
  policyTypes: [Ingress]
`

func labPod(t *testing.T, l *lab.Lab, key string) lab.Pod {
	t.Helper()
	i := slices.IndexFunc(l.Pods, func(p lab.Pod) bool { return p.Key == key })
	if i < 0 {
		t.Fatalf("no pod %s in the lab", key)
	}
	return l.Pods[i]
}

// TestLabAdversarialSpoofedSourceSYN: a pod with NET_RAW whose egress
// denies everything sends TCP SYNs from a raw socket with a source that is
// not its own (a pod of its node under no policy, an address of no pod):
// none may arrive. The other pod's own SYN shows that such a SYN arrives
// when it is allowed.
func TestLabAdversarialSpoofedSourceSYN(t *testing.T) {
	requireLab(t)
	l := upLab(t, labName("spf"), packetLab+clientEgressDenied)
	client, other, server := labPod(t, l, "app/client"), labPod(t, l, "app/other"), labPod(t, l, "app/server")
	if !synArrives(t, l, other, other.IP, server, 80) {
		t.Fatal("other's own SYN (no policy) did not arrive: the probe is broken")
	}
	if synArrives(t, l, client, client.IP, server, 80) {
		t.Fatal("the client's SYN from its own address arrived despite its egress policy")
	}
	for _, src := range []netip.Addr{other.IP, netip.MustParseAddr("198.18.77.77")} {
		if synArrives(t, l, client, src, server, 80) {
			t.Errorf("the client's SYN with source %s arrived at the server: its egress policy was skipped", src)
		}
	}
}

// synArrives sends one TCP SYN from pod from's namespace, with IPv4 source
// src (raw, IP_HDRINCL), to pod to on port, and reports whether it reached
// to's namespace before lab.ProbeTimeout.
func synArrives(t *testing.T, l *lab.Lab, from lab.Pod, src netip.Addr, to lab.Pod, port uint16) bool {
	t.Helper()
	var rx, tx net.PacketConn
	if err := l.InPod(to, func() (err error) { rx, err = net.ListenPacket("ip4:tcp", to.IP.String()); return err }); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	if err := l.InPod(from, func() (err error) { tx, err = net.ListenPacket("ip4:tcp", "0.0.0.0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	raw, err := ipv4.NewRawConn(tx)
	if err != nil {
		t.Fatal(err)
	}
	seq := rand.Uint32()
	sport := uint16(20000 + rand.IntN(20000))
	seg := tcpSYN(src, to.IP, sport, port, seq)
	h := &ipv4.Header{Version: 4, Len: ipv4.HeaderLen, TotalLen: ipv4.HeaderLen + len(seg), TTL: 64, Protocol: 6,
		Src: src.AsSlice(), Dst: to.IP.AsSlice()}
	if err := raw.WriteTo(h, seg, nil); err != nil {
		t.Fatalf("sending a SYN from %s as %s: %v", from.Key, src, err)
	}
	_ = rx.SetReadDeadline(time.Now().Add(lab.ProbeTimeout))
	buf := make([]byte, 1500)
	for {
		n, _, err := rx.ReadFrom(buf) // the IPv4 header is stripped
		if isTimeout(err) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		if n >= 20 && binary.BigEndian.Uint16(buf[2:]) == port && binary.BigEndian.Uint32(buf[4:]) == seq && buf[13]&0x02 != 0 {
			return true
		}
	}
}

// tcpSYN is a TCP header with SYN set and its checksum over src and dst.
func tcpSYN(src, dst netip.Addr, sport, dport uint16, seq uint32) []byte {
	seg := make([]byte, 20)
	binary.BigEndian.PutUint16(seg[0:], sport)
	binary.BigEndian.PutUint16(seg[2:], dport)
	binary.BigEndian.PutUint32(seg[4:], seq)
	seg[12] = 5 << 4 // data offset: 5 words
	seg[13] = 0x02   // SYN
	binary.BigEndian.PutUint16(seg[14:], 65535)
	pseudo := append(append(append([]byte{}, src.AsSlice()...), dst.AsSlice()...), 0, 6, 0, byte(len(seg)))
	binary.BigEndian.PutUint16(seg[16:], checksum(append(pseudo, seg...)))
	return seg
}

func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(binary.BigEndian.Uint16(b[i:]))
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// nodeService listens on TCP port of every address of node n (its
// link-local ones too) and hands over the connections it accepts.
func nodeService(t *testing.T, l *lab.Lab, n lab.Node, port string) <-chan net.Conn {
	t.Helper()
	var ln net.Listener
	if err := l.InNode(n, func() (err error) { ln, err = net.Listen("tcp", ":"+port); return err }); err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case accepted <- c:
			default:
				c.Close()
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for {
			select {
			case c := <-accepted:
				c.Close()
			default:
				return
			}
		}
	})
	return accepted
}

// dialIn connects over TCP from pod p's namespace and reports whether the
// handshake completed.
func dialIn(t *testing.T, l *lab.Lab, p lab.Pod, addr string) bool {
	t.Helper()
	var c net.Conn
	var dialErr error
	if err := l.InPod(p, func() error {
		d := net.Dialer{Timeout: lab.ProbeTimeout}
		c, dialErr = d.Dial("tcp", addr)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if dialErr != nil {
		if !isTimeout(dialErr) {
			t.Logf("%s -> %s: %v", p.Key, addr, dialErr)
		}
		return false
	}
	c.Close()
	return true
}

// TestLabAdversarialLinkLocalToNode: the client's egress denies every
// address, its node's too; a service of the node listens on all of the
// node's addresses. The client must not reach it over IPv6 link-local
// (the node's fe80::1 on the client's link) from its link-local source.
// The other pod, under no policy, shows the
// service answers on the node's addresses.
func TestLabAdversarialLinkLocalToNode(t *testing.T) {
	requireLab(t)
	l := upLab(t, labName("ll"), packetLab+clientEgressDenied)
	client, other, node1 := labPod(t, l, "app/client"), labPod(t, l, "app/other"), l.Nodes[0]
	nodeService(t, l, node1, "9090")
	for _, a := range []netip.Addr{node1.IP, node1.IP6} {
		addr := net.JoinHostPort(a.String(), "9090")
		if !dialIn(t, l, other, addr) {
			t.Fatalf("other (no policy) does not reach the node's service at %s: the test is broken", addr)
		}
		if dialIn(t, l, client, addr) {
			t.Fatalf("the client reached the node at %s despite its egress policy", addr)
		}
	}
	// (From its own global address the client's kernel refuses to reach a
	// link-local address at all: network is unreachable.)
	linkLocal := "[fe80::1%eth0]:9090"
	if dialIn(t, l, client, linkLocal) {
		t.Errorf("the client reached the node's service at %s from its link-local address", linkLocal)
	}
}

// TestLabAdversarialUnprogrammedPod: a pod that is wired (its namespace,
// veth and routes exist, as the CNI leaves them) but not yet in the
// agents' input, as between a pod's start and the agent's next pass, must
// neither reach nor be reached (its node's probes excepted); once the agents know it, it is judged by
// the rules (here: none, so allowed).
func TestLabAdversarialUnprogrammedPod(t *testing.T) {
	requireLab(t)
	full := packetLab + latePod
	dec := &source.Decoder{}
	e, _, err := pipeline.Build(dec.Decode("lab.yaml", []byte(full)), dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.Plan(labName("new"), e.Cluster())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Up(netpolBinary, []byte(packetLab), io.Discard); err != nil { // the agents do not know late
		t.Fatal(err)
	}
	servers, err := l.Serve()
	t.Cleanup(func() {
		if servers != nil {
			servers.Close()
		}
		if err := l.Down(); err != nil {
			t.Errorf("lab down: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	late, server := labPod(t, l, "app/late"), labPod(t, l, "app/server")
	for _, a := range []struct {
		from lab.Pod
		to   netip.Addr
	}{{late, server.IP}, {late, server.IP6}, {server, late.IP}, {server, late.IP6}} {
		if ok, err := l.Probe(a.from, a.to, tcp(80)); err != nil || ok {
			t.Errorf("before the agents know app/late: %s -> %s: connected=%v err=%v, want denied", a.from.Key, a.to, ok, err)
		}
	}
	// The node itself (a kubelet probe) reaches the pod all the same: its
	// packets leave by the output hook, and the pod's answers are replies.
	for _, a := range []netip.Addr{late.IP, late.IP6} {
		var c net.Conn
		var dialErr error
		if err := l.InNode(l.Nodes[0], func() error {
			c, dialErr = (&net.Dialer{Timeout: lab.ProbeTimeout}).Dial("tcp", net.JoinHostPort(a.String(), "80"))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if dialErr != nil {
			t.Errorf("node-1 (a kubelet probe) -> app/late at %s before it is programmed: %v, want connected", a, dialErr)
		} else {
			c.Close()
		}
	}
	if err := l.WriteManifests([]byte(full)); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct {
		from lab.Pod
		to   netip.Addr
	}{{late, server.IP}, {late, server.IP6}, {server, late.IP}, {server, late.IP6}} {
		if ok, err := l.Probe(a.from, a.to, tcp(80)); err != nil || !ok {
			t.Errorf("once the agents know app/late: %s -> %s: connected=%v err=%v, want allowed", a.from.Key, a.to, ok, err)
		}
	}
}

// TestLabAdversarialPingCutAfterDeny: a running ping (one ICMP echo
// identifier) gets its replies; a policy then denies the server's ingress,
// and the next echo of the same ping must get none.
func TestLabAdversarialPingCutAfterDeny(t *testing.T) {
	requireLab(t)
	l := upLab(t, labName("png"), packetLab)
	client, server := labPod(t, l, "app/client"), labPod(t, l, "app/server")
	var c *icmp.PacketConn
	if err := l.InPod(client, func() (err error) { c, err = icmp.ListenPacket("ip4:icmp", client.IP.String()); return err }); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := 1 + rand.IntN(0xfffe)
	ping := func(seq int) bool {
		t.Helper()
		msg, err := (&icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: []byte("netpol")}}).Marshal(nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.WriteTo(msg, &net.IPAddr{IP: server.IP.AsSlice()}); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(lab.ProbeTimeout))
		buf := make([]byte, 1500)
		for {
			n, _, err := c.ReadFrom(buf)
			if isTimeout(err) {
				return false
			}
			if err != nil {
				t.Fatal(err)
			}
			m, err := icmp.ParseMessage(1, buf[:n])
			if err != nil || m.Type != ipv4.ICMPTypeEchoReply {
				continue
			}
			if e, ok := m.Body.(*icmp.Echo); ok && e.ID == id && e.Seq == seq {
				return true
			}
		}
	}
	if !ping(1) {
		t.Fatal("no echo reply before the policy")
	}
	if err := l.WriteManifests([]byte(packetLab + serverIngressDenied)); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if ping(2) {
		t.Error("the running ping still gets its replies after a policy denied the server's ingress")
	}
}

// TestLabAdversarialNodeSpeaksFirstAfterCut: the client holds a TCP
// connection to a service of its node; its egress policy then denies
// everything and the agent cuts the connection. The node speaking first
// must not re-open it: the client must not get the node's bytes, nor the
// node the client's answer.
func TestLabAdversarialNodeSpeaksFirstAfterCut(t *testing.T) {
	requireLab(t)
	l := upLab(t, labName("nsf"), packetLab)
	client, node1 := labPod(t, l, "app/client"), l.Nodes[0]
	accepted := nodeService(t, l, node1, "9091")
	conn, err := l.Dial(client, node1.IP, tcp(9091))
	if err != nil {
		t.Fatalf("the client connecting to its node: %v", err)
	}
	defer conn.Close()
	var srv net.Conn
	select {
	case srv = <-accepted:
	case <-time.After(lab.ProbeTimeout):
		t.Fatal("the node's service accepted nothing")
	}
	say := func(from, to net.Conn, what string) error {
		if _, err := from.Write([]byte(what)); err != nil {
			return err
		}
		_ = to.SetReadDeadline(time.Now().Add(lab.ProbeTimeout))
		buf := make([]byte, len(what))
		_, err := io.ReadFull(to, buf)
		return err
	}
	if err := say(srv, conn, "node"); err != nil {
		t.Fatalf("before the policy, the node's bytes do not reach the client: %v", err)
	}
	if err := l.WriteManifests([]byte(packetLab + clientEgressDenied)); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if st, err := l.AgentStatus("node-1"); err != nil || st.Cut == 0 {
		t.Fatalf("node-1's agent cut nothing (status %+v, %v)", st, err)
	}
	if err := say(srv, conn, "more"); err == nil {
		t.Error("after the cut, the node spoke first and the client got its bytes")
	}
	if err := say(conn, srv, "back"); err == nil {
		t.Error("after the cut and the node's bytes, the client's answer reached the node")
	}
}

// TestLabAdversarialDomainConnectionSurvivesPass: a connection to an
// address the client learned from DNS for an allowed name carries data;
// a pass that changes the kernel (a policy for a pod of node-1 that the
// connection does not involve) must not cut it, since the kernel's rules,
// with what they learned, allow it.
func TestLabAdversarialDomainConnectionSurvivesPass(t *testing.T) {
	requireLab(t)
	l := upLab(t, labName("dmp"), domainLab)
	client := labPod(t, l, "app/client")
	waitFor(t, "node-1's proxy diverts the client's answers", func() bool { return diverting(l) })
	addr, conn, err := l.ResolveThenDial(client, "keep.allowed.test", netip.MustParseAddr("198.18.0.1"), 443)
	if err != nil {
		t.Fatalf("keep.allowed.test (%s): %v", addr, err)
	}
	defer conn.Close()
	if err := echo(conn); err != nil {
		t.Fatalf("the connection to %s carries no data: %v", addr, err)
	}
	plainIsolated := domainLab + `
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: plain-nothing-in, namespace: other}
spec:
  podSelector: {matchLabels: {app: plain}}
  policyTypes: [Ingress]
`
	if err := l.WriteManifests([]byte(plainIsolated)); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if st, err := l.AgentStatus("node-1"); err != nil || st.Stats.Operations == 0 {
		t.Fatalf("node-1's pass changed nothing in the kernel (status %+v, %v): the test proves nothing", st.Stats, err)
	}
	if err := echo(conn); err != nil {
		t.Errorf("the allowed connection to %s (learned for keep.allowed.test) was cut by a pass: %v", addr, err)
	}
}

func tcp(port uint16) l4.Port { return l4.Port{Proto: l4.TCP, Num: port} }

// BenchmarkLabNewPodWindow measures the window in which a new pod is
// denied because it is not programmed yet (fail closed: it was open
// before): from the moment the agents' input names the pod's address to
// the moment both agents enforce that input (status polled every 20 ms).
// Each iteration takes the pod out of the input and puts it back.
func BenchmarkLabNewPodWindow(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("the lab needs root")
	}
	full := packetLab + latePod
	dec := &source.Decoder{}
	e, _, err := pipeline.Build(dec.Decode("lab.yaml", []byte(full)), dec.Diags, pipeline.Options{})
	if err != nil {
		b.Fatal(err)
	}
	l, err := lab.Plan(labName("win"), e.Cluster())
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Up(netpolBinary, []byte(packetLab), io.Discard); err != nil {
		b.Fatal(err)
	}
	defer l.Down()
	ctx := context.Background()
	if err := l.WaitProgrammed(ctx, 20*time.Second); err != nil {
		b.Fatal(err)
	}
	var window time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := l.WriteManifests([]byte(full)); err != nil {
			b.Fatal(err)
		}
		if err := l.WaitProgrammed(ctx, 20*time.Second); err != nil {
			b.Fatal(err)
		}
		window += time.Since(start)
		b.StopTimer()
		if err := l.WriteManifests([]byte(packetLab)); err != nil {
			b.Fatal(err)
		}
		if err := l.WaitProgrammed(ctx, 20*time.Second); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(window.Milliseconds())/float64(b.N), "ms/window")
}

// protoExperimental is an IP protocol number for experiments (RFC 3692):
// conntrack follows it generically, by addresses and protocol, as it does
// every protocol it has no module for.
const protoExperimental = 253

// ipArrives sends one datagram of IP protocol proto from pod from to pod
// to (IPv4, raw sockets) and reports whether it reached to's namespace
// before lab.ProbeTimeout.
func ipArrives(t *testing.T, l *lab.Lab, from, to lab.Pod, proto int) bool {
	t.Helper()
	network := "ip4:" + strconv.Itoa(proto)
	var rx, tx *net.IPConn
	if err := l.InPod(to, func() (err error) { rx, err = net.ListenIP(network, &net.IPAddr{IP: to.IP.AsSlice()}); return err }); err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	if err := l.InPod(from, func() (err error) {
		tx, err = net.DialIP(network, &net.IPAddr{IP: from.IP.AsSlice()}, &net.IPAddr{IP: to.IP.AsSlice()})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	marker := binary.BigEndian.AppendUint64(nil, rand.Uint64())
	if _, err := tx.Write(marker); err != nil {
		t.Fatal(err)
	}
	_ = rx.SetReadDeadline(time.Now().Add(lab.ProbeTimeout))
	buf := make([]byte, 1500)
	for {
		n, _, err := rx.ReadFrom(buf)
		if isTimeout(err) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == len(marker) && string(buf[:n]) == string(marker) {
			return true
		}
	}
}

// TestLabAdversarialUnportedProtocolCut: the client and the server
// exchange datagrams of a protocol without ports, which conntrack follows
// by address pair; the client's egress is then denied. The client's next
// datagram must not arrive, nor may it once the server, whose side no
// policy restricts, has spoken again.
func TestLabAdversarialUnportedProtocolCut(t *testing.T) {
	requireLab(t)
	l := upLab(t, labName("gre"), packetLab)
	client, server := labPod(t, l, "app/client"), labPod(t, l, "app/server")
	if !ipArrives(t, l, client, server, protoExperimental) || !ipArrives(t, l, server, client, protoExperimental) {
		t.Fatal("the pods' datagrams do not arrive before the policy: the probe is broken")
	}
	if err := l.WriteManifests([]byte(packetLab + clientEgressDenied)); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if ipArrives(t, l, client, server, protoExperimental) {
		t.Error("after the client's egress was denied, its datagram still reached the server")
	}
	ipArrives(t, l, server, client, protoExperimental) // the server speaks next
	if ipArrives(t, l, client, server, protoExperimental) {
		t.Error("after the server spoke, the client's datagram reached the server as a reply")
	}
}
