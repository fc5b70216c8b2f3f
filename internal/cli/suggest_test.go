package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSuggestCommand: the policies on stdout (or a file per namespace),
// the check on stderr, from a CSV of flows; a missing flows file is exit 2.
func TestSuggestCommand(t *testing.T) {
	dir := t.TempDir()
	cluster := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cluster, []byte(`
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: shop, labels: {app: client}}
spec: {containers: [{name: c, ports: [{containerPort: 9000}]}]}
status: {podIP: 198.18.1.2}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	flows := filepath.Join(dir, "flows.csv")
	if err := os.WriteFile(flows, []byte("shop/client,shop/web-0,8080/tcp,5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, "", "suggest", "-f", cluster, "--flows", flows)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "name: client-suggested") || !strings.Contains(out, "name: web-0-suggested") ||
		!strings.Contains(out, "- port: http") {
		t.Errorf("policies:\n%s\nwant client-suggested and web-0-suggested, port http", out)
	}
	// client -> web-0:8080 stays; web-0 -> client:9000 is lost (never seen).
	want := "2 policies for 1 observed flow: 1 allowed with them enforced\n" +
		"1 of 2 pod pairs x declared ports lose access; 0 stay open that no flow was seen on\n"
	if stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	// The same flow as JSON the way the API spells a port: a number and
	// a protocol beside it, or the destination's port name.
	for _, flow := range []string{
		`[{"from": "shop/client", "to": "shop/web-0", "port": 8080, "protocol": "TCP", "count": 5}]`,
		`[{"from": "shop/client", "to": "shop/web-0", "port": "http", "count": 5}]`,
	} {
		if code, jsonOut, stderr := run(t, flow, "suggest", "-f", cluster, "--flows", "-"); code != 0 || jsonOut != out {
			t.Errorf("%s: exit %d, %s\n%s\nwant the policies of the CSV flow", flow, code, stderr, jsonOut)
		}
	}
	outDir := filepath.Join(dir, "suggested")
	if code, _, stderr := run(t, "", "suggest", "-f", cluster, "--flows", flows, "--out-dir", outDir); code != 0 {
		t.Fatalf("--out-dir: exit %d: %s", code, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(outDir, "shop.yaml")); err != nil || strings.Count(string(b), "kind: NetworkPolicy") != 2 {
		t.Errorf("shop.yaml: %v\n%s\nwant both policies", err, b)
	}
	if code, _, stderr := run(t, "", "suggest", "-f", cluster, "--flows", filepath.Join(dir, "none.csv")); code != 2 || !strings.Contains(stderr, "none.csv") {
		t.Errorf("a missing flows file: exit %d, %q; want 2 naming it", code, stderr)
	}
}

// TestSuggestRecordFiles: two nodes' record files at once: the flow both
// recorded is merged (one annotation line, counts summed), the denied
// line is skipped and counted on stderr.
func TestSuggestRecordFiles(t *testing.T) {
	dir := t.TempDir()
	cluster := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cluster, []byte(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: shop, labels: {app: client}}
spec: {containers: [{name: c}]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	node1, node2 := filepath.Join(dir, "node-1.jsonl"), filepath.Join(dir, "node-2.jsonl")
	for path, lines := range map[string]string{
		node1: `{"from":"shop/client","to":"shop/Deployment/web","port":"8080/tcp","verdict":"allow","count":12,"first":"2026-11-25T01:00:00Z","last":"2026-11-25T01:05:00Z","node":"node-1"}
{"from":"shop/Deployment/web","to":"203.0.113.9","port":"443/tcp","verdict":"deny","count":1,"first":"2026-11-25T01:00:00Z","last":"2026-11-25T01:00:00Z","node":"node-1"}
`,
		node2: `{"from":"shop/client","to":"shop/Deployment/web","port":"8080/tcp","verdict":"allow","count":3,"first":"2026-11-25T01:01:00Z","last":"2026-11-25T01:04:00Z","node":"node-2"}
`,
	} {
		if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, stderr := run(t, "", "suggest", "-f", cluster, "--flows", node1, "--flows", node2)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(out, "shop/client -> shop/Deployment/web 8080/tcp (15 times)"); n != 2 {
		t.Errorf("policies:\n%s\nwant the merged flow once in each of the two annotations, seen %d times", out, n)
	}
	// Cells: client -> web x2, web -> web x2 (8080 each); the web pods
	// lose each other.
	want := node1 + ": 1 denied flow skipped: the policies allow observed traffic only\n" +
		"2 policies for 1 observed flow: 1 allowed with them enforced\n" +
		"2 of 4 pod pairs x declared ports lose access; 0 stay open that no flow was seen on\n"
	if stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
}

// TestSuggestTiers: --tier admin writes cluster-scoped policies, to
// _cluster.yaml with --out-dir, and checks them as the NetworkPolicies
// are checked; --priority goes with the admin tier only.
func TestSuggestTiers(t *testing.T) {
	dir := t.TempDir()
	cluster := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(cluster, []byte(`
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: shop, labels: {app: client}}
spec: {containers: [{name: c, ports: [{containerPort: 9000}]}]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	flows := filepath.Join(dir, "flows.csv")
	if err := os.WriteFile(flows, []byte("shop/client,shop/web-0,8080/tcp,5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outDir := filepath.Join(dir, "suggested")
	code, _, stderr := run(t, "", "suggest", "-f", cluster, "--flows", flows, "--tier", "admin", "--priority", "500", "--out-dir", outDir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(outDir, "_cluster.yaml"))
	if err != nil || strings.Count(string(b), "kind: AdminNetworkPolicy") != 2 || !strings.Contains(string(b), "name: shop.client-suggested") ||
		!strings.Contains(string(b), "priority: 500") || !strings.Contains(string(b), "priority: 501") || strings.Contains(string(b), "status") {
		t.Errorf("_cluster.yaml: %v\n%s\nwant the two admin policies at 500 and 501, no status", err, b)
	}
	// As with NetworkPolicies: client -> web-0:8080 stays, web-0 ->
	// client:9000 is lost.
	want := "2 policies for 1 observed flow: 1 allowed with them enforced\n" +
		"1 of 2 pod pairs x declared ports lose access; 0 stay open that no flow was seen on\n"
	if stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	for _, args := range [][]string{{"--priority", "5"}, {"--tier", "cluster"}, {"--tier", "baseline", "--priority", "5"}} {
		code, _, stderr := run(t, "", append([]string{"suggest", "-f", cluster, "--flows", flows}, args...)...)
		if code != 2 {
			t.Errorf("%q: exit %d, want 2 (%s)", args, code, stderr)
		}
	}
}

// TestSuggestCommandWarns: a selector that reaches another workload's pods
// is said on stderr, and under "warnings" in -o json.
func TestSuggestCommandWarns(t *testing.T) {
	const twins = `
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: x, labels: {role: batch}}
spec: {containers: [{name: c, ports: [{containerPort: 80}]}]}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: x, labels: {role: batch}}
spec: {containers: [{name: c, ports: [{containerPort: 80}]}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: none, namespace: other}
spec: {podSelector: {}, ingress: [{from: []}]}
`
	flows := filepath.Join(t.TempDir(), "flows.csv")
	if err := os.WriteFile(flows, []byte("x/a,198.19.0.9,443/tcp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "pod x/a: its selector role=batch also selects pod x/b, which its policy isolates too: label them apart"
	// The input is read once: its own warning is said once too.
	wantStderr := "warning: - (document 3): NetworkPolicy other/none: spec.ingress[0].from: an empty list matches every peer in networking.k8s.io/v1, like no list at all\n" +
		"warning: " + want + "\n" +
		"1 policy for 1 observed flow: 1 allowed with them enforced\n" +
		"2 of 2 pod pairs x declared ports lose access; 0 stay open that no flow was seen on\n"
	code, _, stderr := run(t, twins, "suggest", "-f", "-", "--flows", flows)
	if code != 0 || stderr != wantStderr {
		t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", code, stderr, wantStderr)
	}
	code, out, stderr := run(t, twins, "suggest", "-f", "-", "--flows", flows, "-o", "json")
	var doc struct{ Warnings []string }
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil || len(doc.Warnings) != 1 || doc.Warnings[0] != want {
		t.Errorf("-o json: exit %d, %v, warnings %q; stderr %s", code, err, doc.Warnings, stderr)
	}
}
