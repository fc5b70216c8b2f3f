package cli

import (
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
	want := "2 policies for 1 observed flows: 1 allowed with them enforced\n" +
		"1 of 2 pod pairs x declared ports lose access; 0 stay open that no flow was seen on\n"
	if stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
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
