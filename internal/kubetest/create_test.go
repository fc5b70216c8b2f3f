package kubetest_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/netpol/netpol/internal/kubetest"
)

// TestCreate: what a kubelet or the server would have done is done: the
// pod's addresses land in its status, a container gets an image, and
// kube-system (made by the server) takes the manifest's labels.
func TestCreate(t *testing.T) {
	c := kubetest.Start(t)
	objs, err := kubetest.Manifests(`
apiVersion: v1
kind: Namespace
metadata: {name: kube-system, labels: {team: platform}}
---
apiVersion: v1
kind: Pod
metadata: {name: dns, namespace: kube-system}
spec: {containers: [{name: c}]}
status: {podIP: 198.18.0.53}
`)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 2 {
		t.Fatalf("%d objects parsed, want 2", len(objs))
	}
	if err := c.Create(t.Context(), objs); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Get(t.Context(), "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels["team"] != "platform" {
		t.Errorf("kube-system labels %v, want team=platform", ns.Labels)
	}
	pod, err := cs.CoreV1().Pods("kube-system").Get(t.Context(), "dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Status.PodIP != "198.18.0.53" || len(pod.Status.PodIPs) != 1 || pod.Status.PodIPs[0].IP != "198.18.0.53" ||
		pod.Status.Phase != "Running" || pod.Spec.Containers[0].Image != "registry.example/app" {
		t.Errorf("pod: ip %q, ips %v, phase %s, image %q; want 198.18.0.53 in both, Running, registry.example/app",
			pod.Status.PodIP, pod.Status.PodIPs, pod.Status.Phase, pod.Spec.Containers[0].Image)
	}
}
