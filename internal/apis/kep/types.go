// Package kep holds Go types for the AdminNetworkPolicy shape of KEP-2091 and
// network-policy-api v0.1.0–v0.1.2, which no module version we can pin still
// carries next to ClusterNetworkPolicy: peers select namespaces with
// namespaceSelector, sameLabels, notSameLabels or related (Self/NotSelf). The
// group/version is the same as the released v1alpha1 shape, so the decoder
// picks the shape by looking at the peers. Subjects and ports are identical in
// both shapes and reuse the released types.
package kep

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/network-policy-api/apis/v1alpha1"
)

// AdminNetworkPolicy in the KEP-2091 shape.
type AdminNetworkPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              AdminNetworkPolicySpec             `json:"spec"`
	Status            *v1alpha1.AdminNetworkPolicyStatus `json:"status,omitempty"`
}

type AdminNetworkPolicySpec struct {
	Priority int32                              `json:"priority"`
	Subject  v1alpha1.AdminNetworkPolicySubject `json:"subject"`
	Ingress  []Rule                             `json:"ingress,omitempty"`
	Egress   []Rule                             `json:"egress,omitempty"`
}

// BaselineAdminNetworkPolicy in the KEP-2091 shape.
type BaselineAdminNetworkPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              BaselineAdminNetworkPolicySpec             `json:"spec"`
	Status            *v1alpha1.BaselineAdminNetworkPolicyStatus `json:"status,omitempty"`
}

type BaselineAdminNetworkPolicySpec struct {
	Subject v1alpha1.AdminNetworkPolicySubject `json:"subject"`
	Ingress []Rule                             `json:"ingress,omitempty"`
	Egress  []Rule                             `json:"egress,omitempty"`
}

// Rule is an ingress (From) or egress (To) rule; the decoder checks that only
// the field of its direction is set.
type Rule struct {
	Name   string                             `json:"name,omitempty"`
	Action string                             `json:"action"`
	From   []Peer                             `json:"from,omitempty"`
	To     []Peer                             `json:"to,omitempty"`
	Ports  *[]v1alpha1.AdminNetworkPolicyPort `json:"ports,omitempty"`
}

// Peer selects pods by namespace, or by namespace and pod labels.
type Peer struct {
	Namespaces *NamespacedPeer `json:"namespaces,omitempty"`
	Pods       *NamespacedPod  `json:"pods,omitempty"`
}

// NamespaceRelation selects namespaces relative to the subject pod's own.
type NamespaceRelation string

const (
	Self    NamespaceRelation = "Self"
	NotSelf NamespaceRelation = "NotSelf"
)

// NamespacedPeer: exactly one field is set.
type NamespacedPeer struct {
	Related           *NamespaceRelation    `json:"related,omitempty"`
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	SameLabels        []string              `json:"sameLabels,omitempty"`
	NotSameLabels     []string              `json:"notSameLabels,omitempty"`
}

type NamespacedPod struct {
	Namespaces  NamespacedPeer       `json:"namespaces"`
	PodSelector metav1.LabelSelector `json:"podSelector"`
}
