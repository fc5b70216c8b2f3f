// Package status reports on the API server what a node agent did with the
// admin policies (AdminNetworkPolicy, BaselineAdminNetworkPolicy,
// ClusterNetworkPolicy): conditions on their status, and Events for the
// invalid ones. It is the agent's only writer to the cluster. It imports
// source/kube for the policies' identities and knows nothing of the layers
// below the sources; the agent calls it through its Reporter interface.
//
// Every node runs an agent, so every condition has many writers. Each agent
// applies its conditions with server-side apply under its own field manager
// ("netpol-agent/<node>"): conditions that all agents agree on (Accepted,
// Programmed) are co-owned and written identically, and the one condition
// that belongs to a node, netpol.io/NotProgrammed.<node>, exists only while
// that node fails and disappears when its agent stops applying it. The
// status therefore grows with the number of failing nodes, not with the
// size of the cluster.
package status

import (
	"context"
	"errors"
	"fmt"
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

	applied map[types.UID]string // what was last applied per policy
}

// Report brings the conditions of every admin policy in line with one pass
// of the agent: findings are the pass's findings (an error names the object
// it makes invalid) and programErr why the node could not program the
// input, or nil. Policies whose conditions are unchanged cost no request.
func (w *Writer) Report(ctx context.Context, findings diag.List, programErr error) error {
	if w.applied == nil {
		w.applied = map[types.UID]string{}
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
	for _, p := range w.Policies() {
		seen[p.UID] = true
		problems := invalid[p.Ref()]
		conds := w.conditions(p, problems, programErr)
		key := fingerprint(p.Generation, conds)
		if w.applied[p.UID] == key {
			continue
		}
		if err := w.apply(ctx, p, conds); err != nil {
			failed = append(failed, fmt.Errorf("status of %s: %w", p.Ref(), err))
			continue
		}
		w.applied[p.UID] = key
		if len(problems) > 0 && w.Recorder != nil && !alreadyRejected(p, conds[0].Message) {
			w.Recorder.Event(reference(p), corev1.EventTypeWarning, EventInvalid, conds[0].Message)
		}
	}
	for uid := range w.applied {
		if !seen[uid] {
			delete(w.applied, uid) // deleted policies
		}
	}
	return errors.Join(failed...)
}

// conditions returns what this node asserts about p, Accepted first.
func (w *Writer) conditions(p kube.AdminPolicy, problems []string, programErr error) []metav1.Condition {
	var out []metav1.Condition
	if len(problems) > 0 {
		// An invalid admin policy is not left out, which would lift its
		// denies: the agents enforce it failed closed.
		msg := truncate("netpol enforces this policy failed closed, not as written (an invalid rule denies all traffic, an invalid Allow rule matches nothing): " +
			strings.Join(problems, "; "))
		out = append(out,
			metav1.Condition{Type: Accepted, Status: metav1.ConditionFalse, Reason: ReasonInvalid, Message: msg},
			metav1.Condition{Type: Programmed, Status: metav1.ConditionFalse, Reason: ReasonFailedClosed,
				Message: "not programmed as written: the policy is invalid, and the nodes enforce its fail-closed form"})
	} else {
		out = append(out, metav1.Condition{Type: Accepted, Status: metav1.ConditionTrue, Reason: ReasonValid,
			Message: "the policy is valid"})
		if programErr == nil {
			out = append(out, metav1.Condition{Type: Programmed, Status: metav1.ConditionTrue, Reason: ReasonProgrammed,
				Message: "programmed by the netpol agents; a node that failed has a " + NotProgrammedPrefix + "<node> condition"})
		} else {
			out = append(out, metav1.Condition{Type: NotProgrammedPrefix + w.Node, Status: metav1.ConditionTrue,
				Reason: ReasonProgrammingFailed, Message: truncate(programErr.Error())})
		}
	}
	now := metav1.NewTime(w.now())
	for i := range out {
		out[i].ObservedGeneration = p.Generation
		out[i].LastTransitionTime = now
		// A condition whose status holds keeps the time it took it.
		for _, have := range p.Conditions {
			if have.Type == out[i].Type && have.Status == out[i].Status {
				out[i].LastTransitionTime = have.LastTransitionTime
			}
		}
	}
	return out
}

func (w *Writer) apply(ctx context.Context, p kube.AdminPolicy, conds []metav1.Condition) error {
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
		metav1.ApplyOptions{FieldManager: FieldManager(w.Node), Force: true})
	return err
}

// FieldManager is the server-side apply field manager of a node's agent.
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
