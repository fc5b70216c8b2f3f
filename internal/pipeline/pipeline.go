// Package pipeline runs decoded objects through the layers of DESIGN.md's
// data flow — state, policy, engine — in one call, so that every front end
// (the CLI, scenarios, the agent) builds its engine the same way. It imports
// those layers and is imported only by front ends.
package pipeline

import (
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

// Options of the layers below the decoder.
type Options struct {
	ReplicaCap               int // 0: state.DefaultReplicaCap
	LegacyNamespaceIsolation bool
	// Observed: the objects come from an API server (state.Options.Observed).
	Observed bool
	// Node, when set, builds an engine for programming that node only:
	// the NetworkPolicies of namespaces where no pod of the node runs are
	// left out (a NetworkPolicy selects pods of its own namespace only, so
	// they could not change a table of the node), and with them their
	// cost: on a node of the 150k-pod cluster, all but a few hundred of
	// 75,000. Their findings are the business of the nodes that run their
	// pods. Admin policies select across namespaces and all stay.
	Node string
	// SkipInvalid builds the engine without the objects that have errors
	// instead of failing, and reports their errors as findings: an agent
	// watching a cluster keeps enforcing every valid policy while one is
	// invalid (it reports the invalid ones on their status). An invalid
	// admin policy is not left out, which would lift its denies: it is
	// enforced in its fail-closed form (policy.Policy.Invalid), and one
	// that cannot be read at all refuses the whole input.
	SkipInvalid bool
	// Lazy builds the first engine with engine.NewLazy, for a front end
	// that decides a few flows (explain): it does not pay to resolve
	// every selector. Findings and verdicts are the same.
	Lazy bool
}

// Build returns the engine over objects with every finding of the way:
// decode findings (passed in), cluster and policy validation, and the
// equal-priority warnings. When the findings hold an error the engine is nil
// and err is the diag.InputError.
//
// With opts.SkipInvalid the objects that errors name are left out and the
// build repeated, but for admin policies: one whose errors normalisation
// answered by failing closed stays, in that form, and an error about any
// other (one the decoder could not read, or declared twice) refuses the
// input as a whole, as does an error that names no object: what leaving
// it out would open is unknown. err is then non-nil only for those.
func Build(objects []source.Object, decoded diag.List, opts Options) (*engine.Engine, diag.List, error) {
	return (&Builder{Options: opts, once: true}).Build(objects, decoded)
}

// Builder builds engine after engine over objects that change a little at a
// time (the agent's input), redoing only what the changed objects touch: the
// snapshot replaces the pods that changed (state.Builder), the policies of
// unchanged objects stay normalised (policy.Memo), and the engine resolves
// selectors only for changed pods and new policies (engine.Engine.Update).
// Not safe for concurrent use.
type Builder struct {
	Options
	state state.Builder
	memo  policy.Memo
	last  *engine.Engine // the last engine built
	// once: the Builder serves one call of the package's Build, so the
	// snapshot is built without state.Builder, which would keep every
	// decoded object (100k Pod objects: 250 MB) alive for a next build
	// that never comes.
	once bool
}

// Build is the package's Build with the Builder's options.
func (b *Builder) Build(objects []source.Object, decoded diag.List) (*engine.Engine, diag.List, error) {
	opts := b.Options
	if !opts.SkipInvalid {
		e, diags, errs := b.build(objects, decoded)
		return e, diags, errs.Err()
	}
	findings := append(diag.List(nil), decoded...)
	if err := refusesInput(decoded.Errors()); err != nil {
		return nil, findings, err
	}
	skip := map[string]bool{}
	addInvalid(skip, findings)
	for {
		e, diags, left := b.build(without(objects, skip), nil)
		if len(left) == 0 {
			return e, append(findings, diags...), nil
		}
		findings = append(findings, left...)
		if err := refusesInput(left); err != nil {
			return nil, findings, err
		}
		if !addInvalid(skip, left) {
			return nil, findings, left.Err() // an error that no object owns
		}
	}
}

// refusesInput returns an error when errs hold one that no object owns,
// or one about an admin policy: leaving either out could open flows that
// it denies. The input is then refused whole (an agent keeps the rules it
// has).
func refusesInput(errs diag.List) error {
	for _, d := range errs {
		if d.Object == "" || policy.IsAdminKind(d.ObjectKind()) {
			return errs.Err()
		}
	}
	return nil
}

// addInvalid adds the objects the errors of l name to skip and reports
// whether there were new ones.
func addInvalid(skip map[string]bool, l diag.List) bool {
	grew := false
	for _, d := range l.Errors() {
		if d.Object != "" && !skip[d.Object] {
			skip[d.Object], grew = true, true
		}
	}
	return grew
}

func without(objects []source.Object, skip map[string]bool) []source.Object {
	if len(skip) == 0 {
		return objects
	}
	kept := make([]source.Object, 0, len(objects))
	for _, o := range objects {
		if !skip[o.Ref()] {
			kept = append(kept, o)
		}
	}
	return kept
}

// build builds the engine over objects. It returns the findings, and the
// errors among them that the policies do not answer by failing closed
// (with SkipInvalid; all of them without): the engine is nil when there
// are any.
func (b *Builder) build(objects []source.Object, decoded diag.List) (*engine.Engine, diag.List, diag.List) {
	opts := b.Options
	diags := append(diag.List(nil), decoded...)
	var cluster *state.Cluster
	var more diag.List
	if b.once {
		cluster, more = state.Build(objects, state.Options{ReplicaCap: opts.ReplicaCap, Observed: opts.Observed})
	} else {
		b.state.Options = state.Options{ReplicaCap: opts.ReplicaCap, Observed: opts.Observed}
		cluster, more = b.state.Build(objects)
	}
	diags = append(diags, more...)
	policies := cluster.Policies
	if opts.Node != "" {
		policies = nodePolicies(cluster, opts.Node)
	}
	set, more := b.memo.Normalize(policies)
	diags = append(diags, more...)
	left := diags.Errors()
	if opts.SkipInvalid {
		left = unanswered(left, set)
	}
	if len(left) > 0 {
		return nil, diags, left
	}
	var e *engine.Engine
	eopts := engine.Options{LegacyNamespaceIsolation: opts.LegacyNamespaceIsolation}
	switch {
	case b.last != nil:
		e = b.last.Update(cluster, set)
	case opts.Lazy:
		e = engine.NewLazy(cluster, set, eopts)
	default:
		e = engine.New(cluster, set, eopts)
	}
	b.last = e
	return e, append(diags, e.PriorityOverlaps()...), nil
}

// unanswered returns the errors of errs that are not about a policy of set
// enforced in its fail-closed form.
func unanswered(errs diag.List, set *policy.Set) diag.List {
	failed := map[string]bool{}
	for _, p := range set.Policies() {
		if p.Invalid {
			failed[p.Ref.String()] = true
		}
	}
	if len(failed) == 0 {
		return errs
	}
	var out diag.List
	for _, d := range errs {
		if !failed[d.Object] {
			out = append(out, d)
		}
	}
	return out
}

// nodePolicies returns the policy objects of cluster that can change the
// tables of node's pods (Options.Node): all but the NetworkPolicies of
// namespaces without a pod there. It follows the pods as the snapshot
// places them (made-up placements included, for manifests).
func nodePolicies(cluster *state.Cluster, node string) []source.Object {
	local := map[string]bool{}
	for _, p := range cluster.Pods {
		if p.Node == node && !p.HostNetwork {
			local[p.Namespace.Name] = true
		}
	}
	kept := make([]source.Object, 0, len(local)*4)
	for _, o := range cluster.Policies {
		if _, ok := o.Value.(*networkingv1.NetworkPolicy); ok && !local[state.NamespaceOf(o.Namespace)] {
			continue
		}
		kept = append(kept, o)
	}
	return kept
}
