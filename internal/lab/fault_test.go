package lab_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/lab"
)

// dualStack is twoPods with IPv6 addresses too.
const dualStack = `
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
metadata: {name: x, labels: {ns: x}}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: x, labels: {app: client}}
spec:
  nodeName: node-1
  containers: [{name: c}]
status: {podIPs: [{ip: 198.18.1.1}, {ip: "fd00:198:18:1::1"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: server, namespace: x, labels: {app: server}}
spec:
  nodeName: node-2
  containers: [{name: c, ports: [{containerPort: 80}]}]
status: {podIPs: [{ip: 198.18.1.2}, {ip: "fd00:198:18:1::2"}]}
`

// pushStream is a connection on which the server sends every 50 ms and the
// client never sends after its first datagram (UDP) or handshake (TCP):
// after a cut, the server's packet is the first the firewall sees.
type pushStream struct {
	name     string
	received atomic.Int64
	// The server's accepting goroutine adds its connection while the test
	// adds the client's (a race -race found in this test).
	mu      sync.Mutex
	closers []io.Closer
	closed  bool
}

// onClose has c closed with the stream; a connection accepted after the
// stream closed is closed at once.
func (s *pushStream) onClose(c io.Closer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return
	}
	s.closers = append(s.closers, c)
}

func (s *pushStream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, c := range s.closers {
		_ = c.Close()
	}
}

// push starts a server in server's namespace on port and a client in
// client's that connects to it, on network ("tcp" or "udp") and dst's family.
func push(t *testing.T, l *lab.Lab, client, server lab.Pod, network string, dst netip.Addr, port int) *pushStream {
	t.Helper()
	fam := network + "4"
	if dst.Is6() {
		fam = network + "6"
	}
	s := &pushStream{name: fam}
	addr := net.JoinHostPort(dst.String(), strconv.Itoa(port))
	tick := func(write func() error) {
		go func() {
			for range 400 { // 20 s at most: a bounded loop
				if write() != nil {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	count := func(read func([]byte) (int, error)) {
		go func() {
			buf := make([]byte, 64)
			for {
				n, err := read(buf)
				if err != nil {
					return
				}
				s.received.Add(int64(n))
			}
		}()
	}
	err := l.InPod(server, func() error {
		if network == "tcp" {
			ln, err := net.Listen(fam, addr)
			if err != nil {
				return err
			}
			s.onClose(ln)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				s.onClose(c)
				tick(func() error { _, err := c.Write([]byte("x")); return err })
			}()
			return nil
		}
		pc, err := net.ListenPacket(fam, addr)
		if err != nil {
			return err
		}
		s.onClose(pc)
		go func() {
			buf := make([]byte, 64)
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			tick(func() error { _, err := pc.WriteTo([]byte("x"), from); return err })
		}()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = l.InPod(client, func() error {
		c, err := net.DialTimeout(fam, addr, lab.ProbeTimeout)
		if err != nil {
			return err
		}
		s.onClose(c)
		if network == "udp" {
			if _, err := c.Write([]byte("hello")); err != nil {
				return err
			}
		}
		count(c.Read)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.close)
	return s
}

// TestLabFaultCutHoldsWhenServerSpeaksFirst: streams in which only the
// server sends (TCP and UDP, IPv4 and IPv6) carry data until a policy
// denies the client -> server connection; from then on no byte arrives,
// although the server's packets, seen alone, travel in an allowed
// direction (server -> client is not denied by anything).
func TestLabFaultCutHoldsWhenServerSpeaksFirst(t *testing.T) {
	requireLab(t)
	l := upLab(t, labName("spk"), dualStack)
	client, server := l.Pods[0], l.Pods[1]
	var streams []*pushStream
	for i, network := range []string{"tcp", "udp"} {
		for _, dst := range server.Addrs() {
			streams = append(streams, push(t, l, client, server, network, dst, 9000+i))
		}
	}
	if len(streams) != 4 {
		t.Fatalf("%d streams, want 4 (is the lab dual-stack?)", len(streams))
	}
	waitFor(t, "every stream carries data", func() bool {
		for _, s := range streams {
			if s.received.Load() < 3 {
				return false
			}
		}
		return true
	})
	if err := l.WriteManifests([]byte(dualStack + denyServer)); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	// Bytes already on their way when the entry went are not a leak; what
	// arrives after they settled is.
	time.Sleep(300 * time.Millisecond)
	before := make([]int64, len(streams))
	for i, s := range streams {
		before[i] = s.received.Load()
	}
	time.Sleep(1500 * time.Millisecond) // 30 pushes of each server
	for i, s := range streams {
		if got := s.received.Load(); got != before[i] {
			t.Errorf("%s: %d bytes arrived after the policy denied the connection (server speaking first)", s.name, got-before[i])
		}
	}
	// The policy goes: the held connections are released, and the UDP
	// servers' pushes (same ports) arrive again.
	if err := l.WriteManifests([]byte(dualStack)); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	for i, s := range streams {
		if s.name == "udp4" || s.name == "udp6" {
			waitFor(t, s.name+" carries data again once allowed", func() bool { return s.received.Load() > before[i]+2 })
		}
	}
}

// waitFor polls cond for up to 10 s: a bound on a hang, not a timing
// assertion.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting until %s", what)
}

var labSeq struct {
	sync.Mutex
	n int
}

// labName makes a lab name unique to this test process, so that two test
// runs on one machine never share a lab: prefix (at most 3 characters), the
// process ID and a counter, within the 8 characters a lab name has.
func labName(prefix string) string {
	labSeq.Lock()
	defer labSeq.Unlock()
	labSeq.n++
	return prefix + strconv.FormatInt((int64(os.Getpid())*36+int64(labSeq.n))%(36*36*36*36*36), 36)
}

// TestLabFaultFlushRulesetRestored: `nft flush ruleset` on the server's
// node (a firewall reload) removes netpol's table while nothing in the
// cluster changes; the agent notices and enforces again within seconds.
func TestLabFaultFlushRulesetRestored(t *testing.T) {
	requireLab(t)
	l := upLab(t, labName("fl"), twoPods+denyServer)
	client, server := l.Pods[0], l.Pods[1]
	port := l4.Port{Proto: l4.TCP, Num: 80}
	if ok, err := l.Probe(client, server.IP, port); err != nil || ok {
		t.Fatalf("before the flush: connected=%v err=%v, want denied", ok, err)
	}
	node := l.Nodes[1]
	if node.Name != "node-2" {
		t.Fatalf("node %s, want node-2", node.Name)
	}
	if out, err := exec.Command("ip", "netns", "exec", node.Namespace, "nft", "flush", "ruleset").CombinedOutput(); err != nil {
		t.Fatalf("nft flush ruleset: %v: %s", err, out)
	}
	waitFor(t, "the denied port is denied again", func() bool {
		ok, err := l.Probe(client, server.IP, port)
		return err == nil && !ok
	})
	st, err := l.AgentStatus("node-2")
	if err != nil {
		t.Fatal(err)
	}
	if st.Repaired < 1 || st.Drift == "" {
		t.Errorf("node-2's status: repaired %d, drift %q; want a repair and what it found", st.Repaired, st.Drift)
	}
}

// sameNode is a client and a server on one node, as kube-proxy's DNAT on
// the client's node sends a Service's connections to a local backend.
const sameNode = `
apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: v1
kind: Namespace
metadata: {name: x, labels: {ns: x}}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: x, labels: {app: client}}
spec:
  nodeName: node-1
  containers: [{name: c}]
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: server, namespace: x, labels: {app: server}}
spec:
  nodeName: node-1
  containers: [{name: c, ports: [{containerPort: 80}]}]
status: {podIP: 198.18.1.2}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: client-to-server, namespace: x}
spec:
  podSelector: {matchLabels: {app: client}}
  policyTypes: [Egress]
  egress: [{to: [{podSelector: {matchLabels: {app: server}}}], ports: [{port: 80}]}]
`

// serverService is a Service in front of sameNode's server: 8080 at
// 198.18.200.1 to the server's port 80.
const serverService = `
---
apiVersion: v1
kind: Service
metadata: {name: server, namespace: x}
spec:
  clusterIP: 198.18.200.1
  selector: {app: server}
  ports: [{port: 8080, targetPort: 80}]
`

// TestLabFaultCutThroughServiceAddress: a connection to a Service address
// (translated on the node to the backend by the lab's kube-proxy) is
// judged as the rules judge it, by the backend: allowed, it survives
// changes although the egress-isolated client may not reach the Service
// address itself; denied by a later policy, it is cut.
func TestLabFaultCutThroughServiceAddress(t *testing.T) {
	requireLab(t)
	l := upLab(t, labName("svc"), sameNode+serverService)
	client := l.Pods[0]
	conn, err := l.Dial(client, netip.MustParseAddr("198.18.200.1"), l4.Port{Proto: l4.TCP, Num: 8080})
	if err != nil {
		t.Fatalf("connecting to the Service address: %v", err)
	}
	defer conn.Close()
	if err := echo(conn); err != nil {
		t.Fatalf("the connection through the Service address carries no data: %v", err)
	}
	// A change on the node that leaves the connection allowed: the server
	// admits the client explicitly.
	admit := sameNode + serverService + `
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: server-from-client, namespace: x}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress: [{from: [{podSelector: {matchLabels: {app: client}}}]}]
`
	if err := l.WriteManifests([]byte(admit)); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := echo(conn); err != nil {
		t.Fatalf("an allowed connection through the Service address was cut: %v", err)
	}
	if st, err := l.AgentStatus("node-1"); err != nil || st.Cut != 0 {
		t.Errorf("node-1 cut %d connections (%v) on a change that denied none", st.Cut, err)
	}
	// Now the client may go anywhere and the server admits nobody: the
	// connection goes, although the client may reach the Service address.
	open := strings.Replace(sameNode, "  policyTypes: [Egress]\n  egress: [{to: [{podSelector: {matchLabels: {app: server}}}], ports: [{port: 80}]}]", "  policyTypes: [Egress]\n  egress: [{}]", 1)
	if open == sameNode {
		t.Fatal("the client's egress policy was not opened")
	}
	if err := l.WriteManifests([]byte(open + serverService + denyServer)); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := echo(conn); err == nil {
		t.Fatal("a denied connection through the Service address still carries data")
	}
}

// TestLabFaultAgentKilledMidSync: the server's agent is killed (SIGKILL)
// while it programs a large change; the kernel holds the old rules or the
// new ones, never a mix or nothing, and the next agent takes over: port 81
// stays denied and port 80 allowed throughout.
func TestLabFaultAgentKilledMidSync(t *testing.T) {
	requireLab(t)
	only80 := twoPods + `
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: only-80, namespace: x}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress: [{ports: [{port: 80}]}]
`
	l := upLab(t, labName("kil"), only80)
	client, server := l.Pods[0], l.Pods[1]
	check := func(when string) {
		t.Helper()
		for port, want := range map[uint16]bool{80: true, 81: false} {
			got, err := l.Probe(client, server.IP, l4.Port{Proto: l4.TCP, Num: port})
			if err != nil || got != want {
				t.Errorf("%s: port %d: connected=%v err=%v, want %v", when, port, got, err, want)
			}
		}
	}
	var big strings.Builder
	big.WriteString(only80)
	for i := range 400 {
		fmt.Fprintf(&big, "---\napiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p%d, namespace: x}\nspec:\n  podSelector: {matchLabels: {app: server}}\n  ingress: [{ports: [{port: %d}]}]\n", i, 10000+i)
	}
	for _, delay := range []time.Duration{0, 20 * time.Millisecond, 60 * time.Millisecond} {
		if err := l.WriteManifests([]byte(big.String())); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay)
		if err := l.RestartAgent(netpolBinary, "node-2"); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("killed %s after the change", delay))
		if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("the next agent took over (killed %s after the change)", delay))
		if err := l.WriteManifests([]byte(only80)); err != nil {
			t.Fatal(err)
		}
		if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLabFaultRecordDenyFlushed: with recording on, every deny of a node
// ends in the chain record-deny; emptied by hand, denies would return and
// be accepted. The agent's check sees the emptied chain and repairs it
// within seconds.
func TestLabFaultRecordDenyFlushed(t *testing.T) {
	requireLab(t)
	l := upLabWith(t, labName("frd"), twoPods+denyServer, func(l *lab.Lab) { l.Record = true })
	client, server := l.Pods[0], l.Pods[1]
	port := l4.Port{Proto: l4.TCP, Num: 80}
	if ok, err := l.Probe(client, server.IP, port); err != nil || ok {
		t.Fatalf("before the flush: connected=%v err=%v, want denied", ok, err)
	}
	node := l.Nodes[1]
	if out, err := exec.Command("ip", "netns", "exec", node.Namespace, "nft", "flush", "chain", "inet", "netpol", "record-deny").CombinedOutput(); err != nil {
		t.Fatalf("nft flush chain: %v: %s", err, out)
	}
	waitFor(t, "the denied port is denied again", func() bool {
		ok, err := l.Probe(client, server.IP, port)
		return err == nil && !ok
	})
	st, err := l.AgentStatus(node.Name)
	if err != nil {
		t.Fatal(err)
	}
	if st.Repaired < 1 || !strings.Contains(st.Drift, "record-deny") {
		t.Errorf("%s's status: repaired %d, drift %q; want a repair of record-deny", node.Name, st.Repaired, st.Drift)
	}
}
