package deploy_test

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/kubetest"
)

// TestKubeApplyServerDryRun runs the real kubectl of the test API server's
// release on deploy/, as a user installing netpol would, but with
// --dry-run=server: kustomize builds the manifests, and the API server
// validates, defaults and admits every object without storing it. The CRDs
// are already installed (kubetest.Start does it), so those are configured or
// unchanged rather than created.
//
// The namespace is created for real first: a server dry run stores nothing,
// so on a cluster without netpol-system every namespaced object would be
// refused with "namespaces not found" (README.md says so too).
func TestKubeApplyServerDryRun(t *testing.T) {
	c := kubetest.Start(t)
	// The discovery cache goes with the test, not to ~/.kube of whoever runs it.
	global := []string{"--kubeconfig", c.Kubeconfig, "--cache-dir", t.TempDir()}
	kubectl := func(args ...string) (stdout, stderr string) {
		t.Helper()
		var o, e bytes.Buffer
		cmd := exec.CommandContext(t.Context(), c.Kubectl, slices.Concat(global, args)...)
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Run(); err != nil {
			t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, &o, &e)
		}
		t.Logf("kubectl %s:\n%s%s", strings.Join(args, " "), &o, &e)
		return o.String(), e.String()
	}
	kubectl("apply", "-f", "namespace.yaml")

	// Everything the apply must name, as kubectl prints it.
	want := []string{
		"clusterrole.rbac.authorization.k8s.io/netpol-agent",
		"clusterrolebinding.rbac.authorization.k8s.io/netpol-agent",
		"configmap/netpol-agent",
		"customresourcedefinition.apiextensions.k8s.io/adminnetworkpolicies.policy.networking.k8s.io",
		"customresourcedefinition.apiextensions.k8s.io/baselineadminnetworkpolicies.policy.networking.k8s.io",
		"customresourcedefinition.apiextensions.k8s.io/clusternetworkpolicies.policy.networking.k8s.io",
		"daemonset.apps/netpol-agent",
		"namespace/netpol-system",
		"role.rbac.authorization.k8s.io/netpol-agent-cluster-dns",
		"rolebinding.rbac.authorization.k8s.io/netpol-agent-cluster-dns",
		"serviceaccount/netpol-agent",
	}

	stdout, stderr := kubectl("apply", "--dry-run=server", "-k", ".")

	// Each line is "<resource>/<name> <action> (server dry run)".
	var got []string
	for line := range strings.Lines(stdout) {
		line = strings.TrimSpace(line)
		obj, rest, ok := strings.Cut(line, " ")
		action, dry := strings.CutSuffix(rest, " (server dry run)")
		if !ok || !dry {
			t.Errorf("unexpected line %q, want <resource>/<name> <action> (server dry run)", line)
			continue
		}
		switch action {
		case "created", "configured", "unchanged":
		default:
			t.Errorf("%s: %s, want created, configured or unchanged", obj, action)
		}
		got = append(got, obj)
	}
	slices.Sort(got)
	equalLines(t, "kubectl applied", got, want)

	// A warning is a problem the apply let through: a deprecated API, a
	// Pod Security violation, an unknown field. The one expected warning is
	// about the CRDs kubetest created without kubectl.
	for line := range strings.Lines(stderr) {
		if !strings.Contains(line, "is missing the kubectl.kubernetes.io/last-applied-configuration annotation") {
			t.Errorf("kubectl: %s", strings.TrimSpace(line))
		}
	}
}
