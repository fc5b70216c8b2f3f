package policy

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations that any policy object (NetworkPolicy, AdminNetworkPolicy,
// BaselineAdminNetworkPolicy, ClusterNetworkPolicy) may carry. They change
// what the agent logs and enforces, never what a policy selects.
const (
	// AuditAnnotation asks the agent to log this policy's decisions, one
	// JSON line per new connection: "deny" (its Deny rules; for a
	// NetworkPolicy, the connections denied because it isolates the pod),
	// "allow" (its Allow rules), "all" or "true" (both). Pass is never
	// logged: it is not a verdict.
	AuditAnnotation = "netpol.io/audit"
	// StagedAnnotation "true" stages the policy: it is evaluated and its
	// decisions are logged as would-allow / would-deny, but not enforced.
	// `netpol explain --staged` and `netpol matrix --staged` show both
	// verdicts.
	StagedAnnotation = "netpol.io/staged"
)

// Audit is the set of decisions of a policy that the agent logs.
type Audit uint8

const (
	AuditAllow Audit = 1 << iota
	AuditDeny
	AuditAll = AuditAllow | AuditDeny
)

// Logs reports whether the decisions of action a are logged.
func (a Audit) Logs(action Action) bool {
	switch action {
	case Allow:
		return a&AuditAllow != 0
	case Deny:
		return a&AuditDeny != 0
	}
	return false
}

// annotations reads the netpol.io annotations into p. A value netpol does
// not know is a warning, and the annotation is ignored: a typo must not
// take the policy out of enforcement.
func (n *normalizer) annotations(p *Policy) {
	m, ok := n.obj.Value.(metav1.Object)
	if !ok {
		return
	}
	ann := m.GetAnnotations()
	field := func(key string) string { return "metadata.annotations[" + key + "]" }
	if v, ok := ann[AuditAnnotation]; ok {
		switch v {
		case "true", "all":
			p.Audit = AuditAll
		case "deny":
			p.Audit = AuditDeny
		case "allow":
			p.Audit = AuditAllow
		case "false", "none":
		default:
			n.r.Warnf(field(AuditAnnotation), "unsupported value %q: supported values: \"all\", \"true\", \"deny\", \"allow\", \"false\"; nothing of this policy is logged", v)
		}
	}
	if v, ok := ann[StagedAnnotation]; ok {
		switch v {
		case "true":
			p.Staged = true
		case "false":
		default:
			n.r.Warnf(field(StagedAnnotation), "unsupported value %q: supported values: \"true\", \"false\"; the policy is enforced", v)
		}
	}
}

// HasStaged reports whether some policy of the set is staged.
func (s *Set) HasStaged() bool {
	for _, p := range s.Policies() {
		if p.Staged {
			return true
		}
	}
	return false
}

// Enforced returns the set without its staged policies: s itself when none
// is staged.
func (s *Set) Enforced() *Set {
	if !s.HasStaged() {
		return s
	}
	keep := func(ps []*Policy) []*Policy {
		var out []*Policy
		for _, p := range ps {
			if !p.Staged {
				out = append(out, p)
			}
		}
		return out
	}
	return &Set{Admin: keep(s.Admin), NetworkPolicies: keep(s.NetworkPolicies), Baseline: keep(s.Baseline)}
}
