package kubetest_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/network-policy-api/apis/v1alpha1"
	"sigs.k8s.io/network-policy-api/apis/v1alpha2"

	"github.com/netpol/netpol/internal/kubetest"
)

// TestControlPlane writes one object of every kind netpol reads and checks
// that the real API server stored, defaulted and validated it: built-in
// kinds through the typed clientset, the network-policy-api kinds through
// the dynamic client and the Go types netpol compiles against.
func TestControlPlane(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()

	// The kubeconfig must reach the same server as Config.
	kcfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatalf("load kubeconfig: %v", err)
	}
	if kcfg.Host != c.Config.Host {
		t.Errorf("kubeconfig server = %q, want %q", kcfg.Host, c.Config.Host)
	}
	cs, err := kubernetes.NewForConfig(kcfg)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("Namespace", func(t *testing.T) {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"team": "blue"}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := cs.CoreV1().Namespaces().Get(ctx, "shop", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The API server adds the name label that policies select namespaces by.
		if got.Labels["kubernetes.io/metadata.name"] != "shop" || got.Labels["team"] != "blue" {
			t.Errorf("labels = %v, want team=blue and kubernetes.io/metadata.name=shop", got.Labels)
		}
	})

	t.Run("Pod", func(t *testing.T) {
		_, err := cs.CoreV1().Pods("shop").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name:  "web",
				Image: "registry.invalid/web:1",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := cs.CoreV1().Pods("shop").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// No scheduler or kubelet: the Pod stays Pending on no node, with no IP.
		if got.Status.Phase != corev1.PodPending || got.Spec.NodeName != "" || got.Status.PodIP != "" {
			t.Errorf("phase, node, IP = %q, %q, %q, want Pending with no node and no IP",
				got.Status.Phase, got.Spec.NodeName, got.Status.PodIP)
		}
		port := got.Spec.Containers[0].Ports[0]
		if port.Name != "http" || port.ContainerPort != 8080 || port.Protocol != corev1.ProtocolTCP {
			t.Errorf("port = %+v, want http 8080/TCP (protocol defaulted)", port)
		}
	})

	t.Run("NetworkPolicy", func(t *testing.T) {
		port := intstr.FromString("http")
		_, err := cs.NetworkingV1().NetworkPolicies("shop").Create(ctx, &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: "web-from-blue"},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Ingress: []networkingv1.NetworkPolicyIngressRule{{
					From: []networkingv1.NetworkPolicyPeer{{
						NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "blue"}},
					}},
					Ports: []networkingv1.NetworkPolicyPort{{Port: &port}},
				}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := cs.NetworkingV1().NetworkPolicies("shop").Get(ctx, "web-from-blue", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// policyTypes and the port's protocol are defaulted by the server.
		if len(got.Spec.PolicyTypes) != 1 || got.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
			t.Errorf("policyTypes = %v, want [Ingress]", got.Spec.PolicyTypes)
		}
		p := got.Spec.Ingress[0].Ports[0]
		if p.Protocol == nil || *p.Protocol != corev1.ProtocolTCP || p.Port.String() != "http" {
			t.Errorf("port = %v/%v, want http/TCP", p.Port, p.Protocol)
		}
		if sel := got.Spec.Ingress[0].From[0].NamespaceSelector; sel == nil || sel.MatchLabels["team"] != "blue" {
			t.Errorf("from namespaceSelector = %v, want team=blue", sel)
		}
	})

	t.Run("AdminNetworkPolicy", func(t *testing.T) {
		anp := &v1alpha1.AdminNetworkPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "policy.networking.k8s.io/v1alpha1", Kind: "AdminNetworkPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: "no-metadata-server"},
			Spec: v1alpha1.AdminNetworkPolicySpec{
				Priority: 10,
				Subject:  v1alpha1.AdminNetworkPolicySubject{Namespaces: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "blue"}}},
				Egress: []v1alpha1.AdminNetworkPolicyEgressRule{
					{
						Name:   "deny-metadata",
						Action: v1alpha1.AdminNetworkPolicyRuleActionDeny,
						To:     []v1alpha1.AdminNetworkPolicyEgressPeer{{Networks: []v1alpha1.CIDR{"169.254.169.254/32"}}},
					},
					{
						Name:   "pass-to-nodes",
						Action: v1alpha1.AdminNetworkPolicyRuleActionPass,
						To: []v1alpha1.AdminNetworkPolicyEgressPeer{{
							Nodes: &metav1.LabelSelector{MatchLabels: map[string]string{"node-role.kubernetes.io/control-plane": ""}},
						}},
					},
				},
			},
		}
		var got v1alpha1.AdminNetworkPolicy
		roundTrip(t, dyn, "adminnetworkpolicies", "v1alpha1", anp, &got)
		if got.Spec.Priority != 10 || len(got.Spec.Egress) != 2 {
			t.Fatalf("priority, egress rules = %d, %d, want 10, 2", got.Spec.Priority, len(got.Spec.Egress))
		}
		// networks and nodes are experimental-channel fields: they survive
		// only if the experimental CRD is installed.
		if r := got.Spec.Egress[0]; r.Action != "Deny" || len(r.To[0].Networks) != 1 || r.To[0].Networks[0] != "169.254.169.254/32" {
			t.Errorf("egress[0] = %+v, want Deny to 169.254.169.254/32", r)
		}
		if r := got.Spec.Egress[1]; r.Action != "Pass" || r.To[0].Nodes == nil {
			t.Errorf("egress[1] = %+v, want Pass to nodes", r)
		}

		// The CRD's schema is enforced: priority is at most 1000.
		bad := anp.DeepCopy()
		bad.Name, bad.Spec.Priority = "too-high", 1001
		obj := toUnstructured(t, bad)
		_, err := dyn.Resource(gvr("adminnetworkpolicies", "v1alpha1")).Create(ctx, obj, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("create with priority 1001: err = %v, want Invalid", err)
		}
	})

	t.Run("BaselineAdminNetworkPolicy", func(t *testing.T) {
		banp := &v1alpha1.BaselineAdminNetworkPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "policy.networking.k8s.io/v1alpha1", Kind: "BaselineAdminNetworkPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: "default"}, // the only name the CRD accepts
			Spec: v1alpha1.BaselineAdminNetworkPolicySpec{
				Subject: v1alpha1.AdminNetworkPolicySubject{Namespaces: &metav1.LabelSelector{}},
				Ingress: []v1alpha1.BaselineAdminNetworkPolicyIngressRule{{
					Name:   "deny-from-other-namespaces",
					Action: v1alpha1.BaselineAdminNetworkPolicyRuleActionDeny,
					From: []v1alpha1.AdminNetworkPolicyIngressPeer{{
						Namespaces: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
							Key: "team", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"blue"},
						}}},
					}},
				}},
			},
		}
		var got v1alpha1.BaselineAdminNetworkPolicy
		roundTrip(t, dyn, "baselineadminnetworkpolicies", "v1alpha1", banp, &got)
		if len(got.Spec.Ingress) != 1 {
			t.Fatalf("ingress rules = %d, want 1", len(got.Spec.Ingress))
		}
		r := got.Spec.Ingress[0]
		if r.Action != "Deny" || r.Name != "deny-from-other-namespaces" {
			t.Errorf("ingress[0] = %q %q, want Deny deny-from-other-namespaces", r.Action, r.Name)
		}
		if e := r.From[0].Namespaces.MatchExpressions; len(e) != 1 || e[0].Operator != "NotIn" || e[0].Values[0] != "blue" {
			t.Errorf("from namespaces = %+v, want team NotIn [blue]", e)
		}
	})

	t.Run("ClusterNetworkPolicy", func(t *testing.T) {
		cnp := &v1alpha2.ClusterNetworkPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "policy.networking.k8s.io/v1alpha2", Kind: "ClusterNetworkPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: "dns-from-kube-system"},
			Spec: v1alpha2.ClusterNetworkPolicySpec{
				Tier:     v1alpha2.AdminTier,
				Priority: 5,
				Subject:  v1alpha2.ClusterNetworkPolicySubject{Namespaces: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "blue"}}},
				Ingress: []v1alpha2.ClusterNetworkPolicyIngressRule{{
					Action: v1alpha2.ClusterNetworkPolicyRuleActionAccept,
					From: []v1alpha2.ClusterNetworkPolicyIngressPeer{{
						Namespaces: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
					}},
					Protocols: []v1alpha2.ClusterNetworkPolicyProtocol{{
						UDP: &v1alpha2.ClusterNetworkPolicyProtocolUDP{DestinationPort: &v1alpha2.Port{Number: 53}},
					}},
				}},
			},
		}
		var got v1alpha2.ClusterNetworkPolicy
		roundTrip(t, dyn, "clusternetworkpolicies", "v1alpha2", cnp, &got)
		if got.Spec.Tier != "Admin" || got.Spec.Priority != 5 || len(got.Spec.Ingress) != 1 {
			t.Fatalf("tier, priority, ingress rules = %q, %d, %d, want Admin, 5, 1",
				got.Spec.Tier, got.Spec.Priority, len(got.Spec.Ingress))
		}
		r := got.Spec.Ingress[0]
		if r.Action != "Accept" || r.Protocols[0].UDP == nil || r.Protocols[0].UDP.DestinationPort.Number != 53 {
			t.Errorf("ingress[0] = %+v, want Accept UDP 53", r)
		}
	})
}

func gvr(resource, version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "policy.networking.k8s.io", Version: version, Resource: resource}
}

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// roundTrip creates the cluster-scoped custom object in and reads it back
// into out.
func roundTrip(t *testing.T, dyn dynamic.Interface, resource, version string, in runtime.Object, out any) {
	t.Helper()
	ctx := t.Context()
	r := dyn.Resource(gvr(resource, version))
	created, err := r.Create(ctx, toUnstructured(t, in), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s: %v", resource, err)
	}
	got, err := r.Get(ctx, created.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s/%s: %v", resource, created.GetName(), err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, out); err != nil {
		t.Fatalf("decode %s/%s: %v", resource, created.GetName(), err)
	}
}
