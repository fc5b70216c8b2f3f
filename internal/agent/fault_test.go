package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/render/nft"
)

// The fault tests in this file run without root: knftables' fake is the
// kernel. The same faults meet the real kernel in internal/lab.

const oneNode = `
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
metadata: {name: web, namespace: x, labels: {app: web}}
spec:
  nodeName: node-1
  containers: [{name: c, ports: [{containerPort: 80}]}]
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: x, labels: {app: db}}
spec:
  nodeName: node-1
  containers: [{name: c, ports: [{containerPort: 5432}]}]
status: {podIP: 198.18.1.2}
`

const denyWeb = `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-web, namespace: x}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
`

const denyDB = `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-db, namespace: x}
spec:
  podSelector: {matchLabels: {app: db}}
  policyTypes: [Ingress]
`

// invalidANP has an action that no API version knows.
const invalidANP = `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: broken}
spec:
  priority: 10
  subject: {namespaces: {}}
  ingress: [{name: r, action: Maybe, from: [{namespaces: {}}]}]
`

// writeFiles replaces the files of dir with files (name -> content).
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	old, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFaultInvalidFileLeavesOutOnlyItself: with --source DIR, one invalid
// admin policy must not stop the node: the valid policies are enforced on
// a fresh node, and a running node takes the next valid change.
func TestFaultInvalidFileLeavesOutOnlyItself(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode, "deny-web.yaml": denyWeb, "broken.yaml": invalidANP})
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	a := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{dir}}}, nft.New(fake), nil)
	if err := a.Pass(context.Background()); err != nil {
		t.Fatalf("first pass with one invalid object: %v", err)
	}
	if got := elementsOf(t, fake, "ingress-4"); got != "198.18.1.1" {
		t.Fatalf("fresh node: ingress-4 map keys = %q, want web's address (deny-web enforced)", got)
	}
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode, "deny-web.yaml": denyWeb, "deny-db.yaml": denyDB, "broken.yaml": invalidANP})
	if err := a.Pass(context.Background()); err != nil {
		t.Fatalf("second pass: %v", err)
	}
	if got := elementsOf(t, fake, "ingress-4"); got != "198.18.1.1,198.18.1.2" {
		t.Fatalf("running node: ingress-4 map keys = %q, want web's and db's addresses", got)
	}
	if st := a.Status(); st.Error != "" || !strings.HasPrefix(st.Programmed, st.Input) {
		t.Errorf("status after the valid change: %+v, want the input programmed and no error", st)
	}
}
