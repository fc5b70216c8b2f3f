package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// portTypo is an admin policy whose Allow rule says port: for ports:.
// Read without the field it would allow every port (issue 15).
const portTypo = `apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: dns-only}
spec:
  priority: 5
  subject: {namespaces: {matchLabels: {team: shop}}}
  egress:
  - name: dns
    action: Allow
    to: [{networks: [198.19.0.0/16]}]
    port: [{portNumber: {port: 53, protocol: UDP}}]
  - {name: rest, action: Deny, to: [{networks: [198.19.0.0/16]}]}
`

// writeInput writes cluster and then extra as one file, and returns its path.
func writeInput(t *testing.T, extra string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "in.yaml")
	if err := os.WriteFile(file, []byte(cluster+"---\n"+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestUnknownFieldInAdminPolicy: an unknown field in an admin policy is
// invalid input (exit 2, naming file, document, object and field).
func TestUnknownFieldInAdminPolicy(t *testing.T) {
	file := writeInput(t, portTypo)
	want := file + " (document 5): AdminNetworkPolicy dns-only: spec.egress[0].port: unknown field"
	for _, args := range [][]string{
		{"matrix", "-f", file},
		{"explain", "-f", file, "--from", "shop/web", "--to", "198.19.0.1", "--port", "80"},
		{"compile", "-f", file, "--node", "n1"},
		{"diff", file, file},
	} {
		code, out, stderr := run(t, "", args...)
		if code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit 2 and %q (stdout %q)", args, code, stderr, want, out)
		}
	}
}

// TestLenientReadsUnknownFields: --lenient is the old reading: the field is
// dropped with a warning (and the Allow then allows every port).
func TestLenientReadsUnknownFields(t *testing.T) {
	file := writeInput(t, portTypo)
	warning := "warning: " + file + " (document 5): AdminNetworkPolicy dns-only: spec.egress[0].port: unknown field, ignored (the API server would drop it)\n"
	code, out, stderr := run(t, "", "explain", "-f", file, "--lenient", "--from", "shop/web", "--to", "198.19.0.1", "--port", "80")
	if code != 0 || stderr != warning || !strings.HasPrefix(out, "ALLOWED  shop/web (198.18.0.10) -> 198.19.0.1 (198.19.0.1) port 80/tcp\n") {
		t.Errorf("explain --lenient: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 0, ALLOWED and the warning %q", code, out, stderr, warning)
	}
	code, out, stderr = run(t, "", "lint", "-f", file, "--lenient")
	want := "AdminNetworkPolicy dns-only in " + file + " (document 5)\n" +
		"  warning input: spec.egress[0].port: unknown field, ignored (the API server would drop it)\n"
	if code != 0 || !strings.Contains(out, want) || strings.Contains(out, "unknown-field") {
		t.Errorf("lint --lenient: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 0 and:\n%s", code, out, stderr, want)
	}
}
