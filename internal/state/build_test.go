package state_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

// inPhase returns the pod of pod() in phase.
func inPhase(o source.Object, phase corev1.PodPhase) source.Object {
	o.Value.(*corev1.Pod).Status.Phase = phase
	return o
}

func podKeys(c *state.Cluster) string {
	var keys []string
	for _, p := range c.Pods {
		keys = append(keys, p.Key())
	}
	return strings.Join(keys, " ")
}

func diagLines(l diag.List) string {
	var lines []string
	for _, d := range l {
		lines = append(lines, d.Severity.String()+": "+d.String())
	}
	return strings.Join(lines, "\n")
}

// TestFinishedPodsLeaveWithOneFinding: pods in phase Succeeded or Failed hold
// no address in a cluster, so they leave the model, and one finding says how
// many did (not one each, and not silently).
func TestFinishedPodsLeaveWithOneFinding(t *testing.T) {
	objs := []source.Object{
		namespace("x"),
		inPhase(pod("x", "job-b", "job", "198.18.0.2"), corev1.PodSucceeded),
		inPhase(pod("x", "job-a", "job", "198.18.0.1"), corev1.PodSucceeded),
		inPhase(pod("x", "run", "web", "198.18.0.3"), corev1.PodRunning),
		inPhase(pod("x", "crashed", "web", "198.18.0.4"), corev1.PodFailed),
		pod("x", "web", "web", "198.18.0.5"),
	}
	c, diags := state.Build(objs, state.Options{})
	if got, want := podKeys(c), "x/run x/web"; got != want {
		t.Errorf("pods %q, want %q", got, want)
	}
	want := "warning: 3 pods in phase Succeeded or Failed left out, as they hold no IP address: x/crashed, x/job-a, x/job-b"
	if got := diagLines(diags); got != want {
		t.Errorf("findings:\n%s\nwant:\n%s", got, want)
	}
}

// TestBuilderCountsFinishedPods: the incremental builder's finding follows
// the finished pods as they go.
func TestBuilderCountsFinishedPods(t *testing.T) {
	objs := []source.Object{ // in key order, as the kube mirror gives them
		namespace("x"),
		inPhase(pod("x", "a", "job", "198.18.0.1"), corev1.PodSucceeded),
		inPhase(pod("x", "b", "job", "198.18.0.2"), corev1.PodFailed),
		pod("x", "c", "web", "198.18.0.3"),
	}
	var b state.Builder
	for _, step := range []struct {
		objs []source.Object
		want string
	}{
		{objs, "warning: 2 pods in phase Succeeded or Failed left out, as they hold no IP address: x/a, x/b"},
		{[]source.Object{objs[0], objs[2], objs[3]}, "warning: 1 pod in phase Succeeded or Failed left out, as it holds no IP address: x/b"},
		{[]source.Object{objs[0], objs[3]}, ""},
	} {
		c, diags := b.Build(step.objs)
		if got := podKeys(c); got != "x/c" {
			t.Errorf("pods %q, want x/c", got)
		}
		if got := diagLines(diags); got != step.want {
			t.Errorf("findings:\n%s\nwant:\n%s", got, step.want)
		}
	}
}

// TestFinishedPodsFindingNamesFive: completed Job pods can be thousands;
// the finding names five and counts the rest.
func TestFinishedPodsFindingNamesFive(t *testing.T) {
	objs := []source.Object{namespace("x")}
	for _, name := range []string{"g", "f", "e", "d", "c", "b", "a"} {
		objs = append(objs, inPhase(pod("x", name, "job", ""), corev1.PodSucceeded))
	}
	_, diags := state.Build(objs, state.Options{})
	want := "warning: 7 pods in phase Succeeded or Failed left out, as they hold no IP address: x/a, x/b, x/c, x/d, x/e and 2 more"
	if got := diagLines(diags); got != want {
		t.Errorf("findings:\n%s\nwant:\n%s", got, want)
	}
}

// TestReplicationControllerStandsForItsPods: a ReplicationController
// (core/v1) makes the pods of its template, as a ReplicaSet does.
func TestReplicationControllerStandsForItsPods(t *testing.T) {
	const in = `apiVersion: v1
kind: ReplicationController
metadata: {name: legacy, namespace: x}
spec:
  replicas: 2
  selector: {app: legacy}
  template:
    metadata: {labels: {app: legacy}}
    spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: one, namespace: x}
spec: {template: {metadata: {labels: {app: one}}, spec: {containers: [{name: c}]}}}
`
	dec := &source.Decoder{}
	objs := dec.Decode("rc.yaml", []byte(in))
	c, diags := state.Build(objs, state.Options{})
	if all := append(dec.Diags, diags...); len(all) > 0 {
		t.Fatalf("findings:\n%s", diagLines(all))
	}
	type podWant struct{ prefix, owner, app, ports string }
	want := []podWant{
		{"legacy-", "ReplicationController legacy", "legacy", "http=8080/tcp"},
		{"legacy-", "ReplicationController legacy", "legacy", "http=8080/tcp"},
		{"one-", "ReplicationController one", "one", ""}, // replicas defaults to 1
	}
	if len(c.Pods) != len(want) {
		t.Fatalf("pods %q, want %d", podKeys(c), len(want))
	}
	for i, w := range want {
		p := c.Pods[i]
		var ports []string
		for _, cp := range p.Ports {
			ports = append(ports, cp.Name+"="+cp.Port.String())
		}
		// The name is <controller>-<5 characters>, as the controller names them.
		if !strings.HasPrefix(p.Name, w.prefix) || len(p.Name) != len(w.prefix)+5 || p.Namespace.Name != "x" ||
			p.Owner != w.owner || p.Labels["app"] != w.app || strings.Join(ports, ",") != w.ports || len(p.IPs) == 0 {
			t.Errorf("pod %d: %s owner %q app=%s ports %q IPs %v; want %s<5 characters> in x, owner %q, app=%s, ports %q, an address",
				i, p.Key(), p.Owner, p.Labels["app"], ports, p.IPs, w.prefix, w.owner, w.app, w.ports)
		}
	}
}

func TestReplicationControllerWithoutTemplate(t *testing.T) {
	dec := &source.Decoder{}
	objs := dec.Decode("rc.yaml", []byte("apiVersion: v1\nkind: ReplicationController\nmetadata: {name: bare, namespace: x}\nspec: {replicas: 3}\n"))
	c, diags := state.Build(objs, state.Options{})
	want := "error: rc.yaml: ReplicationController x/bare: spec.template: Required value"
	if got := diagLines(append(dec.Diags, diags...)); got != want || len(c.Pods) != 0 {
		t.Errorf("pods %q, findings:\n%s\nwant no pods and:\n%s", podKeys(c), got, want)
	}
}

// TestPodOwnerFromOwnerReferences: a pod of a cluster dump names the
// controller that made it in metadata.ownerReferences; a ReplicaSet whose
// name is its pods' template hash after a Deployment's name stands for
// that Deployment, as kubectl rollout sees it. matrix --by workload groups
// by it.
func TestPodOwnerFromOwnerReferences(t *testing.T) {
	const in = `apiVersion: v1
kind: PodList
items:
- metadata:
    name: web-7d4b9c8f6d-x2k9p
    namespace: x
    labels: {app: web, pod-template-hash: 7d4b9c8f6d}
    ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-7d4b9c8f6d, uid: u1, controller: true}]
  spec: {containers: [{name: c}]}
- metadata:
    name: plain-rs-b8kq2
    namespace: x
    ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: plain-rs, uid: u2, controller: true}]
  spec: {containers: [{name: c}]}
- metadata:
    name: db-0
    namespace: x
    ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: u3, controller: true}]
  spec: {containers: [{name: c}]}
- metadata:
    name: noted
    namespace: x
    ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: not-a-controller, uid: u4}]
  spec: {containers: [{name: c}]}
- metadata: {name: bare, namespace: x}
  spec: {containers: [{name: c}]}
`
	dec := &source.Decoder{}
	objs := dec.Decode("dump.yaml", []byte(in))
	c, diags := state.Build(objs, state.Options{})
	if all := append(dec.Diags, diags...); len(all) > 0 {
		t.Fatalf("findings:\n%s", diagLines(all))
	}
	want := map[string]string{
		"x/web-7d4b9c8f6d-x2k9p": "Deployment web",
		"x/plain-rs-b8kq2":       "ReplicaSet plain-rs",
		"x/db-0":                 "StatefulSet db",
		"x/noted":                "",
		"x/bare":                 "",
	}
	if len(c.Pods) != len(want) {
		t.Fatalf("pods %q, want %d", podKeys(c), len(want))
	}
	for _, p := range c.Pods {
		if p.Owner != want[p.Key()] {
			t.Errorf("%s: owner %q, want %q", p.Key(), p.Owner, want[p.Key()])
		}
	}
	workloads := map[string]string{
		"x/web-7d4b9c8f6d-x2k9p": "x/Deployment/web",
		"x/plain-rs-b8kq2":       "x/ReplicaSet/plain-rs",
		"x/db-0":                 "x/StatefulSet/db",
		"x/noted":                "x/noted",
		"x/bare":                 "x/bare",
	}
	for _, p := range c.Pods {
		if p.Workload() != workloads[p.Key()] {
			t.Errorf("%s: workload %q, want %q", p.Key(), p.Workload(), workloads[p.Key()])
		}
	}
}

// TestOwnedPodErrorsNameThePodsFields: a Pod object with an owner is still
// a Pod: its fields are not under spec.template, as a workload's are.
func TestOwnedPodErrorsNameThePodsFields(t *testing.T) {
	const in = `apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: x
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: web, uid: u1, controller: true}]
spec: {containers: [{name: c, ports: [{containerPort: 70000}]}]}
`
	dec := &source.Decoder{}
	objs := dec.Decode("pod.yaml", []byte(in))
	_, diags := state.Build(objs, state.Options{})
	want := "error: pod.yaml: Pod x/web-1: spec.containers[0].ports[0].containerPort: must be 1-65535, got 70000"
	if got := diagLines(append(dec.Diags, diags...)); got != want {
		t.Errorf("findings:\n%s\nwant:\n%s", got, want)
	}
}

// TestDuplicatePortNameIsAnError: container port names are unique in a pod,
// across its containers, as the API server validates them. Two ports of
// one name would make a named port mean either, depending on their order.
func TestDuplicatePortNameIsAnError(t *testing.T) {
	const in = `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: x}
spec:
  containers:
  - {name: a, ports: [{name: http, containerPort: 80}]}
  - {name: b, ports: [{name: http, containerPort: 8080}, {containerPort: 9090}, {containerPort: 9091}]}
`
	dec := &source.Decoder{}
	objs := dec.Decode("pod.yaml", []byte(in))
	_, diags := state.Build(objs, state.Options{})
	want := `error: pod.yaml: Pod x/web: spec.containers[1].ports[0].name: Duplicate value: "http"`
	if got := diagLines(append(dec.Diags, diags...)); got != want {
		t.Errorf("findings:\n%s\nwant:\n%s", got, want)
	}
}

// TestNodeHostnameLabel: a node's kubernetes.io/hostname is the kubelet's
// hostname, which --hostname-override or a cloud provider's node names can
// set apart from the node's name, and node peers select on it as written.
// A node that does not carry the label (hand-written input, or a node known
// only from pods' nodeName) gets its name, as a kubelet sets it by default.
func TestNodeHostnameLabel(t *testing.T) {
	node := func(name string, labels map[string]string) source.Object {
		return source.Object{Kind: "Node", Name: name, Value: &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}}
	}
	objs := []source.Object{
		node("ip-10-0-0-1.ec2.internal", map[string]string{corev1.LabelHostname: "ip-10-0-0-1", "zone": "a"}),
		node("n2", map[string]string{"zone": "b"}),
		namespace("x"),
		func() source.Object {
			o := pod("x", "web", "web", "198.18.0.1")
			o.Value.(*corev1.Pod).Spec.NodeName = "n3"
			return o
		}(),
	}
	c, diags := state.Build(objs, state.Options{})
	if len(diags) > 0 {
		t.Fatalf("findings: %s", diagLines(diags))
	}
	var got []string
	for _, n := range c.Nodes {
		got = append(got, n.Name+": "+n.Labels.String())
	}
	want := []string{
		"ip-10-0-0-1.ec2.internal: kubernetes.io/hostname=ip-10-0-0-1,zone=a",
		"n2: kubernetes.io/hostname=n2,zone=b",
		"n3: kubernetes.io/hostname=n3",
	}
	if !slices.Equal(got, want) {
		t.Errorf("nodes:\n  got  %q\n  want %q", got, want)
	}
}

// TestDuplicatePods: a pod declared twice is an error on the second, and
// so is one whose namespace and name, joined by a slash, are another's
// (names with a slash are not valid, and were keyed by that join).
func TestDuplicatePods(t *testing.T) {
	objs := []source.Object{
		namespace("a"), namespace("a/b"), namespace("x"),
		pod("x", "web", "web", "198.18.0.1"),
		pod("x", "web", "web", "198.18.0.2"),
		pod("a/b", "c", "web", "198.18.0.3"),
		pod("a", "b/c", "web", "198.18.0.4"),
		pod("a", "b", "web", "198.18.0.5"),
	}
	_, diags := state.Build(objs, state.Options{})
	var got []string
	for _, d := range diags.Errors() {
		got = append(got, d.Object+": "+d.Message)
	}
	want := []string{
		"Pod x/web: declared twice (first at )",
		"Pod a/b/c: declared twice (first at )",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
