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

// npPortTypo is a NetworkPolicy whose rule says port: for ports:. Read
// without the field, its rule would admit batch on every port of web.
const npPortTypo = `apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: batch-http, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {matchLabels: {app: batch}}}], port: [{port: 9999}]}]
`

// TestUnknownFieldInNetworkPolicy: a NetworkPolicy is read as strictly as
// an admin policy: the same widening, the same kubectl refusal.
func TestUnknownFieldInNetworkPolicy(t *testing.T) {
	file := writeInput(t, npPortTypo)
	want := file + " (document 5): NetworkPolicy shop/batch-http: spec.ingress[0].port: unknown field"
	code, out, stderr := run(t, "", "explain", "-f", file, "--from", "shop/batch", "--to", "shop/web", "--port", "80")
	if code != 2 || !strings.Contains(stderr, want) {
		t.Errorf("explain: exit %d, stderr:\n%s\nwant exit 2 and %q (stdout %q)", code, stderr, want, out)
	}
	code, out, _ = run(t, "", "explain", "-f", file, "--lenient", "-q", "--from", "shop/batch", "--to", "shop/web", "--port", "80")
	if code != 0 || !strings.HasPrefix(out, "ALLOWED") {
		t.Errorf("explain --lenient: exit %d, stdout:\n%s\nwant the widened rule's ALLOWED", code, out)
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

// TestExplainExitCodes: explain exits 0 whatever the verdict, 1 for a
// denied flow with --exit-code (as git diff --exit-code), and 2 for a pod
// or port name that names nothing and for a path that does not exist.
func TestExplainExitCodes(t *testing.T) {
	const (
		allowed = "shop/web --to shop/batch --port 80"
		denied  = "shop/batch --to shop/web --port http"
	)
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	cases := []struct {
		args   string // after "explain -f -"
		code   int
		stdout string // prefix
		stderr string // exact
	}{
		{"--from " + allowed, 0, "ALLOWED  shop/web", ""},
		{"--from " + denied, 0, "DENIED  shop/batch", ""},
		{"--from " + allowed + " --exit-code", 0, "ALLOWED  shop/web", ""},
		{"--from " + denied + " --exit-code", 1, "DENIED  shop/batch", ""},
		{"--from " + denied + " --exit-code -o json", 1, `{`, ""},
		{"--from shop/wbe --to shop/web --port 80", 2, "", "error: --from \"shop/wbe\": no such pod (did you mean shop/web?)\n"},
		{"--from shop/web --to nope/x --port 80 --exit-code", 2, "", "error: --to \"nope/x\": no such pod\n"},
		{"--from shop/web --to shop/batch --port http --exit-code", 2, "", "error: pod shop/batch declares no container port named \"http\" (it has: none)\n"},
	}
	for _, c := range cases {
		args := append([]string{"explain", "-f", "-"}, strings.Fields(c.args)...)
		code, out, stderr := run(t, cluster, args...)
		if code != c.code || !strings.HasPrefix(out, c.stdout) || stderr != c.stderr {
			t.Errorf("%v: exit %d\nstdout:\n%s\nstderr: %q\nwant exit %d, stdout starting %q, stderr %q", args, code, out, stderr, c.code, c.stdout, c.stderr)
		}
	}
	_, help, _ := run(t, "", "explain", "--help")
	for _, want := range []string{"Exit status: 0 when the connection was decided, allowed or denied; with\n--exit-code (as git diff --exit-code), 1 when it is denied.", "--exit-code "} {
		if !strings.Contains(help, want) {
			t.Errorf("explain --help lacks %q", want)
		}
	}
	code, _, stderr := run(t, "", "explain", "-f", missing, "--from", "x/a", "--to", "x/b", "--port", "80", "--exit-code")
	if want := "error: " + missing + ": no such file or directory\n"; code != 2 || stderr != want {
		t.Errorf("missing -f: exit %d, stderr %q; want exit 2, %q", code, stderr, want)
	}
}

// TestMissingInputPathExitsTwo: a -f path that does not exist is bad
// input for every command, and the message names it.
func TestMissingInputPathExitsTwo(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	want := "error: " + missing + ": no such file or directory\n"
	for _, args := range [][]string{
		{"matrix", "-f", missing},
		{"lint", "-f", missing},
		{"compile", "-f", missing, "--node", "n1"},
		{"matrix", "-f", "-", "-f", missing},
	} {
		code, _, stderr := run(t, cluster, args...)
		if code != 2 || stderr != want {
			t.Errorf("%v: exit %d, stderr %q; want exit 2, %q", args, code, stderr, want)
		}
	}
}
