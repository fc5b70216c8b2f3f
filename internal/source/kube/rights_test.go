package kube_test

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/rest"

	"github.com/netpol/netpol/internal/kubetest"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/source/kube"
)

// TestKubeListWithoutServiceRights: a user who may read what policy needs
// but not Services and EndpointSlices (RBAC written for the agent, which
// does not need them) still gets the cluster from List, with one warning
// per kind it could not read; the verdicts are those of the policies.
func TestKubeListWithoutServiceRights(t *testing.T) {
	c := kubetest.StartWith(t, kubetest.Options{RBAC: true})
	ctx := t.Context()
	objs, err := kubetest.Manifests(cluster)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, objs); err != nil {
		t.Fatal(err)
	}
	c.Grant(t, "policy-reader", []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces", "nodes", "pods"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"policy.networking.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
	})
	limited := rest.CopyConfig(c.Config)
	limited.Impersonate = rest.ImpersonationConfig{UserName: "policy-reader"}

	got, diags, err := kube.List(ctx, limited, source.Options{})
	if err != nil {
		t.Fatalf("List without the right to read Services: %v", err)
	}
	warnings := diags.Warnings()
	if len(warnings) != 2 || !strings.Contains(warnings[0].String(), "cannot list Services") ||
		!strings.Contains(warnings[1].String(), "cannot list EndpointSlices") || !strings.Contains(warnings[0].String(), "forbidden") {
		t.Errorf("warnings = %q, want one about Services and one about EndpointSlices, saying why", warnings)
	}
	e := build(t, got)
	if len(e.Cluster().Services) != 0 {
		t.Errorf("Services read without the right to: %d", len(e.Cluster().Services))
	}
	if !allowed(t, e, "shop/frontend", "shop/web") || allowed(t, e, "untrusted/intruder", "shop/web") {
		t.Error("the verdicts differ from those of the cluster's policies")
	}
}
