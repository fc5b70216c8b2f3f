package source

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod is a Pod object as an agent keeps it (Options.CompactPods): what
// policy reads of a pod and nothing else. A decoded corev1.Pod is 1,192
// bytes before its labels, containers (408 bytes each) and addresses, and
// an agent keeps every pod of the cluster: 470 MB of decoded objects on a
// node of the 150k-pod cluster. State reads it as the pod Typed returns.
type Pod struct {
	Namespace, Name string
	Labels          map[string]string
	Node            string
	HostNetwork     bool
	Phase           corev1.PodPhase
	IPs             []corev1.PodIP // status.podIPs, or status.podIP alone
	// Ready is the status of the Ready condition, "" without one.
	Ready corev1.ConditionStatus
	// Containers are every container, in order (so that a finding names
	// the container as the manifest does), with the ports it declares.
	Containers []ContainerPorts
	// Controller is the controller among the owners, nil without one.
	Controller *metav1.OwnerReference
}

// ContainerPorts are the ports one container declares.
type ContainerPorts struct {
	Name  string
	Ports []corev1.ContainerPort
}

// CompactPod returns what p holds for policy.
func CompactPod(p *corev1.Pod) *Pod {
	c := &Pod{Namespace: p.Namespace, Name: p.Name, Labels: p.Labels, Node: p.Spec.NodeName, HostNetwork: p.Spec.HostNetwork,
		Phase: p.Status.Phase, IPs: p.Status.PodIPs}
	if len(c.IPs) == 0 && p.Status.PodIP != "" {
		c.IPs = []corev1.PodIP{{IP: p.Status.PodIP}}
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			c.Ready = cond.Status
		}
	}
	if len(p.Spec.Containers) > 0 {
		c.Containers = make([]ContainerPorts, len(p.Spec.Containers))
		for i, ct := range p.Spec.Containers {
			c.Containers[i] = ContainerPorts{Name: ct.Name, Ports: ct.Ports}
		}
	}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		r := *ref
		c.Controller = &r
	}
	return c
}

// Typed returns the pod as a corev1.Pod with what p holds: a new value
// each time, for code that reads the typed pod and keeps nothing of it.
func (p *Pod) Typed() *corev1.Pod {
	out := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, Labels: p.Labels},
		Spec:       corev1.PodSpec{NodeName: p.Node, HostNetwork: p.HostNetwork},
		Status:     corev1.PodStatus{Phase: p.Phase, PodIPs: p.IPs},
	}
	if len(p.IPs) > 0 {
		out.Status.PodIP = p.IPs[0].IP
	}
	if p.Ready != "" {
		out.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: p.Ready}}
	}
	for _, c := range p.Containers {
		out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Ports: c.Ports})
	}
	if p.Controller != nil {
		out.OwnerReferences = []metav1.OwnerReference{*p.Controller}
	}
	return out
}
