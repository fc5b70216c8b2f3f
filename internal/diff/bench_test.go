package diff

import (
	"testing"

	"sigs.k8s.io/network-policy-api/apis/v1alpha1"

	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// BenchmarkDiff compares two engines built from two copies of a synthetic
// cluster (internal/synth): "same" as they are (diff A A), "pr" with the
// second changed as a small pull request changes a cluster (smallPR). The
// time is Compare alone, after both engines are built. The 100k-pod
// cluster is skipped in -short mode, and its pull request always: the
// admin rule it turns around selects some 6,000 pods, and every other
// class is asked about each of their classes (over 7 minutes and 7 GB, not
// measured to the end).
func BenchmarkDiff(b *testing.B) {
	for _, size := range []synth.Size{synth.Size1k, synth.Size10k, synth.Size100k} {
		for _, change := range []string{"same", "pr"} {
			b.Run(size.Name+"/"+change, func(b *testing.B) {
				switch {
				case testing.Short() && size.Pods > 10000:
					b.Skip("100k-pod cluster skipped in -short mode")
				case size.Pods > 10000 && change == "pr":
					b.Skip("a pull request on the 100k-pod cluster takes too long to measure")
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
// of the third admin policy turned from Allow to Deny (or to Allow), and
// two pods (the 100th and 200th) relabelled to another app.
func smallPR(objects []source.Object) []source.Object {
	return clusterChange{
		dropNP:  func(n int) bool { return n == 10 || n == 20 || n == 30 },
		dropPod: func(int) bool { return false },
		relabel: func(n int, app string) string {
			if n == 100 || n == 200 {
				return "cache"
			}
			return app
		},
		turn: func(n int, a v1alpha1.AdminNetworkPolicyRuleAction) v1alpha1.AdminNetworkPolicyRuleAction {
			switch {
			case n != 3:
				return a
			case a == v1alpha1.AdminNetworkPolicyRuleActionAllow:
				return v1alpha1.AdminNetworkPolicyRuleActionDeny
			}
			return v1alpha1.AdminNetworkPolicyRuleActionAllow
		},
	}.apply(objects)
}
