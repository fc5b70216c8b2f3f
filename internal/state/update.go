package state

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
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
	lastValues  []any    // the cluster objects' values of the last build, in input order
	lastKeys    []string // and their keys, "Kind/namespace/name"
	lastSorted  bool     // the keys ascend (the kube mirror's order), so pods can come and go
	lastDiags   diag.List
	lastFlagged map[string]bool // objects the last findings name
}

func objectKey(o source.Object) string { return o.Kind + "/" + o.Namespace + "/" + o.Name }

// Build returns the snapshot of objects and its findings.
func (b *Builder) Build(objects []source.Object) (*Cluster, diag.List) {
	if c, ok := b.update(objects); ok {
		return c, b.lastDiags
	}
	c, diags := Build(objects, b.Options)
	b.last, b.lastDiags = c, diags
	b.lastValues, b.lastKeys, b.lastSorted = b.lastValues[:0], b.lastKeys[:0], true
	for _, o := range objects {
		if isClusterObject(o.Value) {
			k := objectKey(o)
			if n := len(b.lastKeys); n > 0 && b.lastKeys[n-1] >= k {
				b.lastSorted = false
			}
			b.lastValues, b.lastKeys = append(b.lastValues, o.Value), append(b.lastKeys, k)
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
	case *corev1.Namespace, *corev1.Node, *corev1.Pod, *source.Pod, *corev1.Service, *discoveryv1.EndpointSlice:
		return true
	}
	return isWorkload(v)
}

// update makes the snapshot from the last one when only pods changed, and
// reports whether it could. Pods updated in place keep their IDs; when
// pods come or go (which needs the input in key order, as the kube mirror
// gives it), the pods after them are renumbered (copies, with their new
// IDs).
func (b *Builder) update(objects []source.Object) (*Cluster, bool) {
	if b.last == nil || len(b.last.Services) > 0 {
		// Backends are derived from pods: a pod that changes in place
		// may join or leave a Service, so a snapshot with Services is
		// built anew (the agent does not read Services).
		return nil, false
	}
	next := *b.last // the look-ups hold IDs and names, which stay
	// The slices are the last snapshot's until something differs.
	policies := 0
	var e podEdits
	// While no pod came or went, the values are written over the last
	// ones (if this fails, Build replaces them all); after, into values.
	var values []any
	var keys []string
	pos, i := 0, 0 // cluster objects written, and of the last build read
	emit := func(v any, k string) {
		if values != nil {
			values, keys = append(values, v), append(keys, k)
		} else {
			b.lastValues[pos] = v
		}
		pos++
	}
	structural := func() bool {
		if !b.lastSorted {
			return false
		}
		if values == nil {
			values = append(make([]any, 0, len(b.lastValues)+8), b.lastValues[:pos]...)
			keys = append(make([]string, 0, len(b.lastKeys)+8), b.lastKeys[:pos]...)
		}
		return true
	}
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
		for {
			if i < len(b.lastValues) && o.Value == b.lastValues[i] {
				emit(o.Value, b.lastKeys[i])
				i++
				break
			}
			key := objectKey(o)
			switch {
			case i < len(b.lastValues) && key == b.lastKeys[i]: // updated
				p, ok := b.replacement(o, b.lastValues[i])
				if !ok {
					return nil, false
				}
				e.replace(p)
				emit(o.Value, key)
				i++
			case i < len(b.lastValues) && b.lastKeys[i] < key: // the last one is gone
				if !structural() || !b.deleted(&e, b.lastValues[i]) {
					return nil, false
				}
				i++
				continue
			default: // new
				if !structural() || pos > 0 && keys[pos-1] >= key || !b.added(&e, o) {
					return nil, false
				}
				emit(o.Value, key)
			}
			break
		}
	}
	for ; i < len(b.lastValues); i++ {
		if !structural() || !b.deleted(&e, b.lastValues[i]) {
			return nil, false
		}
	}
	if policies < len(next.Policies) { // policies went away at the end
		next.Policies = next.Policies[:policies:policies]
	}
	switch {
	case values != nil:
		next.Pods = e.merged(b.last.Pods)
		next.lookups()
		b.lastValues, b.lastKeys = values, keys
	case len(e.replaced) > 0:
		next.Pods = slices.Clone(next.Pods)
		for _, p := range e.replaced {
			next.Pods[p.ID] = p
		}
	}
	b.last = &next
	return &next, true
}

// podEdits are the pods an update replaces, adds and deletes.
type podEdits struct {
	replaced map[string]*Pod // by key
	added    []*Pod          // in key order
	deleted  map[string]bool
}

func (e *podEdits) replace(p *Pod) {
	if e.replaced == nil {
		e.replaced = map[string]*Pod{}
	}
	e.replaced[p.Key()] = p
}

// deleted records the deletion of the object v; false if it is not a pod,
// a finished one, or one with findings.
func (b *Builder) deleted(e *podEdits, v any) bool {
	pod, ok := typedPod(v)
	if !ok {
		return false
	}
	// A finished pod was never in the snapshot, but the finding that counts
	// finished pods changes: build anew.
	if finished(&pod.Status) || b.lastFlagged[source.Object{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name}.Ref()] {
		return false
	}
	if e.deleted == nil {
		e.deleted = map[string]bool{}
	}
	e.deleted[defaultNS(pod.Namespace)+"/"+pod.Name] = true
	return true
}

// added records the pod of the Pod object o; false when adding it needs
// more than a pod (a namespace, a node, an address assigned), or it has
// findings.
func (b *Builder) added(e *podEdits, o source.Object) bool {
	pod, ok := typedPod(o.Value)
	if !ok || pod.Spec.HostNetwork || pod.Spec.NodeName == "" || b.last.nodes[pod.Spec.NodeName] == nil ||
		b.last.namespaces[defaultNS(pod.Namespace)] == nil || finished(&pod.Status) {
		return false
	}
	scratch := &builder{opts: b.Options, c: &Cluster{namespaces: b.last.namespaces, labelSets: b.last.labelSets}, seen: map[declared]diag.Origin{}}
	scratch.addPod(o, pod.Labels, pod.Namespace, pod.Name, &pod.Spec, &pod.Status, podOwner(pod))
	if len(scratch.diags) > 0 || len(scratch.c.Pods) != 1 {
		return false
	}
	p := scratch.c.Pods[0]
	if len(p.IPs) == 0 || b.last.Pod(p.Key()) != nil {
		return false
	}
	for _, ip := range p.IPs {
		if b.last.PodByIP(ip) != nil || b.last.NodeByIP(ip) != nil {
			return false // the last build assigned it to another
		}
	}
	e.added = append(e.added, p)
	return true
}

// merged returns pods (sorted, as a snapshot's) with the edits made, in
// order and numbered: pods whose ID changes are copies.
func (e *podEdits) merged(pods []*Pod) []*Pod {
	out := make([]*Pod, 0, len(pods)+len(e.added))
	put := func(p *Pod) {
		if p.ID != int32(len(out)) {
			copied := *p
			copied.ID = int32(len(out))
			p = &copied
		}
		out = append(out, p)
	}
	a := 0
	for _, p := range pods {
		for a < len(e.added) && e.added[a].Before(p) {
			put(e.added[a])
			a++
		}
		key := p.Key()
		switch {
		case e.deleted[key]:
		case e.replaced[key] != nil:
			put(e.replaced[key])
		default:
			put(p)
		}
	}
	for ; a < len(e.added); a++ {
		put(e.added[a])
	}
	return out
}

// sameSlice reports whether a and b are the same slice, not only equal ones.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// replacement returns the pod that the Pod object o makes in place of the
// one that old made, when nothing but its labels and ports changed and
// neither version has findings.
func (b *Builder) replacement(o source.Object, old any) (*Pod, bool) {
	now, ok := typedPod(o.Value)
	was, ok2 := typedPod(old)
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
	scratch := &builder{opts: b.Options, c: &Cluster{namespaces: b.last.namespaces, labelSets: b.last.labelSets}, seen: map[declared]diag.Origin{}}
	scratch.addPod(o, now.Labels, now.Namespace, now.Name, &now.Spec, &now.Status, podOwner(now))
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
