package kube_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/kubetest"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/source/kube"
)

// The cluster of these tests: namespace shop with pods web, frontend and
// batch; web accepts only frontend (a NetworkPolicy); an
// AdminNetworkPolicy denies everything from namespace untrusted, where the
// pod intruder lives; a ClusterNetworkPolicy in the Admin tier allows the
// monitoring namespace before either.
func createCluster(t *testing.T, ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface) {
	t.Helper()
	for _, ns := range []string{"shop", "untrusted", "monitoring"} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pods := []struct{ ns, name, app, ip string }{
		{"shop", "web", "web", "198.18.1.1"}, {"shop", "frontend", "frontend", "198.18.1.2"},
		{"shop", "batch", "batch", "198.18.1.3"}, {"untrusted", "intruder", "frontend", "198.18.2.1"},
		{"monitoring", "prometheus", "prometheus", "198.18.3.1"},
	}
	for _, p := range pods {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: p.ns, Labels: map[string]string{"app": p.app}},
			Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c", Image: "registry.example/app",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
		}
		created, err := cs.CoreV1().Pods(p.ns).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// No kubelet here: write the status a kubelet would.
		created.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: p.ip, PodIPs: []corev1.PodIP{{IP: p.ip}}}
		if _, err := cs.CoreV1().Pods(p.ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
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
	anp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.networking.k8s.io/v1alpha1", "kind": "AdminNetworkPolicy",
		"metadata": map[string]any{"name": "quarantine"},
		"spec": map[string]any{"priority": int64(20), "subject": map[string]any{"namespaces": map[string]any{}},
			"ingress": []any{map[string]any{"name": "untrusted", "action": "Deny",
				"from": []any{map[string]any{"namespaces": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "untrusted"}}}}}}},
	}}
	if _, err := dyn.Resource(kube.ANP).Create(ctx, anp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cnp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.networking.k8s.io/v1alpha2", "kind": "ClusterNetworkPolicy",
		"metadata": map[string]any{"name": "monitoring"},
		"spec": map[string]any{"tier": "Admin", "priority": int64(10), "subject": map[string]any{"namespaces": map[string]any{}},
			"ingress": []any{map[string]any{"name": "scrape", "action": "Accept",
				"from": []any{map[string]any{"namespaces": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}}}}}},
	}}
	if _, err := dyn.Resource(kube.CNP).Create(ctx, cnp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func clients(t *testing.T, c *kubetest.Cluster) (kubernetes.Interface, dynamic.Interface) {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return cs, dyn
}

func build(t *testing.T, objs []source.Object) *engine.Engine {
	t.Helper()
	e, _, err := pipeline.Build(objs, nil, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func allowed(t *testing.T, e *engine.Engine, from, to string) bool {
	t.Helper()
	src, err := e.Endpoint(from)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := e.Endpoint(to)
	if err != nil {
		t.Fatal(err)
	}
	return e.Allowed(engine.Flow{Src: src, Dst: dst, Port: l4.Port{Proto: l4.TCP, Num: 8080}})
}

// TestKubeListDecidesLikeFiles reads the cluster once, as `netpol matrix
// --kubeconfig` does, and checks verdicts that need every kind: the
// NetworkPolicy, the ANP and the CNP, pod IPs from the status, and the
// namespace name label the API server adds.
func TestKubeListDecidesLikeFiles(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()
	cs, dyn := clients(t, c)
	createCluster(t, ctx, cs, dyn)

	objs, diags, err := kube.List(ctx, c.Config, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := diags.Err(); err != nil {
		t.Fatalf("decoding the cluster's objects: %v", err)
	}
	e := build(t, objs)
	for _, c := range []struct {
		from, to string
		want     bool
	}{
		{"shop/frontend", "shop/web", true},         // the NetworkPolicy allows it
		{"shop/batch", "shop/web", false},           // isolated by the NetworkPolicy
		{"untrusted/intruder", "shop/web", false},   // the ANP denies before the NP allows frontends
		{"untrusted/intruder", "shop/batch", false}, // the ANP denies
		{"monitoring/prometheus", "shop/web", true}, // the CNP accepts before the NP isolates
		{"shop/web", "untrusted/intruder", true},    // the ANP denies only what comes from untrusted
		{"198.18.1.3", "198.18.1.2", true},          // by IP: batch -> frontend, nothing isolates frontend
		{"shop/batch", "monitoring/prometheus", true},
	} {
		if got := allowed(t, e, c.from, c.to); got != c.want {
			t.Errorf("%s -> %s: allowed %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

// TestKubeWatchFollowsChanges mirrors the cluster with informers: a pod
// relabel and a policy deletion each arrive as a change, and the snapshot
// then decides differently.
func TestKubeWatchFollowsChanges(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()
	cs, dyn := clients(t, c)
	createCluster(t, ctx, cs, dyn)

	w, err := kube.NewWatch(c.Config, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	objs, _, before := w.Snapshot()
	if allowed(t, build(t, objs), "shop/batch", "shop/web") {
		t.Fatal("batch -> web allowed before the relabel")
	}

	batch, err := cs.CoreV1().Pods("shop").Get(ctx, "batch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	batch.Labels["app"] = "frontend"
	if _, err := cs.CoreV1().Pods("shop").Update(ctx, batch, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, before, func(e *engine.Engine) bool { return allowed(t, e, "shop/batch", "shop/web") })

	_, _, v := w.Snapshot()
	if err := dyn.Resource(kube.ANP).Delete(ctx, "quarantine", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, v, func(e *engine.Engine) bool { return allowed(t, e, "untrusted/intruder", "shop/batch") })
}

// waitFor waits for changes after version until cond holds on the snapshot.
func waitFor(t *testing.T, w *kube.Watch, version string, cond func(*engine.Engine) bool) {
	t.Helper()
	deadline := time.After(30 * time.Second) // a bound on a hang, not a performance assertion
	for {
		select {
		case <-w.Changed():
		case <-deadline:
			t.Fatal("the watch never showed the change")
		}
		objs, _, v := w.Snapshot()
		if v == version {
			continue
		}
		if cond(build(t, objs)) {
			return
		}
	}
}
