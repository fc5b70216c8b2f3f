package kube

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/source"
)

// compactPod is what the pod informer keeps of a pod when the decoder's
// options ask for compact pods (an agent): the metadata the informer's
// cache needs to key and version it, and the pod as source.Pod. The
// informer's cache holds every pod of the cluster; a stripped corev1.Pod
// is still 1,192 bytes and more, and the mirror made a second copy of it
// through JSON. The mirror takes the source.Pod as it is (object).
type compactPod struct {
	metav1.TypeMeta
	metav1.ObjectMeta
	Pod *source.Pod
}

// DeepCopyObject copies what a writer may change (the metadata's scalar
// fields: the mirror clears the resource version); the source.Pod is
// shared, and nothing writes to it.
func (p *compactPod) DeepCopyObject() runtime.Object {
	c := *p
	return &c
}

// compactPodOf is the pod informer's transform for an agent. It leaves out
// the Ready condition, as StripPod does for the agent: readiness flapping
// must cost the agent nothing.
func compactPodOf(p *corev1.Pod) *compactPod {
	c := source.CompactPod(p)
	c.Ready = ""
	return &compactPod{TypeMeta: kindPod,
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion},
		Pod:        c}
}

// object is the source object the decoder would have made of p's JSON.
func (p *compactPod) object() source.Object {
	return source.Object{Origin: diag.Origin{File: "cluster"}, Kind: "Pod", Namespace: p.Namespace, Name: p.Name, Value: p.Pod}
}
