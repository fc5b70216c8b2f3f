package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStripPodKeepsTheController: a live cluster's pods name the workload
// that made them only in ownerReferences, which matrix --by workload
// reads; other references are of no use to policy.
func TestStripPodKeepsTheController(t *testing.T) {
	yes := true
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "x", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "other", UID: "u0"},
		{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "web", UID: "u1", Controller: &yes},
	}}}
	refs := StripPod(p).OwnerReferences
	if len(refs) != 1 || refs[0].Kind != "StatefulSet" || refs[0].Name != "web" {
		t.Errorf("owner references %+v, want the StatefulSet web only", refs)
	}
	if refs := StripPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}).OwnerReferences; refs != nil {
		t.Errorf("bare pod: owner references %+v, want none", refs)
	}
}
