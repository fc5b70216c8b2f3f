package lab_test

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netpol/netpol/internal/audit"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/lab"
)

// auditCluster: a client in x and one in y on node-1, a server in x on
// node-2. An audited ANP denies y; an audited NP isolates the server to port
// 80 from x; a staged ANP would deny x on port 80.
const auditCluster = `
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
kind: Namespace
metadata: {name: "y", labels: {ns: "y"}}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: x}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIP: 198.18.2.1}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: "y"}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIP: 198.18.2.2}
---
apiVersion: v1
kind: Pod
metadata: {name: server, namespace: x, labels: {app: server}}
spec:
  nodeName: node-2
  containers: [{name: c, ports: [{containerPort: 80}, {containerPort: 81}]}]
status: {podIP: 198.18.2.3}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: deny-y, annotations: {netpol.io/audit: deny}}
spec:
  priority: 10
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress:
  - {name: deny-from-y, action: Deny, from: [{namespaces: {matchLabels: {ns: "y"}}}]}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: staged-deny-x, annotations: {netpol.io/staged: "true"}}
spec:
  priority: 5
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress:
  - name: would-deny-x-80
    action: Deny
    from: [{namespaces: {matchLabels: {ns: x}}}]
    ports: [{portNumber: {protocol: TCP, port: 80}}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: only-80, namespace: x, annotations: {netpol.io/audit: deny}}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress: [{from: [{podSelector: {}}], ports: [{port: 80}]}]
`

// TestLabAudit connects with real TCP and reads the server node's audit
// log: each line names the policy and rule (or the isolating policy) that
// decided, and the staged policy logs would-deny while its traffic passes.
func TestLabAudit(t *testing.T) {
	requireLab(t)
	l := upLab(t, labName("aud"), auditCluster)
	pods := map[string]lab.Pod{}
	for _, p := range l.Pods {
		pods[p.Key] = p
	}
	server := pods["x/server"].IP
	for _, c := range []struct {
		from  string
		port  uint16
		want  bool
		tries int
	}{
		{"y/client", 80, false, 1}, // the audited ANP denies
		{"x/client", 81, false, 3}, // only-80 isolates: three attempts, one line
		{"x/client", 80, true, 1},  // allowed; the staged ANP would deny
	} {
		for range c.tries {
			got, err := l.Probe(pods[c.from], server, l4.Port{Proto: l4.TCP, Num: c.port})
			if err != nil || got != c.want {
				t.Fatalf("%s -> x/server:%d: connected=%v err=%v, want %v", c.from, c.port, got, err, c.want)
			}
		}
	}

	want := []string{
		"deny ingress y/client 198.18.2.2 -> x/server 198.18.2.3 TCP 80: Admin AdminNetworkPolicy deny-y deny-from-y",
		"deny ingress x/client 198.18.2.1 -> x/server 198.18.2.3 TCP 81: NetworkPolicy isolated by NetworkPolicy x/only-80",
		"would-deny ingress x/client 198.18.2.1 -> x/server 198.18.2.3 TCP 80: Admin AdminNetworkPolicy staged-deny-x would-deny-x-80",
	}
	var got []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		got = readAudit(t, l.AuditLog("node-2"))
		if len(got) >= len(want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit log of node-2:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if lines := readAudit(t, l.AuditLog("node-1")); len(lines) != 0 {
		t.Errorf("audit log of node-1 (nothing audited there): %q", lines)
	}
}

// readAudit reads an audit log as one summary per line.
func readAudit(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line audit.Line
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%s: %v: %s", path, err, sc.Text())
		}
		s := string(line.Verdict) + " " + line.Direction + " " + line.Src.Pod + " " + line.Src.IP.String() + " -> " +
			line.Dst.Pod + " " + line.Dst.IP.String() + " " + line.Protocol + " " + strconv.Itoa(int(line.Port)) + ": " + line.Tier
		if line.Policy != nil {
			s += " " + line.Policy.String() + " " + line.Rule
		}
		for i, r := range line.IsolatedBy {
			if i == 0 {
				s += " isolated by"
			}
			s += " " + r.String()
		}
		if len(line.Dst.Names) > 0 {
			s += " names " + strings.Join(line.Dst.Names, ",")
		}
		out = append(out, s)
	}
	return out
}
