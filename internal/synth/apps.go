package synth

import (
	"bytes"
	"fmt"
	"math/rand"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/source"
)

// Apps is a 10k-pod cluster as netpol suggest meets it: no policy yet, 998
// Deployments of 10 replicas in 100 namespaces, 18 bare pods and the
// cluster DNS. (Cluster's clusters hold bare pods and thousands of
// policies already: clusters to lint, not to write policies for.) ends
// are its workloads as recorded flows name them, ports the first port
// each declares.
func Apps() (objs []source.Object, ends, ports []string) {
	r := rand.New(rand.NewSource(19))
	add := func(kind, ns, name string, v any) {
		objs = append(objs, source.Object{Origin: diag.Origin{File: "apps", Doc: len(objs) + 1}, Kind: kind, Namespace: ns, Name: name, Value: v})
	}
	typeMeta := func(apiVersion, kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
	}
	containerPorts := [][]corev1.ContainerPort{
		{{Name: "http", ContainerPort: 8080}}, {{Name: "grpc", ContainerPort: 9000}, {Name: "metrics", ContainerPort: 9090}},
		{{Name: "postgres", ContainerPort: 5432}}, {{Name: "redis", ContainerPort: 6379}}, {{Name: "https", ContainerPort: 8443}},
	}
	add("Namespace", "", "kube-system", &corev1.Namespace{TypeMeta: typeMeta("v1", "Namespace"), ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}})
	for i := 0; i < 2; i++ {
		name := fmt.Sprintf("coredns-%d", i)
		add("Pod", "kube-system", name, &corev1.Pod{TypeMeta: typeMeta("v1", "Pod"),
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", Labels: map[string]string{"k8s-app": "kube-dns"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP}}}}}})
	}
	for n := 0; n < 100; n++ {
		ns := fmt.Sprintf("ns-%03d", n)
		add("Namespace", "", ns, &corev1.Namespace{TypeMeta: typeMeta("v1", "Namespace"), ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}
	replicas := int32(10)
	for i := 0; i < 998; i++ {
		ns, name := fmt.Sprintf("ns-%03d", i%100), fmt.Sprintf("app-%04d", i)
		cp := containerPorts[r.Intn(len(containerPorts))]
		labels := map[string]string{"app.kubernetes.io/name": name, "version": []string{"v1", "v2"}[r.Intn(2)]}
		add("Deployment", ns, name, &appsv1.Deployment{TypeMeta: typeMeta("apps/v1", "Deployment"), ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: cp}}}}}})
		ends = append(ends, ns+"/Deployment/"+name)
		ports = append(ports, fmt.Sprintf("%d/tcp", cp[0].ContainerPort))
	}
	for i := 0; i < 18; i++ {
		ns, name := fmt.Sprintf("ns-%03d", i), fmt.Sprintf("debug-%02d", i)
		add("Pod", ns, name, &corev1.Pod{TypeMeta: typeMeta("v1", "Pod"),
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": name}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Ports: containerPorts[0]}}}})
		ends = append(ends, ns+"/"+name)
		ports = append(ports, "8080/tcp")
	}
	return objs, ends, ports
}

// Records is lines of agents' record files (package observed) over the
// ends of Apps: each workload calls three others (most in its namespace)
// and a tenth of them an outside address (TEST-NET-3, never dialled),
// every edge recorded many times over, by ten nodes; one line in twenty is
// a denied connection.
func Records(ends, ports []string, lines int) []byte {
	r := rand.New(rand.NewSource(20))
	type edge struct{ from, to, port string }
	var edges []edge
	for i, w := range ends {
		for k := 0; k < 3; k++ {
			j := (i + 100*(1+r.Intn(3))) % len(ends) // the same namespace
			if r.Intn(4) == 0 {
				j = r.Intn(len(ends))
			}
			if j != i {
				edges = append(edges, edge{w, ends[j], ports[j]})
			}
		}
		if r.Intn(10) == 0 {
			edges = append(edges, edge{w, fmt.Sprintf("203.0.113.%d", 1+r.Intn(50)), "443/tcp"})
		}
	}
	var b bytes.Buffer
	for i := 0; i < lines; i++ {
		e := edges[r.Intn(len(edges))]
		verdict := "allow"
		if r.Intn(20) == 0 {
			verdict = "deny"
		}
		fmt.Fprintf(&b, `{"from":%q,"to":%q,"port":%q,"verdict":%q,"count":%d,"first":"2026-11-25T01:00:00Z","last":"2026-11-25T01:05:00Z","node":"node-%d"}`+"\n",
			e.from, e.to, e.port, verdict, 1+r.Intn(100), r.Intn(10))
	}
	return b.Bytes()
}
