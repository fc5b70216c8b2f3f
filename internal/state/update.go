package state

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/source"
)

// Builder makes snapshot after snapshot of objects that change a little at
// a time (an agent's input, where unchanged objects keep their Value
// pointers). When the cluster objects (everything but policies) are the
// same values as last time except for Pods updated in place — new labels or
// ports, same name, node, addresses and phase — the new snapshot is the last
// one with those pods replaced: every other pod keeps its pointer and its
// ID, so that the layers above can tell what changed by comparing pointers
// (engine.Engine.Update does). Any other change builds anew. Policies pass
// through either way. Not safe for concurrent use.
type Builder struct {
	Options Options

	last        *Cluster
	lastValues  []any // the cluster objects' values of the last build, in input order
	lastDiags   diag.List
	lastFlagged map[string]bool // objects the last findings name
}

// Build returns the snapshot of objects and its findings.
func (b *Builder) Build(objects []source.Object) (*Cluster, diag.List) {
	if c, ok := b.update(objects); ok {
		return c, b.lastDiags
	}
	c, diags := Build(objects, b.Options)
	b.last, b.lastDiags = c, diags
	b.lastValues = b.lastValues[:0]
	for _, o := range objects {
		if isClusterObject(o.Value) {
			b.lastValues = append(b.lastValues, o.Value)
		}
	}
	b.lastFlagged = map[string]bool{}
	for _, d := range diags {
		b.lastFlagged[d.Object] = true
	}
	return c, diags
}

// isClusterObject reports whether state models v (the rest are policies).
func isClusterObject(v any) bool {
	switch v.(type) {
	case *corev1.Namespace, *corev1.Node, *corev1.Pod:
		return true
	}
	return isWorkload(v)
}

// update makes the snapshot from the last one when only pods changed in
// place, and reports whether it could.
func (b *Builder) update(objects []source.Object) (*Cluster, bool) {
	if b.last == nil {
		return nil, false
	}
	next := *b.last // the look-ups hold IDs and names, which stay
	// The slices are the last snapshot's until something differs.
	podsCopied, policies := false, 0
	i := 0 // cluster objects seen
	for _, o := range objects {
		if !isClusterObject(o.Value) {
			if np, ok := o.Value.(*networkingv1.NetworkPolicy); ok && next.namespaces[defaultNS(np.Namespace)] == nil {
				return nil, false // it would create a namespace
			}
			if policies < len(b.last.Policies) && sameSlice(next.Policies, b.last.Policies) && b.last.Policies[policies].Value == o.Value {
				policies++
				continue
			}
			if sameSlice(next.Policies, b.last.Policies) {
				next.Policies = append(make([]source.Object, 0, len(b.last.Policies)+1), b.last.Policies[:policies]...)
			}
			next.Policies = append(next.Policies, o)
			policies++
			continue
		}
		if i >= len(b.lastValues) {
			return nil, false
		}
		was := b.lastValues[i]
		// Written in place: if this fails, Build replaces them all.
		b.lastValues[i] = o.Value
		i++
		if o.Value == was {
			continue
		}
		p, ok := b.replacement(o, was)
		if !ok {
			return nil, false
		}
		if !podsCopied {
			next.Pods, podsCopied = slices.Clone(next.Pods), true
		}
		next.Pods[p.ID] = p
	}
	if i != len(b.lastValues) {
		return nil, false
	}
	if policies < len(next.Policies) { // policies went away at the end
		next.Policies = next.Policies[:policies:policies]
	}
	b.last = &next
	return &next, true
}

// sameSlice reports whether a and b are the same slice, not only equal ones.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// replacement returns the pod that the Pod object o makes in place of the
// one that old made, when nothing but its labels and ports changed and
// neither version has findings.
func (b *Builder) replacement(o source.Object, old any) (*Pod, bool) {
	now, ok := o.Value.(*corev1.Pod)
	was, ok2 := old.(*corev1.Pod)
	if !ok || !ok2 || b.lastFlagged[o.Ref()] ||
		now.Namespace != was.Namespace || now.Name != was.Name ||
		now.Spec.NodeName != was.Spec.NodeName || now.Spec.HostNetwork != was.Spec.HostNetwork ||
		finished(&now.Status) || finished(&was.Status) ||
		now.Status.PodIP != was.Status.PodIP || !slices.Equal(now.Status.PodIPs, was.Status.PodIPs) {
		return nil, false
	}
	prev := b.last.Pod(defaultNS(now.Namespace) + "/" + now.Name)
	if prev == nil {
		return nil, false
	}
	// addPod on a scratch builder that sees the last snapshot's namespaces:
	// the pod's namespace exists, so nothing is added to them.
	scratch := &builder{opts: b.Options, c: &Cluster{namespaces: b.last.namespaces}, seen: map[string]diag.Origin{}}
	scratch.addPod(o, now.Labels, now.Namespace, now.Name, &now.Spec, &now.Status, "")
	if len(scratch.diags) > 0 || len(scratch.c.Pods) != 1 {
		return nil, false
	}
	p := scratch.c.Pods[0]
	// Where the last build placed it and what it assigned stay: both derive
	// from the name and the (unchanged) spec and status.
	p.ID, p.Node, p.IPs = prev.ID, prev.Node, prev.IPs
	return p, true
}

func finished(s *corev1.PodStatus) bool {
	return s.Phase == corev1.PodSucceeded || s.Phase == corev1.PodFailed
}
