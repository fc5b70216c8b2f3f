package kube

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/netpol/netpol/internal/source"
)

// TestMirrorTellsChangesFromNoOps: updates of what policy ignores (the
// resource version, managed fields, an admin policy's status that the
// agents themselves write) are no change: no new version, the same
// values; a label is a change.
func TestMirrorTellsChangesFromNoOps(t *testing.T) {
	m := newMirror(source.Options{})
	podTM := metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "x", Labels: map[string]string{"app": "web"}, ResourceVersion: "1"}}
	anp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.networking.k8s.io/v1alpha1", "kind": "AdminNetworkPolicy",
		"metadata": map[string]any{"name": "a", "resourceVersion": "1"},
		"spec":     map[string]any{"priority": int64(10), "subject": map[string]any{"namespaces": map[string]any{}}},
	}}
	if !m.set(pod.DeepCopy(), podTM) || !m.set(anp.DeepCopy(), metav1.TypeMeta{}) {
		t.Fatal("the first sight of an object is no change")
	}
	objs, _, version := m.snapshot()
	if len(objs) != 2 {
		t.Fatalf("%d objects, want 2", len(objs))
	}

	noop := pod.DeepCopy()
	noop.ResourceVersion = "2"
	noop.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}
	status := anp.DeepCopy()
	status.Object["metadata"].(map[string]any)["resourceVersion"] = "2"
	status.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Accepted", "status": "True"}}}
	if m.set(noop, podTM) || m.set(status, metav1.TypeMeta{}) {
		t.Error("a resource version, managed fields or a status counted as a change")
	}
	again, _, v2 := m.snapshot()
	if v2 != version || again[0].Value != objs[0].Value || again[1].Value != objs[1].Value {
		t.Errorf("after no-ops: version %s -> %s, values replaced: %v", version, v2, again[0].Value != objs[0].Value || again[1].Value != objs[1].Value)
	}

	relabel := pod.DeepCopy()
	relabel.Labels["app"] = "db"
	if !m.set(relabel, podTM) {
		t.Fatal("a label change was not a change")
	}
	after, _, v3 := m.snapshot()
	var changed *corev1.Pod
	for _, o := range after {
		if p, ok := o.Value.(*corev1.Pod); ok {
			changed = p
		}
	}
	if v3 == version || changed == nil || changed.Labels["app"] != "db" {
		t.Errorf("after the relabel: version %s -> %s, pod %+v", version, v3, changed)
	}
}

// TestFaultMirrorIgnoresStoppedInformer: a CRD removed, its kind's objects
// leave the mirror (removeKind); an event that the stopped informer still
// delivers afterwards (informers do not stop at once: their handlers drain
// what was queued) must not bring a removed admin policy back, while the
// informer of a later generation (the CRD installed again) writes.
func TestFaultMirrorIgnoresStoppedInformer(t *testing.T) {
	m := newMirror(source.Options{})
	anp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.networking.k8s.io/v1alpha1", "kind": "AdminNetworkPolicy",
		"metadata": map[string]any{"name": "a"},
		"spec":     map[string]any{"priority": int64(10), "subject": map[string]any{"namespaces": map[string]any{}}},
	}}
	count := func() int {
		objs, _, _ := m.snapshot()
		return len(objs)
	}
	old := m.generation("AdminNetworkPolicy")
	m.setIf(anp.DeepCopy(), metav1.TypeMeta{}, old)
	if count() != 1 {
		t.Fatal("the ANP was not mirrored")
	}
	m.removeKind("AdminNetworkPolicy")
	m.setIf(anp.DeepCopy(), metav1.TypeMeta{}, old) // the stopped informer's late event
	if n := count(); n != 0 {
		t.Fatalf("%d objects after the kind's removal and a late event of its stopped informer, want 0", n)
	}
	m.remove(anp.DeepCopy(), "AdminNetworkPolicy", old) // and a late delete is harmless
	m.setIf(anp.DeepCopy(), metav1.TypeMeta{}, m.generation("AdminNetworkPolicy"))
	if count() != 1 {
		t.Error("the informer of the next generation cannot write")
	}
}

// BenchmarkMirrorFirstList fills a mirror as the agent's first list of the
// 30k cluster does: 30,000 pods, then 22,500 NetworkPolicies, whose keys
// sort before every pod's.
//
//	go test ./internal/source/kube -run XXX -bench MirrorFirstList -benchtime 1x
func BenchmarkMirrorFirstList(b *testing.B) {
	podTM := metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	npTM := metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"}
	for b.Loop() {
		m := newMirror(source.Options{})
		for i := range 30000 {
			m.set(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%06d", i), Namespace: fmt.Sprintf("ns-%05d", i%7500),
				Labels: map[string]string{"app": "web"}}}, podTM)
		}
		for i := range 22500 {
			m.set(&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("np-%06d", i), Namespace: fmt.Sprintf("ns-%05d", i%7500)}}, npTM)
		}
		if objs, _, _ := m.snapshot(); len(objs) != 52500 {
			b.Fatalf("%d objects, want 52500", len(objs))
		}
	}
}

// TestMirrorKeepsOrderAcrossPending: objects set in any order, removed
// before or after a snapshot, come out sorted, the removed ones gone.
func TestMirrorKeepsOrderAcrossPending(t *testing.T) {
	m := newMirror(source.Options{})
	podTM := metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "x"}}
	}
	for _, n := range []string{"d", "b"} {
		m.set(pod(n), podTM)
	}
	m.snapshot()
	for _, n := range []string{"e", "a", "c"} {
		m.set(pod(n), podTM)
	}
	m.remove(pod("b"), "Pod", anyGen) // merged already
	m.remove(pod("c"), "Pod", anyGen) // still pending
	objs, _, _ := m.snapshot()
	var names []string
	for _, o := range objs {
		names = append(names, o.Name)
	}
	if got := strings.Join(names, ","); got != "a,d,e" {
		t.Errorf("snapshot %s, want a,d,e", got)
	}
}
