package pipeline_test

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand"
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/network-policy-api/apis/v1alpha1"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// change is one edit of the input, as a cluster makes them; inPlace says
// whether state.Builder may replace pods in place for it (the rest must
// build the snapshot anew).
type change struct {
	name    string
	inPlace bool
	apply   func(r *rand.Rand, objs []source.Object) []source.Object
}

func pick[T any](r *rand.Rand, objs []source.Object, ok func(T) bool) int {
	var at []int
	for i, o := range objs {
		if v, is := o.Value.(T); is && ok(v) {
			at = append(at, i)
		}
	}
	return at[r.Intn(len(at))]
}

func anyPod(*corev1.Pod) bool { return true }

// created numbers the pods the changes create.
var created int

// byKey is the kube mirror's order: kind, namespace, name.
func byKey(a, b source.Object) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

var changes = []change{
	{"relabel a pod", true, func(r *rand.Rand, objs []source.Object) []source.Object {
		i, j := pick(r, objs, anyPod), pick(r, objs, anyPod)
		p := objs[i].Value.(*corev1.Pod).DeepCopy()
		p.Labels["app"] = objs[j].Value.(*corev1.Pod).Labels["app"] // another pod's app
		p.Labels["tier"] = fmt.Sprint("t", r.Intn(3))
		objs[i].Value = p
		return objs
	}},
	{"renumber a pod's named ports", true, func(r *rand.Rand, objs []source.Object) []source.Object {
		// A pod of a team=search namespace: egress to their named port http
		// makes a set of (address, port) elements on the nodes.
		search := map[string]bool{}
		for _, o := range objs {
			if ns, ok := o.Value.(*corev1.Namespace); ok && ns.Labels["team"] == "search" {
				search[ns.Name] = true
			}
		}
		i := pick(r, objs, func(p *corev1.Pod) bool { return search[p.Namespace] && len(p.Spec.Containers[0].Ports) > 0 })
		p := objs[i].Value.(*corev1.Pod).DeepCopy()
		for j := range p.Spec.Containers[0].Ports {
			p.Spec.Containers[0].Ports[j].ContainerPort += 1000
		}
		objs[i].Value = p
		return objs
	}},
	{"change a NetworkPolicy's port", true, func(r *rand.Rand, objs []source.Object) []source.Object {
		i := pick(r, objs, func(p *networkingv1.NetworkPolicy) bool {
			return len(p.Spec.Ingress) > 0 && len(p.Spec.Ingress[0].Ports) > 0
		})
		np := objs[i].Value.(*networkingv1.NetworkPolicy).DeepCopy()
		port := intstr.FromInt32(int32(8000 + r.Intn(200)))
		np.Spec.Ingress[0].Ports[0].Port, np.Spec.Ingress[0].Ports[0].EndPort = &port, nil
		objs[i].Value = np
		return objs
	}},
	{"flip a NetworkPolicy's egress isolation", true, func(r *rand.Rand, objs []source.Object) []source.Object {
		// The same policy at the same place, isolating another set of
		// directions: the engine keeps the lists of applicable policies
		// and must not keep what it knew about their isolation.
		i := pick(r, objs, func(p *networkingv1.NetworkPolicy) bool { return len(p.Spec.Egress) == 0 })
		np := objs[i].Value.(*networkingv1.NetworkPolicy).DeepCopy()
		if slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
			np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
		} else {
			np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
		}
		objs[i].Value = np
		return objs
	}},
	{"delete a NetworkPolicy", true, func(r *rand.Rand, objs []source.Object) []source.Object {
		i := pick(r, objs, func(*networkingv1.NetworkPolicy) bool { return true })
		return slices.Delete(objs, i, i+1)
	}},
	{"add a NetworkPolicy", true, func(r *rand.Rand, objs []source.Object) []source.Object {
		i := pick(r, objs, func(*networkingv1.NetworkPolicy) bool { return true })
		np := objs[i].Value.(*networkingv1.NetworkPolicy).DeepCopy()
		np.Name = fmt.Sprintf("copy-%d", r.Int())
		o := objs[i]
		o.Name, o.Value = np.Name, np
		return append(objs, o)
	}},
	{"flip an admin rule's action", true, func(r *rand.Rand, objs []source.Object) []source.Object {
		i := pick(r, objs, func(p *v1alpha1.AdminNetworkPolicy) bool { return len(p.Spec.Ingress) > 0 })
		anp := objs[i].Value.(*v1alpha1.AdminNetworkPolicy).DeepCopy()
		rule := &anp.Spec.Ingress[r.Intn(len(anp.Spec.Ingress))]
		rule.Action = []v1alpha1.AdminNetworkPolicyRuleAction{"Allow", "Deny", "Pass"}[r.Intn(3)]
		objs[i].Value = anp
		return objs
	}},
	{"stage or unstage an admin policy", true, func(r *rand.Rand, objs []source.Object) []source.Object {
		i := pick(r, objs, func(*v1alpha1.AdminNetworkPolicy) bool { return true })
		anp := objs[i].Value.(*v1alpha1.AdminNetworkPolicy).DeepCopy()
		if anp.Annotations[policy.StagedAnnotation] == "true" {
			delete(anp.Annotations, policy.StagedAnnotation)
		} else {
			anp.Annotations = map[string]string{policy.StagedAnnotation: "true"}
		}
		objs[i].Value = anp
		return objs
	}},
	{"delete a pod", true, func(r *rand.Rand, objs []source.Object) []source.Object {
		i := pick(r, objs, anyPod)
		return slices.Delete(objs, i, i+1)
	}},
	{"create a pod", true, func(r *rand.Rand, objs []source.Object) []source.Object {
		o := objs[pick(r, objs, func(p *corev1.Pod) bool { return p.Spec.NodeName != "" })]
		p := o.Value.(*corev1.Pod).DeepCopy()
		created++
		p.Name = fmt.Sprintf("%s-new-%d", p.Name, created)
		p.Status.PodIP = fmt.Sprintf("198.19.250.%d", created) // the generator assigns none this high
		o.Name, o.Value = p.Name, p
		i, _ := slices.BinarySearchFunc(objs, o, byKey)
		return slices.Insert(objs, i, o)
	}},
	{"create a pod without an address (netpol assigns one: built anew)", false, func(r *rand.Rand, objs []source.Object) []source.Object {
		o := objs[pick(r, objs, anyPod)]
		p := o.Value.(*corev1.Pod).DeepCopy()
		created++
		p.Name, p.Status.PodIP, p.Status.PodIPs = fmt.Sprintf("%s-noip-%d", p.Name, created), "", nil
		o.Name, o.Value = p.Name, p
		i, _ := slices.BinarySearchFunc(objs, o, byKey)
		return slices.Insert(objs, i, o)
	}},
	{"relabel a namespace", false, func(r *rand.Rand, objs []source.Object) []source.Object {
		i := pick(r, objs, func(*corev1.Namespace) bool { return true })
		ns := objs[i].Value.(*corev1.Namespace).DeepCopy()
		ns.Labels["env"] = []string{"prod", "staging", "dev"}[r.Intn(3)]
		objs[i].Value = ns
		return objs
	}},
}

// TestBuilderAgreesWithBuild applies random changes to a 1k-pod cluster on
// 10 nodes and checks after each that the incremental path (pipeline.Builder
// and a compile.Compiler per node, carried from change to change) gives
// what building from scratch gives: the same IR text on every node and the
// same verdicts on sampled flows. It also checks that the changes that can
// be made in place were (the snapshots share the untouched pods), so that
// the comparison covers the incremental code and not only its fallback.
func TestBuilderAgreesWithBuild(t *testing.T) {
	size := synth.Size1k
	size.Nodes = 10
	objs := synth.Cluster(size)
	slices.SortFunc(objs, byKey) // as the kube mirror hands them out
	r := rand.New(rand.NewSource(7))
	b := &pipeline.Builder{Options: pipeline.Options{SkipInvalid: true}}
	compilers := make([]compile.Compiler, size.Nodes)
	var last *engine.Engine
	steps := 60
	if testing.Short() {
		steps = 20
	}
	for step := range steps {
		ch := changes[step%len(changes)]
		if step > 0 {
			objs = ch.apply(r, slices.Clone(objs))
		}
		inc, _, err := b.Build(objs, nil)
		if err != nil {
			t.Fatalf("step %d (%s): %v", step, ch.name, err)
		}
		fresh, _, err := pipeline.Build(objs, nil, pipeline.Options{SkipInvalid: true})
		if err != nil {
			t.Fatal(err)
		}
		if last != nil {
			// Built in place: most of the first pods are the last snapshot's.
			same := 0
			for _, p := range inc.Cluster().Pods[:10] {
				if last.Cluster().Pod(p.Key()) == p {
					same++
				}
			}
			if shared := same >= 8; shared != ch.inPlace {
				t.Errorf("step %d (%s): snapshot shares pods with the last one: %v, want %v", step, ch.name, shared, ch.inPlace)
			}
		}
		last = inc
		for n := range size.Nodes {
			node := synth.NodeName(n)
			var got, want bytes.Buffer
			if err := compile.WriteText(&got, compilers[n].Node(inc, node)); err != nil {
				t.Fatal(err)
			}
			if err := compile.WriteText(&want, compile.Node(fresh, node)); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Fatalf("step %d (%s): IR of %s differs from a fresh build:\n%s", step, ch.name, node, firstDiff(got.String(), want.String()))
			}
		}
		pods := fresh.Cluster().Pods
		for range 300 {
			src, dst := pods[r.Intn(len(pods))], pods[r.Intn(len(pods))]
			port := l4.Port{Proto: l4.TCP, Num: []uint16{53, 80, 443, 5432, 8080, 8050, 9090}[r.Intn(7)]}
			f := func(e *engine.Engine) engine.Flow {
				c := e.Cluster()
				return engine.Flow{Src: e.PodEndpoint(c.Pod(src.Key()), netip.Addr{}), Dst: e.PodEndpoint(c.Pod(dst.Key()), netip.Addr{}), Port: port}
			}
			if a, w := inc.Allowed(f(inc)), fresh.Allowed(f(fresh)); a != w {
				t.Fatalf("step %d (%s): %s -> %s %s allowed=%v, a fresh build says %v", step, ch.name, src.Key(), dst.Key(), port, a, w)
			}
		}
	}
}

func firstDiff(a, b string) string {
	la, lb := bytes.Split([]byte(a), []byte("\n")), bytes.Split([]byte(b), []byte("\n"))
	for i := range min(len(la), len(lb)) {
		if !bytes.Equal(la[i], lb[i]) {
			return fmt.Sprintf("line %d:\n  incremental: %s\n  fresh:       %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(la), len(lb))
}

// TestNodeBuilderAgreesWithBuild: an engine built for one node
// (Options.Node, which leaves out the NetworkPolicies of namespaces where
// the node runs no pod) compiles the same IR for that node as an engine
// over everything, through the same changes as TestBuilderAgreesWithBuild
// (pods created, deleted, relabelled and moved, policies changed).
func TestNodeBuilderAgreesWithBuild(t *testing.T) {
	// Pods with their addresses, as from a cluster: made-up addresses
	// depend on the history of an incremental build (a pod that probed
	// past a deleted one's keeps its address), which is not this test's.
	size := synth.Size1k
	size.Nodes, size.Running = 60, true // ~17 pods a node: most namespaces have none there
	objs := synth.Cluster(size)
	slices.SortFunc(objs, byKey)
	r := rand.New(rand.NewSource(11))
	nodes := []string{synth.NodeName(0), synth.NodeName(7), synth.NodeName(59)}
	builders := make([]*pipeline.Builder, len(nodes))
	compilers := make([]compile.Compiler, len(nodes))
	for i, node := range nodes {
		builders[i] = &pipeline.Builder{Options: pipeline.Options{SkipInvalid: true, Node: node}}
	}
	steps := 40
	if testing.Short() {
		steps = 12
	}
	for step := range steps {
		ch := changes[step%len(changes)]
		if step > 0 {
			objs = ch.apply(r, slices.Clone(objs))
		}
		fresh, _, err := pipeline.Build(objs, nil, pipeline.Options{SkipInvalid: true})
		if err != nil {
			t.Fatal(err)
		}
		for i, node := range nodes {
			e, _, err := builders[i].Build(objs, nil)
			if err != nil {
				t.Fatalf("step %d (%s), %s: %v", step, ch.name, node, err)
			}
			if step == 0 && len(e.Policies().Policies()) >= len(fresh.Policies().Policies()) {
				t.Fatalf("%s: %d policies, as many as the whole cluster's %d", node, len(e.Policies().Policies()), len(fresh.Policies().Policies()))
			}
			var got, want bytes.Buffer
			if err := compile.WriteText(&got, compilers[i].Node(e, node)); err != nil {
				t.Fatal(err)
			}
			if err := compile.WriteText(&want, compile.Node(fresh, node)); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Fatalf("step %d (%s): IR of %s differs from a build over everything:\n%s", step, ch.name, node, firstDiff(got.String(), want.String()))
			}
		}
	}
}
