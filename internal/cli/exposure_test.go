package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestExposureCommand: the tenants example's locked-down namespace in
// text, with the shadowed allow marked; JSON and Markdown carry the same
// entries; user text cannot steer a terminal or a Markdown table.
func TestExposureCommand(t *testing.T) {
	code, out, stderr := run(t, "", "exposure", "-f", "../../examples/tenants", "-n", "sensitive")
	want := `sensitive/StatefulSet/vault (1 pod)
  ingress  
    admin  deny   every pod in every namespace       any  AdminNetworkPolicy sensitive-lockdown deny-all-ingress  9 pods today
    admin  allow  every pod in namespace monitoring  any  AdminNetworkPolicy cluster-services allow-monitoring    1 pod today  never reached: AdminNetworkPolicy sensitive-lockdown deny-all-ingress decides all of it first
    rest   allow  everything else (by default)
  egress  open to anything
    admin  allow  pods labelled k8s-app=kube-dns in namespace kube-system  53/udp, 53/tcp  AdminNetworkPolicy cluster-services allow-dns  1 pod today
    rest   allow  everything else (by default)
`
	if code != 0 || out != want {
		t.Errorf("exit %d, stderr %s\ngot:\n%s\nwant:\n%s", code, stderr, out, want)
	}
	code, out, _ = run(t, "", "exposure", "-f", "../../examples/tenants", "-o", "json")
	var ws []struct {
		Namespace, Name string
		Ingress         struct{ Open []string }
	}
	if err := json.Unmarshal([]byte(out), &ws); code != 0 || err != nil || len(ws) != 8 { // 9 pods, the two of blue-web frontend one workload
		t.Errorf("-o json: exit %d, %v, %d workloads", code, err, len(ws))
	}
	// Labels and names are validated; an admin rule's name is free text.
	hostile := `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
status: {podIP: 198.18.0.2}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: anp}
spec:
  priority: 1
  subject: {namespaces: {}}
  ingress: [{name: "a|b\u001b[2J", action: Allow, from: [{namespaces: {}}]}]
`
	for _, format := range []string{"text", "md"} {
		code, out, stderr := run(t, hostile, "exposure", "-f", "-", "-o", format, "-q")
		if code != 0 || strings.Contains(out, "\x1b") || format == "md" && strings.Contains(out, "a|b") {
			t.Errorf("-o %s: exit %d %s\n%q", format, code, stderr, out)
		}
	}
}
