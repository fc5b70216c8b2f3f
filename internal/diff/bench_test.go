package diff

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/network-policy-api/apis/v1alpha1"

	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// BenchmarkDiff compares two engines built from two copies of a synthetic
// cluster (internal/synth): "same" as they are (diff A A), "pr" with the
// second changed as a small pull request changes a cluster (smallPR). The
// time is Compare alone, after both engines are built. The 100k-pod
// cluster is skipped in -short mode.
func BenchmarkDiff(b *testing.B) {
	for _, size := range []synth.Size{synth.Size1k, synth.Size10k, synth.Size100k} {
		for _, change := range []string{"same", "pr"} {
			b.Run(size.Name+"/"+change, func(b *testing.B) {
				if testing.Short() && size.Pods > 10000 {
					b.Skip("100k-pod cluster skipped in -short mode")
				}
				newObjs := synth.Cluster(size)
				if change == "pr" {
					newObjs = smallPR(newObjs)
				}
				old, new := loadObjects(b, synth.Cluster(size)), loadObjects(b, newObjs)
				var r *Result
				for b.Loop() {
					r = Compare(old, new, Options{})
				}
				b.ReportMetric(float64(r.Summary.PodPairs), "pod-pairs")
				b.ReportMetric(float64(r.Summary.Gained+r.Summary.Lost+r.Summary.Changed), "entries")
			})
		}
	}
}

// smallPR changes a synthetic cluster as a small pull request does: three
// NetworkPolicies removed (the 10th, 20th and 30th), the first ingress rule
// of the third admin policy turned from Allow to Deny (or Deny to Allow),
// and two pods (the 100th and 200th) relabelled to another app.
func smallPR(objects []source.Object) []source.Object {
	var out []source.Object
	var nps, pods, anps int
	for _, o := range objects {
		switch v := o.Value.(type) {
		case *networkingv1.NetworkPolicy:
			nps++
			if nps == 10 || nps == 20 || nps == 30 {
				continue
			}
		case *corev1.Pod:
			pods++
			if pods == 100 || pods == 200 {
				v.Labels["app"] = "cache"
			}
		case *v1alpha1.AdminNetworkPolicy:
			anps++
			if anps == 3 && len(v.Spec.Ingress) > 0 {
				r := &v.Spec.Ingress[0]
				if r.Action == v1alpha1.AdminNetworkPolicyRuleActionAllow {
					r.Action = v1alpha1.AdminNetworkPolicyRuleActionDeny
				} else {
					r.Action = v1alpha1.AdminNetworkPolicyRuleActionAllow
				}
			}
		}
		out = append(out, o)
	}
	return out
}
