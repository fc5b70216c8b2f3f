// Package policy is the one tiered model (DESIGN.md): every policy API —
// NetworkPolicy, AdminNetworkPolicy and BaselineAdminNetworkPolicy in both
// published shapes, ClusterNetworkPolicy — validated and normalised into
// Policies of three tiers whose rules hold compiled selectors. Nothing below
// this package sees an API type. It imports source for the decoded objects and
// must not import state, engine or cli: matching against a cluster is the
// engine's job.
package policy

import (
	"net/netip"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/l4"
)

// Tier is a stage of evaluation, in order.
type Tier uint8

const (
	TierAdmin Tier = iota + 1
	TierNetworkPolicy
	TierBaseline
)

func (t Tier) String() string {
	switch t {
	case TierAdmin:
		return "Admin"
	case TierNetworkPolicy:
		return "NetworkPolicy"
	case TierBaseline:
		return "Baseline"
	}
	return "Tier(" + strconv.Itoa(int(t)) + ")"
}

// Action is what a matching rule does. NetworkPolicy rules always Allow.
type Action uint8

const (
	Allow Action = iota + 1
	Deny
	Pass
)

func (a Action) String() string {
	switch a {
	case Allow:
		return "Allow"
	case Deny:
		return "Deny"
	case Pass:
		return "Pass"
	}
	return "Action(" + strconv.Itoa(int(a)) + ")"
}

// Direction is the side of a connection a rule governs, relative to the
// policy's subject pod.
type Direction uint8

const (
	Ingress Direction = iota
	Egress
)

// Directions lists both, in evaluation order of a connection (the source's
// egress is checked before the destination's ingress).
var Directions = [...]Direction{Egress, Ingress}

func (d Direction) String() string {
	if d == Egress {
		return "egress"
	}
	return "ingress"
}

// Kinds of policy, as they appear in traces.
const (
	KindNetworkPolicy            = "NetworkPolicy"
	KindAdminNetworkPolicy       = "AdminNetworkPolicy"
	KindBaselineAdminPolicy      = "BaselineAdminNetworkPolicy"
	KindClusterNetworkPolicy     = "ClusterNetworkPolicy"
	KindLegacyNamespaceIsolation = "Namespace"
)

// IsAdminKind reports whether kind is one of the admin policy kinds,
// which fail closed when invalid rather than be left out (admin.go).
func IsAdminKind(kind string) bool {
	return kind == KindAdminNetworkPolicy || kind == KindBaselineAdminPolicy || kind == KindClusterNetworkPolicy
}

// Ref names a policy.
type Ref struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (r Ref) String() string {
	if r.Namespace != "" {
		return r.Kind + " " + r.Namespace + "/" + r.Name
	}
	return r.Kind + " " + r.Name
}

// Policy is one policy object of any API, normalised.
type Policy struct {
	Ref
	Origin   diag.Origin
	Tier     Tier
	Priority int32 // admin and baseline tiers; lower is evaluated first
	Subject  PodSelector
	Rules    [2][]*Rule // indexed by Direction
	// Isolates says, for the NetworkPolicy tier, which directions this
	// policy isolates its subject pods in (policyTypes after defaulting).
	Isolates [2]bool
	// Audit and Staged come from the netpol.io annotations (annotations.go).
	Audit  Audit
	Staged bool
	// Invalid: the object has errors, and this is its fail-closed form
	// (admin policies; see admin.go). A NetworkPolicy with errors is left
	// out instead.
	Invalid bool
}

// Rule is one ingress or egress rule.
type Rule struct {
	Policy *Policy
	Dir    Direction
	Index  int
	Name   string // admin rules may be named; NetworkPolicy rules never are
	Action Action

	AllPeers bool   // no peer restriction (NetworkPolicy without from/to)
	Peers    []Peer // OR
	AllPorts bool   // no port restriction
	Ports    []PortMatch

	// FailClosed marks an admin rule that is invalid, or has a peer with
	// no field netpol knows, or belongs to a policy whose subject or place
	// is invalid (see admin.go). An Allow rule then matches nothing; Deny
	// and Pass rules deny everything (a Pass of an invalid policy denies
	// what it matched), as the network-policy-api types demand.
	FailClosed bool
}

// Label is the rule's name, or its position ("ingress[2]") when unnamed.
func (r *Rule) Label() string {
	if r.Name != "" {
		return r.Name
	}
	return r.Dir.String() + "[" + strconv.Itoa(r.Index) + "]"
}

// PeerKind says which field of Peer is set.
type PeerKind uint8

const (
	PeerPods    PeerKind = iota + 1 // pods by namespace and pod labels
	PeerIPBlock                     // CIDR minus exceptions; matches pod IPs too
	PeerNodes                       // node addresses by node labels
	PeerDomains                     // DNS names; only matches destinations named by domain
)

// Peer is the other end of a connection, as a rule describes it.
type Peer struct {
	Kind PeerKind
	// Index is the peer's position in the rule's from/to list, for messages
	// (one admin networks peer becomes several Peers with one Index).
	Index   int
	Pods    PodSelector
	Block   IPBlock
	Nodes   Selector
	Domains []DomainPattern // see domains.go
}

// IPBlock is a CIDR without its exceptions.
type IPBlock struct {
	CIDR   netip.Prefix
	Except []netip.Prefix
}

// Contains reports whether ip is in the block.
func (b IPBlock) Contains(ip netip.Addr) bool {
	if !b.CIDR.Contains(ip) {
		return false
	}
	for _, e := range b.Except {
		if e.Contains(ip) {
			return false
		}
	}
	return true
}

func (b IPBlock) String() string {
	s := b.CIDR.String()
	for i, e := range b.Except {
		if i == 0 {
			s += " except "
		} else {
			s += ","
		}
		s += e.String()
	}
	return s
}

// NamespaceMatch says how a PodSelector picks namespaces.
type NamespaceMatch uint8

const (
	// NamespaceLabels: namespaces whose labels match Selector.
	NamespaceLabels NamespaceMatch = iota + 1
	// NamespaceName: the one namespace Name (a NetworkPolicy's own).
	NamespaceName
	// NamespaceSelf: the subject pod's namespace (KEP-2091 related: Self).
	NamespaceSelf
	// NamespaceNotSelf: every namespace but the subject pod's.
	NamespaceNotSelf
	// NamespaceSameLabels: namespaces that have every key of Keys with the
	// same value as the subject pod's namespace (which must have them all).
	NamespaceSameLabels
	// NamespaceNotSameLabels: namespaces that differ from the subject pod's
	// namespace in the value (or presence) of at least one key of Keys.
	NamespaceNotSameLabels
)

// NamespaceSelector picks namespaces, possibly relative to the subject pod.
type NamespaceSelector struct {
	Match    NamespaceMatch
	Selector Selector // NamespaceLabels
	Name     string   // NamespaceName
	Keys     []string // NamespaceSameLabels, NamespaceNotSameLabels
}

// Relative reports whether the selection depends on the subject pod.
func (n NamespaceSelector) Relative() bool {
	return n.Match >= NamespaceSelf
}

// Matches reports whether ns (with labels nsLabels) is selected, for a subject
// pod whose namespace is subjectNS with labels subjectLabels.
func (n NamespaceSelector) Matches(ns string, nsLabels labels.Set, subjectNS string, subjectLabels labels.Set) bool {
	switch n.Match {
	case NamespaceLabels:
		return n.Selector.Matches(nsLabels)
	case NamespaceName:
		return ns == n.Name
	case NamespaceSelf:
		return ns == subjectNS
	case NamespaceNotSelf:
		return ns != subjectNS
	case NamespaceSameLabels:
		for _, k := range n.Keys {
			sv, ok := subjectLabels[k]
			if !ok {
				return false
			}
			if v, ok := nsLabels[k]; !ok || v != sv {
				return false
			}
		}
		return true
	case NamespaceNotSameLabels:
		for _, k := range n.Keys {
			sv, sok := subjectLabels[k]
			v, ok := nsLabels[k]
			if sok != ok || sv != v {
				return true
			}
		}
		return false
	}
	return false
}

// PodSelector picks pods by namespace and by pod labels (an AND).
type PodSelector struct {
	Namespaces NamespaceSelector
	Pods       Selector
}

// Selector is a label selector compiled once, with its canonical text, which
// the engine uses to share work between equal selectors.
type Selector struct {
	labels.Selector
	Text string
}

// Everything selects all objects.
var Everything = Selector{Selector: labels.Everything(), Text: ""}

// PortMatch is one port clause: a range of numbers of one protocol, or a
// container port name resolved against the destination pod.
type PortMatch struct {
	Range      l4.Range
	Named      string
	NamedProto l4.Protocol // 0: the named port may be of any protocol
}

func (p PortMatch) String() string {
	if p.Named != "" {
		if p.NamedProto != 0 {
			return p.Named + "/" + strings.ToLower(p.NamedProto.String())
		}
		return p.Named
	}
	return p.Range.String()
}
