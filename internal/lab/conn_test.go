package lab_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/lab"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
)

const twoPods = `
apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: v1
kind: Node
metadata: {name: node-2}
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
  containers: [{name: c, ports: [{containerPort: 80}]}]
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: server, namespace: x, labels: {app: server}}
spec:
  nodeName: node-2
  containers: [{name: c, ports: [{containerPort: 80}, {containerPort: 81}]}]
status: {podIP: 198.18.1.2}
`

const denyServer = `
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-server, namespace: x}
spec:
  podSelector: {matchLabels: {app: server}}
  policyTypes: [Ingress]
`

// upTwoPods builds a lab of a client and a server on two nodes.
func upTwoPods(t *testing.T, name string) (*lab.Lab, lab.Pod, lab.Pod) {
	t.Helper()
	l := upLab(t, name, twoPods)
	return l, l.Pods[0], l.Pods[1]
}

// upLab builds a lab of manifests with servers on every declared port and
// waits until its agents have programmed; it goes down when the test ends.
func upLab(t *testing.T, name, manifests string) *lab.Lab {
	t.Helper()
	return upLabWith(t, name, manifests, func(*lab.Lab) {})
}

// upLabWith is upLab with configure called on the planned lab before it
// is built (to set what its agents do).
func upLabWith(t *testing.T, name, manifests string, configure func(*lab.Lab)) *lab.Lab {
	t.Helper()
	dec := &source.Decoder{}
	e, _, err := pipeline.Build(dec.Decode("lab.yaml", []byte(manifests)), dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.Plan(name, e.Cluster())
	if err != nil {
		t.Fatal(err)
	}
	configure(l)
	if err := l.Up(netpolBinary, []byte(manifests), io.Discard); err != nil {
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
	return l
}

// TestLabPolicyCutsExistingConnection: an open TCP connection carries data,
// a policy starts denying it, and the agent's conntrack cleanup stops it.
func TestLabPolicyCutsExistingConnection(t *testing.T) {
	requireLab(t)
	l, client, server := upTwoPods(t, labName("cut"))
	conn, err := l.Dial(client, server.IP, l4.Port{Proto: l4.TCP, Num: 80})
	if err != nil {
		t.Fatalf("connecting before the policy: %v", err)
	}
	defer conn.Close()
	if err := echo(conn); err != nil {
		t.Fatalf("the connection does not carry data before the policy: %v", err)
	}
	if err := l.WriteManifests([]byte(twoPods + denyServer)); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	cut := 0
	for _, node := range []string{"node-1", "node-2"} {
		st, err := l.AgentStatus(node)
		if err != nil {
			t.Fatal(err)
		}
		cut += st.Cut
	}
	if cut == 0 {
		t.Error("no agent reports a conntrack entry cut")
	}
	if err := echo(conn); err == nil {
		t.Fatal("the established connection still carries data after a policy denied it")
	}
	if ok, err := l.Probe(client, server.IP, l4.Port{Proto: l4.TCP, Num: 80}); err != nil || ok {
		t.Fatalf("a new connection after the policy: connected=%v err=%v, want a timeout", ok, err)
	}
}

// echo sends a few bytes and waits for them to come back.
func echo(conn net.Conn) error {
	_ = conn.SetDeadline(time.Now().Add(lab.ProbeTimeout))
	if _, err := conn.Write([]byte("ping")); err != nil {
		return err
	}
	buf := make([]byte, 4)
	_, err := io.ReadFull(conn, buf)
	return err
}

// TestLabAgentRestartKeepsEnforcing kills the server's agent (as a crash
// would) and probes while it is down and after its successor took over: the
// denied port stays denied and the allowed port stays open throughout.
func TestLabAgentRestartKeepsEnforcing(t *testing.T) {
	requireLab(t)
	l, client, server := upTwoPods(t, labName("rst"))
	only80 := twoPods + `
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: only-80, namespace: x}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress: [{ports: [{port: 80}]}]
`
	if err := l.WriteManifests([]byte(only80)); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		for _, c := range []struct {
			port uint16
			want bool
		}{{80, true}, {81, false}} {
			got, err := l.Probe(client, server.IP, l4.Port{Proto: l4.TCP, Num: c.port})
			if err != nil || got != c.want {
				t.Errorf("%s: port %d: connected=%v err=%v, want %v", when, c.port, got, err, c.want)
			}
		}
	}
	check("before the restart")
	if err := l.RestartAgent(netpolBinary, "node-2"); err != nil {
		t.Fatal(err)
	}
	check("while the new agent starts")
	if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	check("after the new agent reconciled")
}
