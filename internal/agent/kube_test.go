package agent_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/kubetest"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/source/kube"
)

// TestAgentFollowsAPIServer runs the agent's passes on a watch of a real
// API server, with knftables' fake as the kernel: the first pass programs
// node-1's isolated pod, a pod relabel becomes a set-element transaction,
// and a NetworkPolicy deletion removes the pod's table.
func TestAgentFollowsAPIServer(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, ctx, cs)

	w, err := kube.NewWatch(c.Config, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	a := agent.New(agent.Config{Node: "node-1", Input: w}, nft.New(fake), nil)
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	st := a.Status()
	if st.Pods != 2 || st.Tables != 1 {
		t.Fatalf("first pass: %d local pods, %d tables; want 2 pods (web, client) and 1 table (web's ingress)", st.Pods, st.Tables)
	}
	if els := elementsOf(t, fake, "ingress-4"); els != "198.18.1.1" {
		t.Fatalf("ingress-4 map keys = %q, want web's address only", els)
	}

	// client becomes a frontend: it joins the policy's peer set, one element.
	client, err := cs.CoreV1().Pods("shop").Get(ctx, "client", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	client.Labels["app"] = "frontend"
	if _, err := cs.CoreV1().Pods("shop").Update(ctx, client, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	st = passUntil(t, ctx, a, w, st.Programmed)
	if st.Stats.Operations != 1 || st.Stats.Elements != 1 {
		t.Errorf("relabel: %+v, want 1 operation adding 1 element", st.Stats)
	}

	if err := cs.NetworkingV1().NetworkPolicies("shop").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	st = passUntil(t, ctx, a, w, st.Programmed)
	if st.Tables != 0 {
		t.Errorf("after the NetworkPolicy's deletion: %d tables, want 0", st.Tables)
	}
	if els := elementsOf(t, fake, "ingress-4"); els != "" {
		t.Errorf("ingress-4 map keys = %q, want none", els)
	}
}

func mustCreate(t *testing.T, ctx context.Context, cs kubernetes.Interface) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct{ name, app, node, ip string }{
		{"web", "web", "node-1", "198.18.1.1"}, {"client", "client", "node-1", "198.18.1.2"}, {"remote", "frontend", "node-2", "198.18.1.3"},
	} {
		pod, err := cs.CoreV1().Pods("shop").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: map[string]string{"app": p.app}},
			Spec:       corev1.PodSpec{NodeName: p.node, Containers: []corev1.Container{{Name: "c", Image: "registry.example/app"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: p.ip, PodIPs: []corev1.PodIP{{IP: p.ip}}}
		if _, err := cs.CoreV1().Pods("shop").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
				PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}}}}}},
		},
	}
	if _, err := cs.NetworkingV1().NetworkPolicies("shop").Create(ctx, np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// passUntil runs passes as the agent's loop does, until one programs an
// input other than after.
func passUntil(t *testing.T, ctx context.Context, a *agent.Agent, w *kube.Watch, after string) agent.Status {
	t.Helper()
	deadline := time.After(30 * time.Second) // a bound on a hang, not a performance assertion
	for {
		select {
		case <-w.Changed():
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("the agent never programmed the change")
		}
		if err := a.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if st := a.Status(); st.Programmed != after {
			return st
		}
	}
}

func elementsOf(t *testing.T, fake *knftables.Fake, m string) string {
	t.Helper()
	els, err := fake.ListElements(context.Background(), "map", m)
	if err != nil {
		t.Fatal(err)
	}
	out := ""
	for i, e := range els {
		if i > 0 {
			out += ","
		}
		out += e.Key[0]
	}
	return out
}
