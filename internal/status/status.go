// Package status reports on the API server what a node agent did with the
// admin policies (AdminNetworkPolicy, BaselineAdminNetworkPolicy,
// ClusterNetworkPolicy): conditions on their status, and Events for the
// invalid ones. It is the agent's only writer to the cluster. It imports
// source/kube for the policies' identities and knows nothing of the layers
// below the sources; the agent calls it through its Reporter interface.
//
// Every node runs an agent, so every condition has many writers. The
// conditions all agents agree on (Accepted, Programmed) are applied with
// server-side apply under one shared field manager ("netpol-agent"), by
// the first agent that finds them missing: a policy is written once per
// change, not once per node, and its managedFields hold one entry for the
// fleet. The one condition that belongs to a node,
// netpol.io/NotProgrammed.<node>, is applied under that node's own field
// manager ("netpol-agent/<node>") only while the node fails, and released
// when it recovers. The status therefore grows with the number of failing
// nodes, not with the size of the cluster.
package status

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/source/kube"
)

// Condition types and reasons.
const (
	Accepted   = "Accepted"
	Programmed = "Programmed"
	// NotProgrammedPrefix + node name: the node could not program the policy.
	NotProgrammedPrefix = "netpol.io/NotProgrammed."

	ReasonValid             = "Valid"
	ReasonInvalid           = "Invalid"
	ReasonProgrammed        = "Programmed"
	ReasonProgrammingFailed = "ProgrammingFailed"
	// ReasonFailedClosed: the policy is invalid and the nodes enforce its
	// fail-closed form, not what it says (see Writer.Report).
	ReasonFailedClosed = "FailedClosed"

	// EventInvalid is the reason of the Warning Event for an invalid policy.
	EventInvalid = "InvalidPolicy"
)

// maxMessage is the CRDs' limit on a condition message.
const maxMessage = 32768

// Writer writes the conditions of one node's agent.
type Writer struct {
	Node     string
	Client   dynamic.Interface
	Recorder record.EventRecorder // nil: no Events
	// Policies lists the admin policies as the API server holds them now.
	Policies func() []kube.AdminPolicy
	Now      func() time.Time // nil: time.Now

	applied map[applyKey]string // what was last applied, per policy and field manager
}

// Report brings the conditions of every admin policy in line with one pass
// of the agent: findings are the pass's findings (an error names the object
// it makes invalid) and programErr why the node could not program the
// input, or nil.
//
// What every node asserts alike (Accepted, Programmed) is applied under
// SharedFieldManager, and only when the policy does not say it already:
// the first node to report writes it, the others find it written. Were
// each node its own writer, each write would send the policy, with one
// managedFields entry per node, to every node's watch: N² copies of an
// object growing with N. The time of a transition is the minute it falls
// in, so that nodes racing to report it apply the same object, which the
// API server does not write again. A node's own condition (it failed) is
// applied under its own field manager, and released when it recovers.
// Policies whose conditions are unchanged cost no request.
func (w *Writer) Report(ctx context.Context, findings diag.List, programErr error) error {
	if w.applied == nil {
		w.applied = map[applyKey]string{}
	}
	invalid := map[string][]string{}
	for _, d := range findings.Errors() {
		msg := d.Message
		if d.Field != "" {
			msg = d.Field + ": " + msg
		}
		invalid[d.Object] = append(invalid[d.Object], msg)
	}
	var failed []error
	seen := map[types.UID]bool{}
	own := FieldManager(w.Node)
	policies := w.Policies()
	for _, i := range walkOrder(w.Node, len(policies)) {
		p := policies[i]
		seen[p.UID] = true
		problems := invalid[p.Ref()]
		if programErr == nil {
			conds := w.shared(p, problems)
			if w.due(p, SharedFieldManager, conds) {
				// Another node may have written it since the walk
				// began: look again, as of now (the same generation:
				// findings are of the pass's input, not of a newer one).
				if now, ok := w.current(p.UID); ok && now.Generation == p.Generation {
					p, conds = now, w.shared(now, problems)
				}
			}
			if applied, err := w.ensure(ctx, p, SharedFieldManager, conds); err != nil {
				failed = append(failed, err)
			} else if applied && len(problems) > 0 && w.Recorder != nil && !alreadyRejected(p, conds[0].Message) {
				w.Recorder.Event(reference(p), corev1.EventTypeWarning, EventInvalid, conds[0].Message)
			}
		}
		var mine []metav1.Condition
		if programErr != nil {
			mine = w.stamp(p, []metav1.Condition{{Type: NotProgrammedPrefix + w.Node, Status: metav1.ConditionTrue,
				Reason: ReasonProgrammingFailed, Message: truncate(programErr.Error())}})
		}
		if mine == nil && w.applied[applyKey{p.UID, own}] == "" && !hasCondition(p, NotProgrammedPrefix+w.Node) {
			continue // nothing of this node's to write or to release
		}
		if _, err := w.ensure(ctx, p, own, mine); err != nil {
			failed = append(failed, err)
		}
	}
	for key := range w.applied {
		if !seen[key.uid] {
			delete(w.applied, key) // deleted policies
		}
	}
	return errors.Join(failed...)
}

// SharedFieldManager is the server-side apply field manager of the
// conditions all nodes' agents assert alike.
const SharedFieldManager = "netpol-agent"

// applyKey names what one field manager last applied to one policy.
type applyKey struct {
	uid     types.UID
	manager string
}

// walkOrder is the order in which a node walks n policies: a shuffle of
// its own (seeded with a hash of its name), so that nodes reporting at the
// same moment (a fleet starting, a policy changed) apply different
// policies and find most of the rest written by the others when they
// reach them; walking in one order, they would all apply every one.
func walkOrder(node string, n int) []int {
	h := fnv.New64a()
	h.Write([]byte(node))
	return rand.New(rand.NewPCG(h.Sum64(), 0)).Perm(n)
}

// current is the policy of uid as the watch holds it now.
func (w *Writer) current(uid types.UID) (kube.AdminPolicy, bool) {
	for _, p := range w.Policies() {
		if p.UID == uid {
			return p, true
		}
	}
	return kube.AdminPolicy{}, false
}

// due reports whether conds are to be applied to p under manager: this
// writer did not apply them last, and p does not have them already (the
// same type, status, reason, message and generation).
func (w *Writer) due(p kube.AdminPolicy, manager string, conds []metav1.Condition) bool {
	return w.applied[applyKey{p.UID, manager}] != fingerprint(p.Generation, conds) && (len(conds) == 0 || !holds(p, conds))
}

// ensure applies conds to p's status under manager when due, and reports
// whether it applied.
func (w *Writer) ensure(ctx context.Context, p kube.AdminPolicy, manager string, conds []metav1.Condition) (bool, error) {
	key := applyKey{p.UID, manager}
	fp := fingerprint(p.Generation, conds)
	if !w.due(p, manager, conds) {
		return false, nil
	}
	if err := w.apply(ctx, p, manager, conds); err != nil {
		return false, fmt.Errorf("status of %s: %w", p.Ref(), err)
	}
	w.applied[key] = fp
	if len(conds) == 0 {
		delete(w.applied, key) // released: nothing of this manager's left
	}
	return true, nil
}

// shared returns what every node asserts about p, Accepted first.
func (w *Writer) shared(p kube.AdminPolicy, problems []string) []metav1.Condition {
	if len(problems) > 0 {
		// An invalid admin policy is not left out, which would lift its
		// denies: the agents enforce it failed closed.
		msg := truncate("netpol enforces this policy failed closed, not as written (an invalid rule denies all traffic, an invalid Allow rule matches nothing): " +
			strings.Join(problems, "; "))
		return w.stamp(p, []metav1.Condition{
			{Type: Accepted, Status: metav1.ConditionFalse, Reason: ReasonInvalid, Message: msg},
			{Type: Programmed, Status: metav1.ConditionFalse, Reason: ReasonFailedClosed,
				Message: "not programmed as written: the policy is invalid, and the nodes enforce its fail-closed form"}})
	}
	return w.stamp(p, []metav1.Condition{
		{Type: Accepted, Status: metav1.ConditionTrue, Reason: ReasonValid, Message: "the policy is valid"},
		{Type: Programmed, Status: metav1.ConditionTrue, Reason: ReasonProgrammed,
			Message: "programmed by the netpol agents; a node that failed has a " + NotProgrammedPrefix + "<node> condition"}})
}

// stamp sets the generation the conditions observe and the time of their
// transition: the one p has for a condition whose status holds, else the
// minute of now (the same on every node reporting in it).
func (w *Writer) stamp(p kube.AdminPolicy, conds []metav1.Condition) []metav1.Condition {
	now := metav1.NewTime(w.now().UTC().Truncate(time.Minute))
	for i := range conds {
		conds[i].ObservedGeneration = p.Generation
		conds[i].LastTransitionTime = now
		for _, have := range p.Conditions {
			if have.Type == conds[i].Type && have.Status == conds[i].Status {
				conds[i].LastTransitionTime = have.LastTransitionTime
			}
		}
	}
	return conds
}

// holds reports whether p has each of conds already.
func holds(p kube.AdminPolicy, conds []metav1.Condition) bool {
	for _, c := range conds {
		if !slices.ContainsFunc(p.Conditions, func(have metav1.Condition) bool {
			return have.Type == c.Type && have.Status == c.Status && have.Reason == c.Reason && have.Message == c.Message &&
				have.ObservedGeneration == c.ObservedGeneration
		}) {
			return false
		}
	}
	return true
}

func hasCondition(p kube.AdminPolicy, typ string) bool {
	return slices.ContainsFunc(p.Conditions, func(c metav1.Condition) bool { return c.Type == typ })
}

// apply applies conds as the whole of manager's conditions on p: the
// conditions manager applied before and no other manager holds go.
func (w *Writer) apply(ctx context.Context, p kube.AdminPolicy, manager string, conds []metav1.Condition) error {
	list := make([]any, 0, len(conds))
	for i := range conds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
		if err != nil {
			return err
		}
		list = append(list, m)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": p.Resource.GroupVersion().String(),
		"kind":       p.Kind,
		"metadata":   map[string]any{"name": p.Name},
		"status":     map[string]any{"conditions": list},
	}}
	_, err := w.Client.Resource(p.Resource).ApplyStatus(ctx, p.Name, u,
		metav1.ApplyOptions{FieldManager: manager, Force: true})
	return err
}

// FieldManager is the server-side apply field manager of a node's own
// condition (netpol.io/NotProgrammed.<node>).
func FieldManager(node string) string { return "netpol-agent/" + node }

func (w *Writer) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// alreadyRejected reports whether p already says it is invalid for the same
// reason: then another node's agent has sent the Event.
func alreadyRejected(p kube.AdminPolicy, msg string) bool {
	for _, c := range p.Conditions {
		if c.Type == Accepted && c.Status == metav1.ConditionFalse && c.Message == msg {
			return true
		}
	}
	return false
}

func reference(p kube.AdminPolicy) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: p.Resource.GroupVersion().String(), Kind: p.Kind, Name: p.Name, UID: p.UID}
}

func fingerprint(generation int64, conds []metav1.Condition) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d", generation)
	for _, c := range conds {
		fmt.Fprintf(&b, "|%s=%s/%s/%s", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

func truncate(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return strings.ToValidUTF8(s[:maxMessage-3], "") + "..."
}
