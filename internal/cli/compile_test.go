package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCompileSecurityGroups: compile -o security-groups renders the node's
// IR (compile.Renderer): the node's isolated pod with its policy's group,
// the peer written as its pod's address; a pod of another node is not a
// port here.
func TestCompileSecurityGroups(t *testing.T) {
	in := `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: x, labels: {app: web}}
spec: {nodeName: node-1, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: x, labels: {app: web}}
spec: {nodeName: node-2, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.3}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: x, labels: {app: client}}
spec: {nodeName: node-1}
status: {podIP: 198.18.1.2}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: x}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {matchLabels: {app: client}}}], ports: [{port: http}]}]
`
	code, out, stderr := run(t, in, "compile", "--node", "node-1", "-f", "-", "-o", "security-groups")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got struct {
		Groups []struct {
			Name  string
			Rules []map[string]any
		}
		Ports []struct {
			Pod    string
			Groups []string `json:"security_groups"`
		}
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(got.Ports) != 1 || got.Ports[0].Pod != "x/web" || len(got.Ports[0].Groups) != 2 ||
		got.Ports[0].Groups[0] != "allow-all-egress" || !strings.HasPrefix(got.Ports[0].Groups[1], "networkpolicy-x-web-ingress-") {
		t.Errorf("ports %+v, want x/web alone, in allow-all-egress and networkpolicy-x-web-ingress-*", got.Ports)
	}
	if len(got.Groups) != 2 || len(got.Groups[1].Rules) != 1 || got.Groups[1].Rules[0]["remote_ip_prefix"] != "198.18.1.2/32" ||
		got.Groups[1].Rules[0]["port_range_min"] != float64(8080) {
		t.Errorf("groups %+v, want allow-all-egress and one ingress rule from 198.18.1.2/32 on 8080", got.Groups)
	}
}
