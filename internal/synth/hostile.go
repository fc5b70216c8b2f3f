package synth

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/source"
)

// The policies of a hostile tenant (issue 25, section E): small documents
// that any namespace may write and that cost a node the most to enforce.
// Each comes with the tenant's namespace and one pod on HostileNode that the
// policy selects, at HostilePodIP.

// HostileNode is the node the hostile tenant's pod runs on.
const HostileNode = "node-1"

// HostileNamespace is the tenant's namespace, and HostilePolicy the name of
// its policy.
const (
	HostileNamespace = "tenant"
	HostilePolicy    = "hostile"
)

// HostilePodIP is the address of the tenant's pod.
var HostilePodIP = netip.MustParseAddr("198.18.0.10")

// ExceptPolicy is a NetworkPolicy whose one ingress peer is fd00::/8 with n
// exceptions spread evenly over it, each a single address: the exceptions
// share no prefix longer than they must, so the difference is as large as
// it can be (about 120 prefixes per exception).
func ExceptPolicy(n int) []source.Object {
	var except []string
	for i := range n {
		// The i-th of n equal slices of fd00::/8, at its first address
		// plus one (so no exception is the start of an aligned block).
		a := [16]byte{0: 0xfd}
		step := uint64(1<<56) / uint64(max(n, 1))
		v := uint64(i)*step + 1
		for b := 0; b < 7; b++ {
			a[1+b] = byte(v >> (8 * (6 - b)))
		}
		a[15] = 1
		except = append(except, netip.AddrFrom16(a).String()+"/128")
	}
	peer := networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "fd00::/8", Except: except}}
	return hostile(networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{peer}})
}

// PeersPortsPolicy is a NetworkPolicy with one ingress rule of peers
// single-address ipBlocks (every other address from 198.19.0.0, so no two
// make a range) and ports TCP ports (every other from 1000): every peer
// with every port.
func PeersPortsPolicy(peers, ports int) []source.Object {
	var rule networkingv1.NetworkPolicyIngressRule
	for i := range peers {
		cidr := fmt.Sprintf("198.19.%d.%d/32", 2*i/256%256, 2*i%256)
		rule.From = append(rule.From, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr}})
	}
	tcp := corev1.ProtocolTCP
	for i := range ports {
		port := intstr.FromInt32(int32(1000 + 2*i)) // apart, so no two merge into a range
		rule.Ports = append(rule.Ports, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &port})
	}
	return hostile(rule)
}

// hostile returns the tenant's namespace, its pod and the policy with rule.
func hostile(rule networkingv1.NetworkPolicyIngressRule) []source.Object {
	obj := func(kind, ns, name string, v any) source.Object {
		return source.Object{Origin: diag.Origin{File: "generated/hostile", Doc: 1}, Kind: kind, Namespace: ns, Name: name, Value: v}
	}
	labels := map[string]string{"app": "victim"}
	return []source.Object{
		obj("Node", "", HostileNode, &corev1.Node{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
			ObjectMeta: metav1.ObjectMeta{Name: HostileNode},
			Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "198.18.255.1"}}},
		}),
		obj("Namespace", "", HostileNamespace, &corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: HostileNamespace},
		}),
		obj("Pod", HostileNamespace, "victim", &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: HostileNamespace, Labels: labels},
			Spec:       corev1.PodSpec{NodeName: HostileNode, Containers: []corev1.Container{{Name: "main", Image: "registry.example/victim"}}},
			Status:     corev1.PodStatus{PodIP: HostilePodIP.String(), PodIPs: []corev1.PodIP{{IP: HostilePodIP.String()}}},
		}),
		obj("NetworkPolicy", HostileNamespace, HostilePolicy, &networkingv1.NetworkPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: HostilePolicy, Namespace: HostileNamespace},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: labels},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{rule},
			},
		}),
	}
}

// AllowFrom is a NetworkPolicy of the hostile tenant's namespace, name, that
// selects all its pods and allows them from cidr on TCP port: the tenant's
// ordinary policy beside a hostile one.
func AllowFrom(name, cidr string, port int32) source.Object {
	tcp := corev1.ProtocolTCP
	p := intstr.FromInt32(port)
	return source.Object{Origin: diag.Origin{File: "generated/hostile", Doc: 2}, Kind: "NetworkPolicy", Namespace: HostileNamespace, Name: name,
		Value: &networkingv1.NetworkPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: HostileNamespace},
			Spec: networkingv1.NetworkPolicySpec{
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From:  []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: cidr}}},
					Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &p}},
				}},
			},
		}}
}
