package lab_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/lab"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
)

// domainLab: pods of namespace app may reach *.allowed.test on 443 and the
// cluster DNS, nothing else (an AdminNetworkPolicy allow-list above a deny
// of every address). The lab's DNS (kube-system/coredns behind the
// Service kube-dns) answers from the zone of ConfigMap kube-system/lab-dns;
// its names stand for the pods of namespace ext, hosts outside the cluster
// (the agents never hear of them: no answer teaches a pod's address). Pod
// other/plain is under no policy.
const domainLab = `
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
kind: Namespace
metadata: {name: other, labels: {kubernetes.io/metadata.name: other}}
---
apiVersion: v1
kind: Namespace
metadata: {name: ext, labels: {kubernetes.io/metadata.name: ext}}
---
apiVersion: v1
kind: Namespace
metadata: {name: kube-system, labels: {kubernetes.io/metadata.name: kube-system}}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: app, labels: {app: client}}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIPs: [{ip: 198.18.1.1}, {ip: "fd00:198:18:1::1"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: other, labels: {app: plain}}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIPs: [{ip: 198.18.1.2}, {ip: "fd00:198:18:1::2"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: allowed, namespace: ext, labels: {app: allowed}, annotations: {lab.netpol.io/outside: "true"}}
spec: {nodeName: node-2, containers: [{name: c, ports: [{containerPort: 443}]}]}
status: {podIPs: [{ip: 198.18.3.1}, {ip: "fd00:198:18:3::1"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: denied, namespace: ext, labels: {app: denied}, annotations: {lab.netpol.io/outside: "true"}}
spec: {nodeName: node-2, containers: [{name: c, ports: [{containerPort: 443}]}]}
status: {podIPs: [{ip: 198.18.3.2}, {ip: "fd00:198:18:3::2"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: late, namespace: ext, labels: {app: late}, annotations: {lab.netpol.io/outside: "true"}}
spec: {nodeName: node-2, containers: [{name: c, ports: [{containerPort: 443}]}]}
status: {podIPs: [{ip: 198.18.3.3}, {ip: "fd00:198:18:3::3"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: bulk, namespace: ext, labels: {app: bulk}, annotations: {lab.netpol.io/outside: "true"}}
spec: {nodeName: node-2, containers: [{name: c, ports: [{containerPort: 443}]}]}
status: {podIPs: [{ip: 198.18.3.4}, {ip: "fd00:198:18:3::4"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: coredns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec: {nodeName: node-2, containers: [{name: coredns, ports: [{name: dns, containerPort: 53, protocol: UDP}, {name: dns-tcp, containerPort: 53, protocol: TCP}]}]}
status: {podIPs: [{ip: 198.18.0.53}, {ip: "fd00:198:18::53"}]}
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system}
spec:
  clusterIPs: [198.18.0.10, "fd00:198:18::10"]
  ipFamilies: [IPv4, IPv6]
  ipFamilyPolicy: RequireDualStack
  selector: {k8s-app: kube-dns}
  ports: [{name: dns, port: 53, protocol: UDP, targetPort: dns}, {name: dns-tcp, port: 53, protocol: TCP, targetPort: dns-tcp}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: lab-dns, namespace: kube-system}
data:
  zone: |
    *.allowed.test 60 A 198.18.3.1
    *.allowed.test 60 AAAA fd00:198:18:3::1
    late.allowed.test 60 A 198.18.3.3
    api.other.test 60 A 198.18.3.2
    api.other.test 60 AAAA fd00:198:18:3::2
    big.allowed.test 60 A 198.18.3.4
    big.allowed.test 60 A 198.18.4.1
    big.allowed.test 60 A 198.18.4.2
    big.allowed.test 60 A 198.18.4.3
    big.allowed.test 60 A 198.18.4.4
    big.allowed.test 60 A 198.18.4.5
    big.allowed.test 60 A 198.18.4.6
    big.allowed.test 60 A 198.18.4.7
    big.allowed.test 60 A 198.18.4.8
    big.allowed.test 60 A 198.18.4.9
    big.allowed.test 60 A 198.18.4.10
    big.allowed.test 60 A 198.18.4.11
    big.allowed.test 60 A 198.18.4.12
    big.allowed.test 60 A 198.18.4.13
    big.allowed.test 60 A 198.18.4.14
    big.allowed.test 60 A 198.18.4.15
    big.allowed.test 60 A 198.18.4.16
    big.allowed.test 60 A 198.18.4.17
    big.allowed.test 60 A 198.18.4.18
    big.allowed.test 60 A 198.18.4.19
    big.allowed.test 60 A 198.18.4.20
    big.allowed.test 60 A 198.18.4.21
    big.allowed.test 60 A 198.18.4.22
    big.allowed.test 60 A 198.18.4.23
    big.allowed.test 60 A 198.18.4.24
    big.allowed.test 60 A 198.18.4.25
    big.allowed.test 60 A 198.18.4.26
    big.allowed.test 60 A 198.18.4.27
    big.allowed.test 60 A 198.18.4.28
    big.allowed.test 60 A 198.18.4.29
    big.allowed.test 60 A 198.18.4.30
    big.allowed.test 60 A 198.18.4.31
    big.allowed.test 60 A 198.18.4.32
    big.allowed.test 60 A 198.18.4.33
    big.allowed.test 60 A 198.18.4.34
    big.allowed.test 60 A 198.18.4.35
    big.allowed.test 60 A 198.18.4.36
    big.allowed.test 60 A 198.18.4.37
    big.allowed.test 60 A 198.18.4.38
    big.allowed.test 60 A 198.18.4.39
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: allowlist, annotations: {netpol.io/audit: "all"}}
spec:
  priority: 10
  subject: {namespaces: {matchLabels: {kubernetes.io/metadata.name: app}}}
  egress:
  - name: dns
    action: Allow
    to: [{pods: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: kube-system}}, podSelector: {matchLabels: {k8s-app: kube-dns}}}}]
    ports: [{portNumber: {port: 53, protocol: UDP}}, {portNumber: {port: 53, protocol: TCP}}]
  - name: names
    action: Allow
    to: [{domainNames: ["*.allowed.test"]}]
    ports: [{portNumber: {port: 443, protocol: TCP}}]
  - name: rest
    action: Deny
    to: [{networks: [0.0.0.0/0, "::/0"]}]
`

// TestLabDomainNames resolves names from pods with real DNS packets (the
// lab's kube-proxy, the lab's DNS pod, the agent's proxy on the client's
// node) and connects to the answers: an address is allowed once a pod's
// answer for a name of the rule taught it, and only then; an answer for
// another name teaches nothing; a pod under no domainNames rule resolves
// untouched. With the agent gone DNS still works, what was learned stays,
// and a new name is denied, until the next agent learns it.
func TestLabDomainNames(t *testing.T) {
	requireLab(t)
	l := upLab(t, labName("dns"), domainLab)
	pod := func(key string) lab.Pod {
		i := slices.IndexFunc(l.Pods, func(p lab.Pod) bool { return p.Key == key })
		if i < 0 {
			t.Fatalf("no pod %s", key)
		}
		return l.Pods[i]
	}
	client, plain := pod("app/client"), pod("other/plain")
	node1 := l.Nodes[0]
	nft := func(args ...string) string {
		out, err := exec.Command("ip", append([]string{"netns", "exec", node1.Namespace, "nft"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("nft %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	waitFor(t, "node-1's proxy diverts the client's answers", func() bool { return diverting(l) })
	// node-2 has no pod that a domainNames rule governs: nothing is set
	// up there.
	if out, err := exec.Command("ip", "netns", "exec", l.Nodes[1].Namespace, "sh", "-c",
		"nft list tables; ip rule; ss -uln").CombinedOutput(); err != nil || strings.Contains(string(out), "netpol-dns") ||
		strings.Contains(string(out), "lookup 153") || strings.Contains(string(out), ":15353") {
		t.Errorf("node-2, without a pod under a domainNames rule: %v\n%s\nwant no divert table, routing rule or socket", err, out)
	}
	https := l4.Port{Proto: l4.TCP, Num: 443}
	v4, v6 := netip.MustParseAddr("198.18.0.1"), netip.MustParseAddr("fd00::1")
	connect := func(src lab.Pod, addr netip.Addr) bool {
		t.Helper()
		ok, err := l.Probe(src, addr, https)
		if err != nil {
			t.Fatalf("%s -> %s: %v", src.Key, addr, err)
		}
		return ok
	}
	resolve := func(src lab.Pod, name string, like netip.Addr) netip.Addr {
		t.Helper()
		addrs, err := l.Resolve(src, name, like)
		if err != nil || len(addrs) != 1 {
			log, _ := os.ReadFile(l.AgentLog("node-1"))
			t.Logf("node-1's agent:\n%s", log)
			t.Fatalf("%s resolving %s: %v %v, want one address", src.Key, name, addrs, err)
		}
		return addrs[0]
	}

	if connect(client, netip.MustParseAddr("198.18.3.1")) {
		t.Error("client reached 198.18.3.1 before any answer named it")
	}
	for _, c := range []struct {
		name string
		like netip.Addr
		addr string
		want bool
	}{
		{"www.allowed.test", v4, "198.18.3.1", true},
		{"www.allowed.test", v6, "fd00:198:18:3::1", true},
		{"api.other.test", v4, "198.18.3.2", false},
		{"api.other.test", v6, "fd00:198:18:3::2", false},
	} {
		addr := resolve(client, c.name, c.like)
		if addr.String() != c.addr {
			t.Fatalf("%s resolved to %s, want %s", c.name, addr, c.addr)
		}
		if got := connect(client, addr); got != c.want {
			t.Errorf("client -> %s (%s) on 443: connected=%v, want %v", c.name, addr, got, c.want)
		}
	}
	// A learned address on a port the rule does not allow: denied, and
	// the audit line still says which name the address stood for.
	if ok, err := l.Probe(client, netip.MustParseAddr("198.18.3.1"), l4.Port{Proto: l4.TCP, Num: 80}); err != nil || ok {
		t.Errorf("client -> www.allowed.test on 80: connected=%v err=%v, want denied", ok, err)
	}
	// ext's pods are outside the cluster for the agents: the audit log
	// names them by address only.
	wantAudit := []string{
		"deny egress app/client 198.18.1.1 ->  198.18.3.1 TCP 443: Admin AdminNetworkPolicy allowlist rest",
		"allow egress app/client 198.18.1.1 ->  198.18.3.1 TCP 443: Admin AdminNetworkPolicy allowlist names names www.allowed.test",
		"allow egress app/client fd00:198:18:1::1 ->  fd00:198:18:3::1 TCP 443: Admin AdminNetworkPolicy allowlist names names www.allowed.test",
		"deny egress app/client 198.18.1.1 ->  198.18.3.2 TCP 443: Admin AdminNetworkPolicy allowlist rest",
		"deny egress app/client fd00:198:18:1::1 ->  fd00:198:18:3::2 TCP 443: Admin AdminNetworkPolicy allowlist rest",
		"deny egress app/client 198.18.1.1 ->  198.18.3.1 TCP 80: Admin AdminNetworkPolicy allowlist rest names www.allowed.test",
	}
	var gotAudit []string
	waitFor(t, "node-1's audit log has the six connections to ext", func() bool {
		gotAudit = nil
		for _, line := range readAudit(t, l.AuditLog("node-1")) {
			if strings.Contains(line, "->  198.18.3.") || strings.Contains(line, "->  fd00:198:18:3::") {
				gotAudit = append(gotAudit, line)
			}
		}
		return len(gotAudit) >= len(wantAudit)
	})
	if !slices.Equal(gotAudit, wantAudit) {
		t.Errorf("node-1's audit log, connections to ext:\n%s\nwant\n%s", strings.Join(gotAudit, "\n"), strings.Join(wantAudit, "\n"))
	}
	// big.allowed.test has 40 addresses: the UDP answer is truncated
	// (none in it), the client asks again over TCP, and the first
	// connection to the answer's first address, ext/bulk, is allowed:
	// the proxy asked over TCP itself before it let the truncated answer
	// go on. All 40 are programmed.
	if connect(client, netip.MustParseAddr("198.18.3.4")) {
		t.Error("client reached big.allowed.test's 198.18.3.4 before any answer named it")
	}
	addr, c, err := l.ResolveThenDial(client, "big.allowed.test", v4, 443)
	if addr.String() != "198.18.3.4" || err != nil {
		t.Errorf("client resolving big.allowed.test (truncated, then TCP) and connecting at once: %s, %v; want 198.18.3.4 reached", addr, err)
	} else {
		c.Close()
	}
	if sets := nft("list", "table", "inet", "netpol"); !strings.Contains(sets, "198.18.4.1 timeout") || !strings.Contains(sets, "198.18.4.39 timeout") {
		t.Errorf("node-1's domain sets:\n%s\nwant all 40 addresses of big.allowed.test, 198.18.4.1 to .39 among them", sets)
	}
	if _, err := l.Resolve(client, "nothing.test", v4); !errors.Is(err, lab.ErrNoSuchName) {
		t.Errorf("nothing.test: %v, want no such name", err)
	}
	// The kernel holds what was learned, with the answer's TTL raised to
	// the floor (--dns-min-ttl 30s by default; the zone says 60).
	if sets := nft("list", "table", "inet", "netpol"); !strings.Contains(sets, "198.18.3.1 timeout 1m") ||
		!strings.Contains(sets, "fd00:198:18:3::1 timeout 1m") || strings.Contains(sets, "198.18.3.2") {
		t.Errorf("node-1's domain sets:\n%s\nwant 198.18.3.1 and fd00:198:18:3::1 with a timeout of 1m, not 198.18.3.2", sets)
	}
	// A pod under no domainNames rule resolves untouched and goes where it
	// likes.
	if addr := resolve(plain, "api.other.test", v4); !connect(plain, addr) {
		t.Errorf("plain -> api.other.test (%s): denied, want allowed", addr)
	}
	if connect(client, netip.MustParseAddr("198.18.3.3")) {
		t.Error("client reached late.allowed.test's 198.18.3.3 before any answer named it")
	}

	// node-1's agent dies (SIGKILL: no goodbye). TPROXY drops what it
	// cannot hand to the dead proxy until the rule's gate expires (5 s):
	// then DNS works again, unlearned; what was learned stays, and a new
	// name is not learned.
	if err := syscall.Kill(l.PIDs[0], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "DNS works without node-1's agent", func() bool {
		a, err := l.Resolve(client, "late.allowed.test", v4)
		if err == nil && len(a) == 1 {
			addr = a[0]
		}
		return err == nil
	})
	if connect(client, addr) {
		t.Errorf("with node-1's agent gone, client reached the new name late.allowed.test (%s): want denied", addr)
	}
	if !connect(client, netip.MustParseAddr("198.18.3.1")) {
		t.Error("with node-1's agent gone, client lost www.allowed.test's 198.18.3.1, learned before")
	}
	if err := l.RestartAgent(netpolBinary, "node-1"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the next agent learns late.allowed.test", func() bool {
		a, err := l.Resolve(client, "late.allowed.test", v4)
		return err == nil && len(a) == 1 && connect(client, a[0])
	})

	// The command: every pod resolves every name of the zone and connects,
	// compared with explain --resolved-as.
	out, err := exec.Command(netpolBinary, "lab", "probe", "--names", "--name", l.Name, "-o", "json").Output()
	if err != nil {
		t.Fatalf("lab probe --names: %v: %s", err, out)
	}
	var probe struct {
		Connections        []struct{ From, Name, Addr, To, Port, Kernel, Predicted string }
		Probed, Mismatches int
	}
	if err := json.Unmarshal(out, &probe); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var rows []string
	for _, c := range probe.Connections {
		if c.From == "app/client" {
			rows = append(rows, strings.Join([]string{c.Name, c.Addr, c.To, c.Port, c.Kernel, c.Predicted}, " "))
		}
	}
	wantRows := []string{
		"api.other.test 198.18.3.2 ext/denied 443/tcp denied denied",
		"api.other.test fd00:198:18:3::2 ext/denied 443/tcp denied denied",
		"big.allowed.test 198.18.3.4 ext/bulk 443/tcp allowed allowed",
		"late.allowed.test 198.18.3.3 ext/late 443/tcp allowed allowed",
		"probe.allowed.test 198.18.3.1 ext/allowed 443/tcp allowed allowed",
		"probe.allowed.test fd00:198:18:3::1 ext/allowed 443/tcp allowed allowed",
	}
	slices.Sort(rows)
	// The 2 pods of the cluster resolve (the DNS pod does not, ext's are
	// outside it), each the 4 names in its families; late and
	// big.allowed.test have no AAAA record.
	if !slices.Equal(rows, wantRows) || probe.Mismatches != 0 || probe.Probed != 2*6 {
		t.Errorf("lab probe --names: %d probed, %d mismatches; the client's rows\n%s\nwant 12, 0 and\n%s",
			probe.Probed, probe.Mismatches, strings.Join(rows, "\n"), strings.Join(wantRows, "\n"))
	}
}

// diverting reports whether node-1's DNS proxy holds the answers to
// domainLab's client: its divert table lists the pod.
func diverting(l *lab.Lab) bool {
	out, _ := exec.Command("ip", "netns", "exec", l.Nodes[0].Namespace, "nft", "list", "set", "inet", "netpol-dns", "clients-4").CombinedOutput()
	return strings.Contains(string(out), "198.18.1.1")
}

// TestLabDomainNamesFirstConnection: 1,000 times, the learned addresses
// are flushed from node-1's domain sets, the client resolves a name it
// never asked for before and connects at once to the answer: the first
// connection must be allowed every time, because the answer only reached
// the client after its addresses were programmed.
func TestLabDomainNamesFirstConnection(t *testing.T) {
	requireLab(t)
	l := upLab(t, labName("dnr"), domainLab)
	client, node1 := l.Pods[slices.IndexFunc(l.Pods, func(p lab.Pod) bool { return p.Key == "app/client" })], l.Nodes[0]
	waitFor(t, "node-1's proxy diverts the client's answers", func() bool { return diverting(l) })
	out, err := exec.Command("ip", "netns", "exec", node1.Namespace, "nft", "-j", "list", "sets", "inet").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var flush []string // nft commands that empty the domain sets
	for _, f := range strings.Split(string(out), `"name": "`)[1:] {
		name := f[:strings.IndexByte(f, '"')]
		if strings.HasPrefix(name, "d-") {
			flush = append(flush, "flush set inet netpol "+name)
		}
	}
	if len(flush) != 2 {
		t.Fatalf("domain sets on node-1: %q, want the rule's -4 and -6", flush)
	}
	script := strings.Join(flush, "\n")
	const attempts = 1000
	failures := 0
	for i := range attempts {
		cmd := exec.Command("ip", "netns", "exec", node1.Namespace, "nft", "-f", "-")
		cmd.Stdin = strings.NewReader(script)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("flushing: %v: %s", err, out)
		}
		addr, c, err := l.ResolveThenDial(client, fmt.Sprintf("n%d.allowed.test", i), netip.MustParseAddr("198.18.0.1"), 443)
		if addr.String() != "198.18.3.1" {
			t.Fatalf("attempt %d: resolved %s (%v), want 198.18.3.1", i, addr, err)
		}
		if err != nil {
			failures++
			continue
		}
		c.Close()
	}
	t.Logf("%d resolve-then-connect attempts, %d first connections failed", attempts, failures)
	if failures != 0 {
		t.Errorf("%d of %d first connections after the answer failed, want 0", failures, attempts)
	}
}

// BenchmarkLabDNSProxyHold: the delay the agent's proxy adds to a DNS
// answer, end to end. Two pods on node-1 resolve 2,000 names each, one name
// at a time, through the lab's kube-proxy to the DNS pod on node-2: the
// client, whose answers the proxy holds until their address is programmed
// (each name is new, its address is written again), and a pod under no
// domainNames rule, whose answers pass untouched. Reported: each one's
// p50 and p99 of the resolve time, and the differences.
//
//	go test -run '^$' -bench LabDNSProxyHold -benchtime 1x ./internal/lab
func BenchmarkLabDNSProxyHold(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	dec := &source.Decoder{}
	e, _, err := pipeline.Build(dec.Decode("lab.yaml", []byte(domainLab)), dec.Diags, pipeline.Options{})
	if err != nil {
		b.Fatal(err)
	}
	l, err := lab.Plan(labName("dnb"), e.Cluster())
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := l.Down(); err != nil {
			b.Errorf("lab down: %v", err)
		}
	}()
	if err := l.Up(netpolBinary, []byte(domainLab), io.Discard); err != nil {
		b.Fatal(err)
	}
	servers, err := l.Serve()
	if err != nil {
		b.Fatal(err)
	}
	defer servers.Close()
	if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
		b.Fatal(err)
	}
	waitFor(b, "node-1's proxy diverts the client's answers", func() bool { return diverting(l) })
	pod := func(key string) lab.Pod {
		return l.Pods[slices.IndexFunc(l.Pods, func(p lab.Pod) bool { return p.Key == key })]
	}
	const n = 2000
	like := netip.MustParseAddr("198.18.0.1")
	quantiles := func(src lab.Pod) (p50, p99 time.Duration) {
		took := make([]time.Duration, n)
		for i := range took {
			start := time.Now()
			if _, err := l.Resolve(src, fmt.Sprintf("b%d.allowed.test", i), like); err != nil {
				b.Fatal(err)
			}
			took[i] = time.Since(start)
		}
		slices.Sort(took)
		return took[n/2], took[n*99/100]
	}
	for range b.N {
		// Alternating, so that both see the same machine.
		held50, held99 := quantiles(pod("app/client"))
		plain50, plain99 := quantiles(pod("other/plain"))
		held50b, held99b := quantiles(pod("app/client"))
		plain50b, plain99b := quantiles(pod("other/plain"))
		us := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
		b.ReportMetric(us(min(held50, held50b)), "held-p50-µs")
		b.ReportMetric(us(min(held99, held99b)), "held-p99-µs")
		b.ReportMetric(us(min(plain50, plain50b)), "plain-p50-µs")
		b.ReportMetric(us(min(plain99, plain99b)), "plain-p99-µs")
		b.ReportMetric(us(min(held50, held50b)-min(plain50, plain50b)), "added-p50-µs")
		b.ReportMetric(us(min(held99, held99b)-min(plain99, plain99b)), "added-p99-µs")
	}
}
