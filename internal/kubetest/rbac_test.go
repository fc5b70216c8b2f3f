package kubetest_test

import (
	"fmt"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/netpol/netpol/internal/kubetest"
)

// TestGrantIsInForceOnReturn: RBAC's authorizer reads roles and bindings
// from an informer, so a binding just created may not authorize the next
// request yet. Grant must return only once it does. Several users in a row
// make the window show: each is used the moment Grant returns.
func TestGrantIsInForceOnReturn(t *testing.T) {
	c := kubetest.StartWith(t, kubetest.Options{RBAC: true})
	ctx := t.Context()
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces", "pods"}, Verbs: []string{"list"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"list"}},
	}
	for i := range 10 {
		user := fmt.Sprintf("reader-%d", i)
		c.Grant(t, user, rules)
		cfg := rest.CopyConfig(c.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("%s lists namespaces right after Grant: %v", user, err)
		}
		if _, err := cs.NetworkingV1().NetworkPolicies("").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("%s lists NetworkPolicies right after Grant: %v", user, err)
		}
		// What was not granted stays forbidden.
		if _, err := cs.CoreV1().Services("").List(ctx, metav1.ListOptions{}); err == nil {
			t.Fatalf("%s lists Services, which Grant did not give", user)
		}
	}
}
