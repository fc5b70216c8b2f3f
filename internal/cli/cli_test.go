package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

const cluster = `
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {team: shop}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.0.10}
---
apiVersion: v1
kind: Pod
metadata: {name: batch, namespace: shop, labels: {app: batch}}
spec: {containers: [{name: c}]}
status: {podIP: 198.18.0.11}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-ingress, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {matchLabels: {app: frontend}}}], ports: [{port: http}]}]
`

// run runs netpol with args and stdin, returning the exit code and outputs.
func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Main(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestExplainJSONShape(t *testing.T) {
	code, out, stderr := run(t, cluster, "explain", "-f", "-", "--from", "shop/batch", "--to", "shop/web", "--port", "http", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var v struct {
		Allowed bool
		Port    int
		Egress  struct{ Allowed bool }
		Ingress struct {
			Allowed bool
			Steps   []struct {
				Tier, Action string
				IsolatedBy   []struct{ Kind, Namespace, Name string }
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if v.Allowed || !v.Egress.Allowed || v.Ingress.Allowed || v.Port != 8080 {
		t.Fatalf("want denied by ingress on 8080, got %+v", v)
	}
	last := v.Ingress.Steps[len(v.Ingress.Steps)-1]
	if last.Tier != "NetworkPolicy" || last.Action != "Deny" || len(last.IsolatedBy) != 1 || last.IsolatedBy[0].Name != "web-ingress" {
		t.Errorf("ingress trace: %+v", v.Ingress.Steps)
	}
}

func TestExplainText(t *testing.T) {
	code, out, _ := run(t, cluster, "explain", "-f", "-", "--from", "shop/web", "--to", "shop/batch", "--port", "80")
	if code != 0 {
		t.Fatal(code)
	}
	for _, want := range []string{"ALLOWED  shop/web (198.18.0.10) -> shop/batch (198.18.0.11) port 80/tcp", "Default", "no NetworkPolicy isolates the pod for ingress"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestMatrixCSV(t *testing.T) {
	code, out, stderr := run(t, cluster, "matrix", "-f", "-", "-o", "csv")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := `from,to,port,protocol,allowed
shop/batch,shop/batch,8080,TCP,true
shop/batch,shop/web,8080,TCP,false
shop/web,shop/batch,8080,TCP,true
shop/web,shop/web,8080,TCP,true
`
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}

func TestInputErrorsExitTwoAndNameTheField(t *testing.T) {
	dir := t.TempDir()
	bad := `apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: too-low}
spec:
  priority: 2000
  subject: {namespaces: {}}
`
	file := filepath.Join(dir, "anp.yaml")
	if err := os.WriteFile(file, []byte(cluster+"---\n"+bad), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "", "matrix", "-f", dir)
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	want := file + " (document 5): AdminNetworkPolicy too-low: spec.priority: must be between 0 and 1000, got 2000"
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, stderr)
	}
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
		code int
	}{
		{[]string{"matrix"}, "no input", 2},
		{[]string{"matrix", "-f", "-", "-o", "xml"}, `unknown output format "xml"`, 2},
		{[]string{"explain", "-f", "-", "--from", "shop/web"}, "--from, --to and --port are required", 2},
		{[]string{"explain", "-f", "-", "--from", "shop/wbe", "--to", "shop/web", "--port", "80"}, "did you mean shop/web", 2},
		{[]string{"explain", "-f", "-", "--from", "shop/web", "--to", "shop/batch", "--port", "http"}, `declares no container port named "http"`, 2},
		{[]string{"matrix", "-f", "-", "--bogus"}, "unknown flag: --bogus", 2},
	}
	for _, c := range cases {
		code, _, stderr := run(t, cluster, c.args...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
}

func TestHelpTeaches(t *testing.T) {
	for _, cmd := range []string{"explain", "matrix", "lint", "test"} {
		code, out, _ := run(t, "", cmd, "--help")
		if code != 0 || !strings.Contains(out, "Examples:") {
			t.Errorf("%s --help: exit %d, no examples:\n%s", cmd, code, out)
		}
	}
}

// TestKubectlPlugin: installed as kubectl-netpol, help and usage errors
// name the command as kubectl users type it.
func TestKubectlPlugin(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := MainAs("kubectl-netpol", []string{"--help"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("--help: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "kubectl netpol [command]") {
		t.Errorf("help does not show the plugin usage:\n%s", out.String())
	}
	out.Reset()
	errOut.Reset()
	if code := MainAs("kubectl-netpol", []string{"explain", "--bogus"}, strings.NewReader(""), &out, &errOut); code != 2 {
		t.Fatalf("bad flag: exit %d, want 2", code)
	}
	if !strings.Contains(errOut.String(), "Run 'kubectl netpol --help'") {
		t.Errorf("usage error does not point at kubectl netpol: %s", errOut.String())
	}
}

// TestHelpFitsATerminal: every command's --help, flags included, fits
// lines of helpWidth columns; flag descriptions ran to 342 before.
func TestHelpFitsATerminal(t *testing.T) {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if !sub.Hidden {
				walk(sub, append(slices.Clone(path), sub.Name()))
			}
		}
	}
	walk(newRoot(strings.NewReader(""), io.Discard, io.Discard), nil)
	if len(paths) < 15 {
		t.Fatalf("%d commands: the walk missed some", len(paths))
	}
	for _, path := range paths {
		code, out, stderr := run(t, "", append(slices.Clone(path), "--help")...)
		if code != 0 {
			t.Errorf("%v --help: exit %d: %s", path, code, stderr)
			continue
		}
		for i, line := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(line); n > helpWidth {
				t.Errorf("netpol %s --help line %d: %d columns: %.60s...", strings.Join(path, " "), i+1, n, line)
			}
		}
	}
}
