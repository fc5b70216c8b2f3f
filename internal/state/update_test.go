package state_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

func pod(ns, name, app, ip string) source.Object {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 80}}}}}}
	if ip != "" {
		p.Status.PodIP = ip
	}
	return source.Object{Kind: "Pod", Namespace: ns, Name: name, Value: p}
}

func namespace(name string) source.Object {
	return source.Object{Kind: "Namespace", Name: name, Value: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

func netpol(ns, name string) source.Object {
	return source.Object{Kind: "NetworkPolicy", Namespace: ns, Name: name,
		Value: &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
}

// relabelled returns o's pod with app=app, as a new value (an update).
func relabelled(o source.Object, app string) source.Object {
	p := o.Value.(*corev1.Pod).DeepCopy()
	p.Labels["app"] = app
	o.Value = p
	return o
}

// TestBuilderReplacesPodsInPlace: a pod updated in place (labels, ports)
// replaces only its own pointer; every other pod and namespace is shared
// with the last snapshot, IDs and addresses stay. Anything else builds anew.
func TestBuilderReplacesPodsInPlace(t *testing.T) {
	objs := []source.Object{namespace("a"), pod("a", "p1", "web", ""), pod("a", "p2", "db", "198.18.7.7"), netpol("a", "np"), pod("a", "p3", "web", "")}
	var b state.Builder
	c1, _ := b.Build(objs)
	if len(c1.Pods) != 3 || len(c1.Policies) != 1 {
		t.Fatalf("first snapshot: %d pods, %d policies; want 3, 1", len(c1.Pods), len(c1.Policies))
	}

	objs[1] = relabelled(objs[1], "api")
	objs = append(objs, netpol("a", "np2")) // policies may come and go
	c2, _ := b.Build(objs)
	if c2.Pods[0] == c1.Pods[0] {
		t.Fatal("the relabelled pod kept its old value")
	}
	if got := c2.Pods[0].Labels["app"]; got != "api" {
		t.Errorf("relabelled pod has app=%s, want api", got)
	}
	if c2.Pods[0].ID != 0 || c2.Pods[0].IPs[0] != c1.Pods[0].IPs[0] || c2.Pods[0].Node != "n1" {
		t.Errorf("relabelled pod: ID %d IPs %v node %s; want ID 0, IPs %v, node n1", c2.Pods[0].ID, c2.Pods[0].IPs, c2.Pods[0].Node, c1.Pods[0].IPs)
	}
	if c2.Pods[1] != c1.Pods[1] || c2.Pods[2] != c1.Pods[2] || c2.Namespaces[0] != c1.Namespaces[0] {
		t.Error("unchanged pods or namespaces were rebuilt")
	}
	if c1.Pods[0].Labels["app"] != "web" {
		t.Error("the last snapshot changed")
	}
	if len(c2.Policies) != 2 {
		t.Errorf("%d policies, want 2", len(c2.Policies))
	}
	if got := c2.Pod("a/p1"); got != c2.Pods[0] {
		t.Error("Pod(a/p1) does not return the replacement")
	}
	if got := c2.PodByIP(netip.MustParseAddr("198.18.7.7")); got != c2.Pods[1] {
		t.Errorf("PodByIP(198.18.7.7) = %v, want a/p2", got)
	}
	if got := c2.PodsIn(c2.Namespaces[0]); len(got) != 3 || got[0] != c2.Pods[0] {
		t.Errorf("PodsIn(a) = %v, want the three pods, the replacement first", got)
	}

	// Changes that must build anew: the other pods get new values.
	for _, tc := range []struct {
		name   string
		change func([]source.Object) []source.Object
	}{
		{"pod added without an address (netpol would assign one)", func(o []source.Object) []source.Object { return append(o, pod("a", "p4", "web", "")) }},
		{"pod address changed", func(o []source.Object) []source.Object {
			p := o[2].Value.(*corev1.Pod).DeepCopy()
			p.Status.PodIP = "198.18.8.8"
			o[2].Value = p
			return o
		}},
		{"pod moved to another node", func(o []source.Object) []source.Object {
			p := o[2].Value.(*corev1.Pod).DeepCopy()
			p.Spec.NodeName = "n2"
			o[2].Value = p
			return o
		}},
		{"namespace relabelled", func(o []source.Object) []source.Object {
			n := o[0].Value.(*corev1.Namespace).DeepCopy()
			n.Labels = map[string]string{"team": "x"}
			o[0].Value = n
			return o
		}},
		{"NetworkPolicy in a new namespace", func(o []source.Object) []source.Object { return append(o, netpol("b", "np")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := []source.Object{namespace("a"), pod("a", "p1", "web", ""), pod("a", "p2", "db", "198.18.7.7"), netpol("a", "np"), pod("a", "p3", "web", "")}
			var b state.Builder
			last, _ := b.Build(base)
			next, _ := b.Build(tc.change(append([]source.Object(nil), base...)))
			if next.Pod("a/p1") == last.Pod("a/p1") {
				t.Error("a/p1 is shared with the last snapshot; want a snapshot built anew")
			}
		})
	}
}

// TestBuilderSameInput: the same objects again give the same snapshot's
// pods, and a pod whose update has findings builds anew, reporting them.
func TestBuilderSameInput(t *testing.T) {
	objs := []source.Object{namespace("a"), pod("a", "p1", "web", ""), pod("a", "p2", "db", "")}
	var b state.Builder
	c1, _ := b.Build(objs)
	c2, _ := b.Build(objs)
	if c2.Pods[0] != c1.Pods[0] || c2.Pods[1] != c1.Pods[1] {
		t.Error("unchanged input rebuilt its pods")
	}
	bad := objs[1].Value.(*corev1.Pod).DeepCopy()
	bad.Spec.Containers[0].Ports[0].ContainerPort = 70000
	objs[1].Value = bad
	c3, diags := b.Build(objs)
	if len(diags) != 1 || diags[0].Field != "spec.containers[0].ports[0].containerPort" {
		t.Fatalf("findings %v, want one on spec.containers[0].ports[0].containerPort", diags)
	}
	if c3.Pods[1] == c1.Pods[1] {
		t.Error("a pod update with findings was applied in place")
	}
	if len(c3.Pods[0].Ports) != 0 {
		t.Errorf("the bad port was kept: %v", c3.Pods[0].Ports)
	}
}

// TestBuilderPodsComeAndGo: with the input in key order (as the kube mirror
// gives it), a pod created or deleted renumbers the pods after it, as
// copies; the others, and the last snapshot, stay as they were.
func TestBuilderPodsComeAndGo(t *testing.T) {
	keys := func(c *state.Cluster) string {
		var out []string
		for _, p := range c.Pods {
			out = append(out, fmt.Sprintf("%d:%s", p.ID, p.Key()))
		}
		return strings.Join(out, " ")
	}
	objs := []source.Object{namespace("a"), pod("a", "p1", "web", "198.18.0.1"), pod("a", "p3", "db", "198.18.0.3")}
	var b state.Builder
	c1, _ := b.Build(objs)

	objs = slices.Insert(objs, 2, pod("a", "p2", "api", "198.18.0.2"))
	c2, _ := b.Build(objs)
	if got := keys(c2); got != "0:a/p1 1:a/p2 2:a/p3" {
		t.Fatalf("p2 created: %s, want 0:a/p1 1:a/p2 2:a/p3", got)
	}
	if c2.Pods[0] != c1.Pods[0] {
		t.Error("a/p1, before the new pod, was rebuilt")
	}
	if c2.Pods[2] == c1.Pods[1] || c2.Pods[2].Labels["app"] != "db" || c1.Pods[1].ID != 1 {
		t.Error("a/p3 was not renumbered as a copy, or the last snapshot changed")
	}
	if p := c2.PodByIP(netip.MustParseAddr("198.18.0.3")); p != c2.Pods[2] {
		t.Errorf("PodByIP(198.18.0.3) = %v, want a/p3 with ID 2", p)
	}
	if got := c2.PodsIn(c2.Namespaces[0]); len(got) != 3 {
		t.Errorf("PodsIn(a) = %d pods, want 3", len(got))
	}

	objs = objs[1:] // a's namespace object goes too: not a pod, built anew
	if c, _ := b.Build(objs); c.Pod("a/p1") == c2.Pod("a/p1") {
		t.Error("a namespace deleted: the snapshot shares a/p1; want it built anew")
	}
	objs = append([]source.Object{namespace("a")}, objs...)
	c3, _ := b.Build(objs)
	objs = slices.Delete(objs, 1, 2) // p1
	c4, _ := b.Build(objs)
	if got := keys(c4); got != "0:a/p2 1:a/p3" {
		t.Fatalf("p1 deleted: %s, want 0:a/p2 1:a/p3", got)
	}
	if c4.Pod("a/p1") != nil || c4.PodByIP(netip.MustParseAddr("198.18.0.1")) != nil {
		t.Error("a/p1 is still found")
	}
	if c3.Pod("a/p1") == nil {
		t.Error("the last snapshot lost a/p1")
	}

	// Out of key order, pods cannot be placed: built anew.
	var unsorted state.Builder
	u1, _ := unsorted.Build([]source.Object{namespace("a"), pod("a", "p3", "db", "198.18.0.3"), pod("a", "p1", "web", "198.18.0.1")})
	u2, _ := unsorted.Build([]source.Object{namespace("a"), pod("a", "p3", "db", "198.18.0.3")})
	if u2.Pod("a/p3") == u1.Pod("a/p3") {
		t.Error("unsorted input: a pod deleted in place; want a snapshot built anew")
	}
}
