package kubetest

import (
	"fmt"
	"testing"

	authzv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Grant gives user the rules, cluster-wide, through a ClusterRole and a
// ClusterRoleBinding both named after the user, and returns once the API
// server authorizes every verb on every resource of the rules for the user.
// RBAC's authorizer reads roles and bindings through an informer, so a
// request sent the moment the binding is stored may still be refused: on a
// loaded machine it was (TestGrantIsInForceOnReturn).
func (c *Cluster) Grant(t testing.TB, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kubetest: grant %s: %v", user, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("kubetest: grant %s: %v", user, err)
	}
	err = poll(nil, func() error {
		for _, r := range rules {
			for _, group := range r.APIGroups {
				for _, resource := range r.Resources {
					for _, verb := range r.Verbs {
						if err := allowed(t, cs, user, verb, group, resource); err != nil {
							return err
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("kubetest: grant %s: %v", user, err)
	}
}

// allowed asks the API server, through a SubjectAccessReview, whether user
// may do verb on the resource cluster-wide.
func allowed(t testing.TB, cs kubernetes.Interface, user, verb, group, resource string) error {
	review := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User:               user,
		ResourceAttributes: &authzv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource},
	}}
	got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), review, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	if !got.Status.Allowed {
		return fmt.Errorf("%s may not yet %s %s in group %q (%s)", user, verb, resource, group, got.Status.Reason)
	}
	return nil
}
