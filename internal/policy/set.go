package policy

import (
	"cmp"
	"slices"
	"strings"

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
	return new(Memo).Normalize(objects)
}

// Memo normalises like Normalize and remembers the outcome per object, so
// that the next call redoes only the objects that changed: the agent
// normalises the whole cluster on every change, and 10,000 unchanged
// NetworkPolicies should cost a map look-up each. An object is unchanged
// when its Value is the same pointer (sources decode a changed object into
// a new value and never write to one they handed out). The zero Memo is
// ready to use; a Memo keeps only the objects of its last call.
type Memo struct {
	last map[any]normalized
	// The last call's policy objects in input order, their outcomes, and
	// what it returned, for inPlace.
	values []any
	outs   []normalized
	set    *Set
	diags  diag.List
}

// normalized is one object's outcome: its policy (nil when it had errors or
// is not a policy) and its findings.
type normalized struct {
	p     *Policy
	diags diag.List
}

// Normalize is the package's Normalize, reusing what earlier calls found.
func (m *Memo) Normalize(objects []source.Object) (*Set, diag.List) {
	if set, ok := m.inPlace(objects); ok {
		return set, m.diags
	}
	m.values, m.outs = m.values[:0], m.outs[:0]
	var diags diag.List
	set := &Set{}
	seen := make(map[Ref]diag.Origin, len(objects))
	next := make(map[any]normalized, len(objects))
	m.values, m.outs = slices.Grow(m.values, len(objects)), slices.Grow(m.outs, len(objects))
	sels := &selectors{}
	for _, o := range objects {
		if !isPolicy(o.Value) {
			continue
		}
		out, ok := m.last[o.Value]
		if !ok {
			out = normalizeObject(o, sels)
		}
		next[o.Value] = out
		m.values, m.outs = append(m.values, o.Value), append(m.outs, out)
		diags = append(diags, out.diags...)
		p := out.p
		if p == nil {
			continue
		}
		if first, dup := seen[p.Ref]; dup {
			o.Reporter(&diags).Errorf("metadata.name", "declared twice (first at %s)", first)
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
	m.last = next
	sortTier(set.Admin)
	sortTier(set.NetworkPolicies)
	sortTier(set.Baseline)
	m.set, m.diags = set, diags
	return set, diags
}

// inPlace returns the last Set with the policies of the objects that
// changed in place swapped in, when that is all that changed: the same
// policy objects in the same order, and each changed one still valid, with
// the same name, tier and priority, so that neither the order of the Set
// nor its findings change. An NP's port edited is such a change; the set is
// then made in one pass over the objects instead of a map and a sort.
func (m *Memo) inPlace(objects []source.Object) (*Set, bool) {
	if m.set == nil {
		return nil, false
	}
	type swap struct {
		at    int
		value any
		out   normalized
	}
	var swaps []swap
	sels := &selectors{}
	i := 0
	for _, o := range objects {
		if !isPolicy(o.Value) {
			continue
		}
		if i >= len(m.values) {
			return nil, false
		}
		if o.Value != m.values[i] {
			was, out := m.outs[i], normalizeObject(o, sels)
			m.last[o.Value] = out // for Normalize, if this is not in place
			if was.p == nil || out.p == nil || len(was.diags) > 0 || len(out.diags) > 0 ||
				out.p.Ref != was.p.Ref || out.p.Tier != was.p.Tier || out.p.Priority != was.p.Priority {
				return nil, false
			}
			swaps = append(swaps, swap{i, o.Value, out})
		}
		i++
	}
	if i != len(m.values) {
		return nil, false
	}
	if len(swaps) == 0 {
		return m.set, true
	}
	set := &Set{Admin: slices.Clone(m.set.Admin), NetworkPolicies: slices.Clone(m.set.NetworkPolicies), Baseline: slices.Clone(m.set.Baseline)}
	for _, sw := range swaps {
		was := m.outs[sw.at].p
		for _, tier := range [][]*Policy{set.Admin, set.NetworkPolicies, set.Baseline} {
			if k := slices.Index(tier, was); k >= 0 { // absent: a duplicate, left out
				tier[k] = sw.out.p
			}
		}
		delete(m.last, m.values[sw.at])
		m.values[sw.at], m.outs[sw.at] = sw.value, sw.out
	}
	m.set = set
	return set, true
}

// isPolicy reports whether v is one of the policy types (all pointers, so
// they can key Memo's map).
func isPolicy(v any) bool {
	switch v.(type) {
	case *networkingv1.NetworkPolicy, *v1alpha1.AdminNetworkPolicy, *kep.AdminNetworkPolicy,
		*v1alpha1.BaselineAdminNetworkPolicy, *kep.BaselineAdminNetworkPolicy, *v1alpha2.ClusterNetworkPolicy:
		return true
	}
	return false
}

// normalizeObject normalises one policy object, compiling its selectors
// through sels.
func normalizeObject(o source.Object, sels *selectors) (out normalized) {
	n := &normalizer{obj: o, r: o.Reporter(&out.diags), unknown: o.Unknown, sels: sels}
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
	}
	// An admin policy with errors is kept in its fail-closed form; any
	// other policy with errors is left out.
	if p != nil && (p.Invalid || len(out.diags.Errors()) == 0) {
		n.annotations(p)
		out.p = p
	}
	return out
}

// kindRank puts AdminNetworkPolicy before ClusterNetworkPolicy at equal
// priority, the older API first.
var kindRank = map[string]int{KindAdminNetworkPolicy: 0, KindClusterNetworkPolicy: 1, KindBaselineAdminPolicy: 2, KindNetworkPolicy: 3}

// sortTier orders one tier. Input that comes sorted (a cluster lists
// objects by name) is only checked: 10k NetworkPolicies sort in ~4 ms.
func sortTier(ps []*Policy) {
	if !slices.IsSortedFunc(ps, comparePolicies) {
		slices.SortStableFunc(ps, comparePolicies)
	}
}

func comparePolicies(a, b *Policy) int {
	if a.Priority != b.Priority {
		return cmp.Compare(a.Priority, b.Priority)
	}
	if kindRank[a.Kind] != kindRank[b.Kind] {
		return cmp.Compare(kindRank[a.Kind], kindRank[b.Kind])
	}
	if a.Namespace != b.Namespace {
		return strings.Compare(a.Namespace, b.Namespace)
	}
	return strings.Compare(a.Name, b.Name)
}
