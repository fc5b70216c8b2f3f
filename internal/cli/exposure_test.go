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
	var r struct {
		Workloads []struct {
			Namespace, Name string
			Ingress         struct{ Open []string }
		}
	}
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || len(r.Workloads) != 8 { // 9 pods, the two of blue-web frontend one workload
		t.Errorf("-o json: exit %d, %v, %d workloads", code, err, len(r.Workloads))
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

// TestExposureListsASharedTierOnce: an admin tier of more than three
// entries that two workloads share is listed at the first and named at
// the second.
func TestExposureListsASharedTierOnce(t *testing.T) {
	in := `
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: shop}
status: {podIP: 198.18.0.1}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: shop}
status: {podIP: 198.18.0.2}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: guard}
spec:
  priority: 1
  subject: {namespaces: {}}
  ingress:
  - {name: r1, action: Deny, from: [{namespaces: {matchLabels: {env: dev}}}]}
  - {name: r2, action: Deny, from: [{namespaces: {matchLabels: {env: qa}}}]}
  - {name: r3, action: Deny, from: [{namespaces: {matchLabels: {env: ci}}}]}
  - {name: r4, action: Deny, from: [{namespaces: {matchLabels: {env: lab}}}]}
`
	code, out, stderr := run(t, in, "exposure", "-f", "-", "-q")
	want := `shop/a (1 pod)
  ingress  
    admin  deny   every pod in namespaces labelled env=dev  any  AdminNetworkPolicy guard r1  0 pods today
    admin  deny   every pod in namespaces labelled env=qa   any  AdminNetworkPolicy guard r2  0 pods today
    admin  deny   every pod in namespaces labelled env=ci   any  AdminNetworkPolicy guard r3  0 pods today
    admin  deny   every pod in namespaces labelled env=lab  any  AdminNetworkPolicy guard r4  0 pods today
    rest   allow  everything else (by default)
  egress  open to anything
    rest  allow  everything else (by default)

shop/b (1 pod)
  ingress  
    admin  the 4 entries listed for shop/a ingress
    rest   allow  everything else (by default)
  egress  open to anything
    rest  allow  everything else (by default)
`
	if code != 0 || out != want {
		t.Errorf("exit %d %s\ngot:\n%s\nwant:\n%s", code, stderr, out, want)
	}
}
