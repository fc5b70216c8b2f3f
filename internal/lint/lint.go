// Package lint finds mistakes in a set of policies read together with the
// cluster state they apply to: rules that can never take effect, policies
// whose order is undefined for real traffic, selectors and named ports that
// match nothing, pods cut off from everything (or from DNS), and fields of the
// KEP-2091 draft API that current clusters reject.
//
// It sits beside the engine's other front ends (explain, matrix): it imports
// engine, exposure, policy, state, source and diag, and nothing imports it
// but cli.
// Findings are asked of the engine, not guessed from selectors: a rule is
// "overridden" when the engine's trace says an admin rule decided every flow
// the rule matches, among the pods of the given state. To stay fast it asks
// about one pair of pods per cell (cells.go: pairs of behaviour classes that
// the question's rules cannot tell apart) and one port per range of ports
// that no policy or container port splits, then counts the pod pairs each
// answer stands for; the examples are the ones pair-by-pair asking would
// find first.
//
// Flows are between pods of the given state; addresses outside the cluster
// and nodes are not enumerated, so an ipBlock or networks rule is judged
// only by the pods whose addresses it covers.
//
// # Codes
//
// Codes are stable: CI configurations and SARIF viewers key on them.
//
//	code                          severity          finding
//	admin-priority-overlap        error, info       admin policies of equal priority match the same flow: error when
//	                                                their actions differ (the verdict depends on the implementation's
//	                                                order), info when they agree on every shared flow
//	admin-overrides-networkpolicy warning, info     an admin rule (Allow or Deny, not Pass) decides every flow (warning)
//	                                                or some flows (info) a NetworkPolicy rule matches
//	rule-shadowed                 warning, info     earlier rules of the same policy match all traffic of a rule: an admin
//	                                                rule with another action that never fires (warning), or a redundant
//	                                                rule (info)
//	selects-nothing               warning           a subject or peer selects no pod (no namespace, no node) in the state
//	named-port-undeclared         warning           no destination pod of a rule declares its named port
//	isolated-allows-nothing       warning, info     NetworkPolicies isolate pods and allow nothing in that direction:
//	                                                rules that match nothing (warning), or a deliberate deny-all (info)
//	dns-blocked                   warning           pods cannot reach cluster DNS (53/udp to k8s-app=kube-dns pods)
//	kep-field                     warning           a field of the KEP-2091 / v0.1.1 shape that network-policy-api
//	                                                v0.1.3 and later CRDs do not accept
//	unknown-field                 error             a policy has a field its API does not: kubectl refuses it,
//	                                                and read without it a rule matches other traffic than written
//	service-port-not-target       warning           a NetworkPolicy port is a Service's port, but the Service translates
//	                                                to another target port that the rule does not allow (policy applies
//	                                                after the translation)
//	service-target-port-undeclared warning          no pod a Service selects declares its named targetPort: the port has
//	                                                no backends
//	service-unreachable-from-users warning          the pods whose egress NetworkPolicies select a Service's backends
//	                                                (its users, as the input says) reach none of them on a target port
//	ipblock-cluster-ip            warning           an egress ipBlock or networks peer covers a Service's cluster IP, which
//	                                                policy never sees (it sees the backends' pod addresses)
//	domain-names-not-enforced     warning           a domainNames peer in an input without the Service kube-system/
//	                                                kube-dns: the agent learns names' addresses from the cluster
//	                                                DNS's answers and finds no server to learn from (--dns-server)
//	domain-names-not-allow        error             a domainNames peer in a Deny or Pass rule: the API supports them
//	                                                only in Allow (Accept) rules; the peer matches nothing
//	domain-names-cluster-local    warning           a domainNames entry in the cluster's domain: Service names resolve
//	                                                to cluster IPs, which policy never sees
//	exposed-to-all                warning, info     a rule opens workloads' ingress to every source or every address
//	                                                (0.0.0.0/0, ::/0: warning) or to every namespace's pods (info),
//	                                                with nothing before it that could take part back
//	input                         warning           a warning of reading the input (decoder, state, normalisation)
//	no-pods                       info              the input has no pods: the checks that need pods were skipped
package lint

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
)

// Severity orders findings; the zero value is not a severity.
type Severity uint8

const (
	Info Severity = iota + 1
	Warning
	Error
)

func (s Severity) String() string {
	switch s {
	case Info:
		return "info"
	case Warning:
		return "warning"
	case Error:
		return "error"
	}
	return fmt.Sprintf("Severity(%d)", uint8(s))
}

// MarshalText writes the severity as its word, in JSON too.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// ParseSeverity reads "info", "warning" or "error".
func ParseSeverity(s string) (Severity, error) {
	for _, sev := range []Severity{Info, Warning, Error} {
		if s == sev.String() {
			return sev, nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q (want error, warning or info)", s)
}

// The codes of findings; the package documentation describes each.
const (
	CodePriorityOverlap    = "admin-priority-overlap"
	CodeAdminOverridesNP   = "admin-overrides-networkpolicy"
	CodeRuleShadowed       = "rule-shadowed"
	CodeSelectsNothing     = "selects-nothing"
	CodeNamedPort          = "named-port-undeclared"
	CodeIsolatedNoAllow    = "isolated-allows-nothing"
	CodeDNSBlocked         = "dns-blocked"
	CodeKEPField           = "kep-field"
	CodeUnknownField       = "unknown-field"
	CodeServicePort        = "service-port-not-target"
	CodeServiceTarget      = "service-target-port-undeclared"
	CodeClusterIPBlock     = "ipblock-cluster-ip"
	CodeServiceUnreachable = "service-unreachable-from-users"
	CodeDomainNames        = "domain-names-not-enforced"
	CodeDomainNamesAction  = "domain-names-not-allow"
	CodeDomainNamesCluster = "domain-names-cluster-local"
	CodeInput              = "input"
	CodeNoPods             = "no-pods"
	CodeExposed            = "exposed-to-all"
)

// Rule describes a code for whatever lists them: lint --help, SARIF's
// rules. Every code is here (TestLintHelpListsEveryCode and
// TestLintSARIFRulesAreTheCodes hold the two lists to it).
type Rule struct {
	Code, Summary, Help string
}

// Rules lists every code, in the order of the package documentation.
var Rules = []Rule{
	{CodePriorityOverlap, "Admin policies of equal priority match the same traffic",
		"The API leaves the order of equal-priority admin policies undefined. Give one of them another priority."},
	{CodeAdminOverridesNP, "A NetworkPolicy rule is overridden by an admin rule",
		"Admin rules (Allow, Deny) decide before NetworkPolicies; only Pass hands traffic to them. Ask the cluster admin, or drop the rule."},
	{CodeRuleShadowed, "Earlier rules of the same policy match all traffic of this rule",
		"Rules of an admin policy apply in order: move the rule up or narrow the earlier ones. NetworkPolicy rules are a union: drop the redundant rule."},
	{CodeSelectsNothing, "A selector selects nothing in the given state",
		"Check the labels against the pods and namespaces (kubectl get pods --show-labels)."},
	{CodeNamedPort, "No destination pod declares the named port",
		"Named ports resolve against the destination pod's containers[].ports[].name; use the declared name or a number."},
	{CodeIsolatedNoAllow, "Pods are isolated and nothing is allowed",
		"A NetworkPolicy that selects a pod denies everything its rules do not allow; add a rule or remove the policy type."},
	{CodeDNSBlocked, "Pods cannot reach cluster DNS",
		"Allow egress to the kube-dns pods on 53/udp and 53/tcp."},
	{CodeKEPField, "A KEP-2091 / v0.1.1 field current clusters reject",
		"Rewrite the peer in the released shape (namespaces is a label selector; pods has namespaceSelector and podSelector)."},
	{CodeUnknownField, "A policy has a field its API does not",
		"Fix the spelling: kubectl explain with the kind and field path lists the fields (kubectl explain networkpolicy.spec.ingress)."},
	{CodeServicePort, "A policy allows a Service's port where the backends listen on another",
		"Policy applies after the Service translation: allow the target port (or its name), not the port clients dial."},
	{CodeServiceTarget, "No selected pod declares the Service's named targetPort",
		"The endpoint controller leaves out pods that do not declare the name: name the container port, or use a number."},
	{CodeServiceUnreachable, "The pods whose egress policies point at a Service cannot reach any backend",
		"Egress rules that select a Service's backends say who uses it; let the backends admit those pods on the target ports."},
	{CodeClusterIPBlock, "An egress ipBlock covers a Service's cluster IP",
		"Policy sees the backends' pod addresses, never the cluster IP: select the backends with pod and namespace selectors."},
	{CodeDomainNames, "A domainNames peer the agent cannot resolve: the input has no cluster DNS Service",
		"The agent learns the names' addresses from the cluster DNS's answers: give the agents --dns-server with the cluster DNS Service's addresses, or lint an input that holds kube-system/kube-dns."},
	{CodeDomainNamesAction, "A domainNames peer in a Deny or Pass rule",
		"The API supports domainNames only in Allow (Accept) rules: allow the names above a lower-priority Deny; deny addresses with networks."},
	{CodeDomainNamesCluster, "A domainNames entry in the cluster's own domain",
		"Service names resolve to cluster IPs, which policy never sees: select the backends with pods or namespaces peers."},
	{CodeExposed, "A rule opens a workload's ingress to every source",
		"0.0.0.0/0 or ::/0 is a warning, every namespace's pods a note: narrow the peers to the clients that need the workload."},
	{CodeInput, "A warning about the input", "See the message."},
	{CodeNoPods, "No pods in the input", "Add the namespaces and workloads (or pods) the policies apply to, or lint a live cluster."},
}

// Place is a field of an object.
type Place struct {
	Object policy.Ref `json:"object"`
	Field  string     `json:"field,omitempty"`
}

func (p Place) String() string {
	if p.Field == "" {
		return p.Object.String()
	}
	return p.Object.String() + " " + p.Field
}

// Flow is an example connection from the given state.
type Flow struct {
	From     string `json:"from"`
	To       string `json:"to"`
	Port     int    `json:"port"`
	Protocol string `json:"protocol"`
}

func (f Flow) String() string {
	return fmt.Sprintf("%s -> %s on %s", f.From, f.To, l4.Port{Proto: protoOf(f.Protocol), Num: uint16(f.Port)})
}

func protoOf(s string) l4.Protocol {
	p, _ := l4.ParseProtocol(s)
	return p
}

func exampleOf(f engine.Flow) *Flow {
	return &Flow{From: f.Src.String(), To: f.Dst.String(), Port: int(f.Port.Num), Protocol: f.Port.Proto.String()}
}

// Finding is one problem, at one field of one object.
type Finding struct {
	Severity Severity    `json:"severity"`
	Code     string      `json:"code"`
	Object   policy.Ref  `json:"object"`
	Origin   diag.Origin `json:"-"`
	Field    string      `json:"field,omitempty"`
	Message  string      `json:"message"`
	Hint     string      `json:"hint,omitempty"`
	Example  *Flow       `json:"example,omitempty"`
	// Related are the other objects involved: the admin rule that
	// overrides, the policy of equal priority, the earlier rule.
	Related []Place `json:"related,omitempty"`
}

// Worst returns the highest severity of findings, 0 when there are none.
func Worst(findings []Finding) Severity {
	var w Severity
	for _, f := range findings {
		w = max(w, f.Severity)
	}
	return w
}

// Options tune a lint run.
type Options struct {
	// Lenient leaves the unknown fields of policies to the input
	// warnings, as --lenient does in every other command.
	Lenient bool
}

// Run lints the engine's policies against its cluster. loaded are the
// findings of reading the input; its warnings become findings of code
// "input", except the engine's own equal-priority warnings, which
// admin-priority-overlap replaces with a sharper test, and the decoder's
// warnings about the unknown fields that unknown-field reports.
//
// Run expects the input read with source.Options.Lenient, so that an admin
// policy with an unknown field is there to be linted, and reports the
// field as an error itself (unless opts.Lenient).
func Run(e *engine.Engine, loaded diag.List, opts Options) []Finding {
	return newLinter(e).run(loaded, opts)
}

func (l *linter) run(loaded diag.List, opts Options) []Finding {
	var reported map[Place]bool
	if !opts.Lenient {
		reported = l.unknownFields()
	}
	l.input(loaded, reported)
	l.kepFields()
	l.serviceTargets()
	l.clusterIPBlocks()
	l.domainNames()
	if len(l.space.classes) == 0 {
		l.add(Finding{Severity: Info, Code: CodeNoPods, Object: inputRef,
			Message: "the input has no pods: overlaps, overrides, shadowed rules, selectors, named ports and isolation were not checked",
			Hint:    "add the namespaces and workloads the policies apply to (-f cluster/ -f policies/), or lint a live cluster"})
	} else {
		l.priorityOverlaps()
		l.overrides()
		l.shadowed()
		l.selectors()
		l.namedPorts()
		l.servicePorts()
		l.unreachableServices()
		l.isolation()
		l.exposed()
	}
	sortFindings(l.out)
	return l.out
}

// input turns the loading warnings into findings, but for those about the
// places another finding reports.
func (l *linter) input(loaded diag.List, reported map[Place]bool) {
	replaced := map[diag.Diagnostic]bool{}
	for _, d := range l.e.PriorityOverlaps() {
		replaced[d] = true
	}
	for _, d := range loaded.Warnings() {
		obj := inputRef
		if d.Object != "" {
			obj = parseRef(d.Object)
		}
		if replaced[d] || reported[Place{Object: obj, Field: d.Field}] {
			continue
		}
		l.add(Finding{Severity: Warning, Code: CodeInput, Object: obj, Origin: d.Origin, Field: d.Field, Message: d.Message})
	}
}

// inputRef files the findings about the input as a whole (no pods, the
// finished pods left out), which no object owns.
var inputRef = policy.Ref{Kind: "Input"}

// unknownFields reports each field the lenient decoder dropped from a
// policy of a kind that refuses unknown fields, and returns the places.
func (l *linter) unknownFields() map[Place]bool {
	reported := map[Place]bool{}
	for _, o := range l.e.Cluster().Policies {
		if !source.RefusesUnknownFields(o.Kind) {
			continue
		}
		ref := parseRef(o.Ref())
		for _, f := range o.Unknown {
			l.add(Finding{Severity: Error, Code: CodeUnknownField, Object: ref, Origin: o.Origin, Field: f,
				Message: source.UnknownFieldRefused,
				Hint:    "fix the spelling: kubectl explain " + strings.ToLower(o.Kind) + ".spec lists the fields"})
			reported[Place{Object: ref, Field: f}] = true
		}
	}
	return reported
}

// parseRef reads back "Kind namespace/name" or "Kind name".
func parseRef(s string) policy.Ref {
	kind, name, _ := strings.Cut(s, " ")
	ns, n, ok := strings.Cut(name, "/")
	if !ok {
		return policy.Ref{Kind: kind, Name: name}
	}
	return policy.Ref{Kind: kind, Namespace: ns, Name: n}
}

func sortFindings(fs []Finding) {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(a.Object.Kind, b.Object.Kind),
			cmp.Compare(a.Object.Namespace, b.Object.Namespace),
			cmp.Compare(a.Object.Name, b.Object.Name),
			cmp.Compare(b.Severity, a.Severity),
			cmp.Compare(a.Field, b.Field),
			cmp.Compare(a.Code, b.Code),
		)
	})
}
