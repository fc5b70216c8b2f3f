package cli

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/kubetest"
)

// TestKubeAgentMakesUpNoAddress: against a real API server, a pod that has
// no address yet (Pending) and is selected by a policy's peer is in no set
// of the agent's transaction, and an unscheduled one is not the node's.
// Manifests get made-up addresses (the lab, a matrix); the agent once gave
// them to such pods too, so that whatever real pod the cluster's IPAM
// handed that address next was allowed as the pending one.
func TestKubeAgentMakesUpNoAddress(t *testing.T) {
	c := kubetest.Start(t)
	objs, err := kubetest.Manifests(`
apiVersion: v1
kind: Namespace
metadata: {name: a}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
---
apiVersion: v1
kind: Pod
metadata: {name: server, namespace: a, labels: {app: server}}
spec: {nodeName: n1, containers: [{name: c, image: x, ports: [{containerPort: 80}]}]}
---
apiVersion: v1
kind: Pod
metadata: {name: pending, namespace: a, labels: {app: client}}
spec: {containers: [{name: c, image: x}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: a}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress: [{from: [{podSelector: {matchLabels: {app: client}}}]}]
`)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Create(ctx, objs); err != nil {
		t.Fatal(err)
	}
	// The server's address, as kubelet would report it.
	if out, err := exec.Command(c.Kubectl, "--kubeconfig", c.Kubeconfig, "-n", "a", "patch", "pod", "server", "--subresource", "status",
		"--type", "merge", "-p", `{"status": {"phase": "Running", "podIP": "198.18.0.5", "podIPs": [{"ip": "198.18.0.5"}]}}`).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	code, stdout, stderr := run(t, "", "agent", "--kubeconfig", c.Kubeconfig, "--node", "n1", "--dry-run", "--once",
		"--report-status=false", "--audit-log", "off")
	if code != 0 {
		t.Fatalf("agent: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "198.18.0.5") {
		t.Fatalf("the server's address is not programmed:\n%s", stdout)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(line, "add element") && !strings.Contains(line, "198.18.0.5") {
			t.Errorf("an element of an address no pod has: %s", line)
		}
	}
}
