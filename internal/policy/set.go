package policy

import (
	"sort"

	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/network-policy-api/apis/v1alpha1"
	"sigs.k8s.io/network-policy-api/apis/v1alpha2"

	"github.com/netpol/netpol/internal/apis/kep"
	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/source"
)

// Set is every policy of a cluster, per tier, in evaluation order.
type Set struct {
	// Admin: by priority, then kind (AdminNetworkPolicy before
	// ClusterNetworkPolicy), then name. Equal priorities are undefined
	// upstream; this order is netpol's documented, stable choice.
	Admin []*Policy
	// NetworkPolicies: by namespace, then name (order does not matter: the
	// tier is a union).
	NetworkPolicies []*Policy
	// Baseline: ClusterNetworkPolicies of tier Baseline by priority then
	// name, then the BaselineAdminNetworkPolicy, which has no priority and
	// acts as the cluster's last word before the default.
	Baseline []*Policy
}

// Policies returns every policy, tier by tier.
func (s *Set) Policies() []*Policy {
	out := make([]*Policy, 0, len(s.Admin)+len(s.NetworkPolicies)+len(s.Baseline))
	out = append(out, s.Admin...)
	out = append(out, s.NetworkPolicies...)
	return append(out, s.Baseline...)
}

// baselineAdminPriority sorts the BaselineAdminNetworkPolicy after every
// Baseline-tier ClusterNetworkPolicy (whose priorities stop at 1000).
const baselineAdminPriority = 1 << 30

// Normalize validates and normalises every policy object. Objects with errors
// are left out of the Set; the caller decides whether errors are fatal.
func Normalize(objects []source.Object) (*Set, diag.List) {
	var diags diag.List
	set := &Set{}
	seen := map[Ref]diag.Origin{}
	for _, o := range objects {
		n := &normalizer{obj: o, r: o.Reporter(&diags), unknown: o.Unknown}
		before := len(diags.Errors())
		var p *Policy
		switch v := o.Value.(type) {
		case *networkingv1.NetworkPolicy:
			p = n.networkPolicy(v)
		case *v1alpha1.AdminNetworkPolicy:
			p = n.adminNetworkPolicy(v)
		case *kep.AdminNetworkPolicy:
			p = n.kepAdminNetworkPolicy(v)
		case *v1alpha1.BaselineAdminNetworkPolicy:
			p = n.baselineAdminNetworkPolicy(v)
		case *kep.BaselineAdminNetworkPolicy:
			p = n.kepBaselineAdminNetworkPolicy(v)
		case *v1alpha2.ClusterNetworkPolicy:
			p = n.clusterNetworkPolicy(v)
		default:
			continue
		}
		if p == nil || len(diags.Errors()) > before {
			continue
		}
		n.annotations(p)
		if first, dup := seen[p.Ref]; dup {
			n.r.Errorf("metadata.name", "declared twice (first at %s)", first)
			continue
		}
		seen[p.Ref] = o.Origin
		switch p.Tier {
		case TierAdmin:
			set.Admin = append(set.Admin, p)
		case TierNetworkPolicy:
			set.NetworkPolicies = append(set.NetworkPolicies, p)
		case TierBaseline:
			set.Baseline = append(set.Baseline, p)
		}
	}
	sortTier(set.Admin)
	sortTier(set.NetworkPolicies)
	sortTier(set.Baseline)
	return set, diags
}

// kindRank puts AdminNetworkPolicy before ClusterNetworkPolicy at equal
// priority, the older API first.
var kindRank = map[string]int{KindAdminNetworkPolicy: 0, KindClusterNetworkPolicy: 1, KindBaselineAdminPolicy: 2, KindNetworkPolicy: 3}

func sortTier(ps []*Policy) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		if kindRank[a.Kind] != kindRank[b.Kind] {
			return kindRank[a.Kind] < kindRank[b.Kind]
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}
