package synth

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/network-policy-api/apis/v1alpha1"

	"github.com/netpol/netpol/internal/source"
)

// Change is what a pull request does to a synthetic cluster, by the number
// (from 1) of each NetworkPolicy, pod and AdminNetworkPolicy: which it
// removes, the pods' new app label, the new action of the admin policies'
// first ingress rule. It changes the objects in place.
type Change struct {
	DropNP, DropPod func(n int) bool
	Relabel         func(n int, app string) string
	Turn            func(n int, a v1alpha1.AdminNetworkPolicyRuleAction) v1alpha1.AdminNetworkPolicyRuleAction
}

// Apply makes the change to objects and returns those that are left.
func (c Change) Apply(objects []source.Object) []source.Object {
	var out []source.Object
	var nps, pods, anps int
	for _, o := range objects {
		switch v := o.Value.(type) {
		case *networkingv1.NetworkPolicy:
			nps++
			if c.DropNP(nps) {
				continue
			}
		case *corev1.Pod:
			pods++
			if c.DropPod(pods) {
				continue
			}
			if app := c.Relabel(pods, v.Labels["app"]); app != v.Labels["app"] {
				v.Labels["app"] = app
			}
		case *v1alpha1.AdminNetworkPolicy:
			anps++
			if len(v.Spec.Ingress) > 0 {
				v.Spec.Ingress[0].Action = c.Turn(anps, v.Spec.Ingress[0].Action)
			}
		}
		out = append(out, o)
	}
	return out
}

// SmallPR changes a synthetic cluster as a small pull request does: three
// NetworkPolicies removed (the 10th, 20th and 30th), the first ingress rule
// of the third admin policy turned from Allow to Deny (or to Allow), and
// two pods (the 100th and 200th) relabelled to another app. The diff
// benchmarks compare a cluster with it.
func SmallPR(objects []source.Object) []source.Object {
	return Change{
		DropNP:  func(n int) bool { return n == 10 || n == 20 || n == 30 },
		DropPod: func(int) bool { return false },
		Relabel: func(n int, app string) string {
			if n == 100 || n == 200 {
				return "cache"
			}
			return app
		},
		Turn: func(n int, a v1alpha1.AdminNetworkPolicyRuleAction) v1alpha1.AdminNetworkPolicyRuleAction {
			switch {
			case n != 3:
				return a
			case a == v1alpha1.AdminNetworkPolicyRuleActionAllow:
				return v1alpha1.AdminNetworkPolicyRuleActionDeny
			}
			return v1alpha1.AdminNetworkPolicyRuleActionAllow
		},
	}.Apply(objects)
}
