package agent_test

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/netnstest"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// sliceInput hands the agent objects that the benchmark edits in place, as
// the kube mirror does: a changed object gets a new value, the others keep
// theirs.
type sliceInput struct {
	objs []source.Object
	gen  int
}

func (s *sliceInput) Read() ([]source.Object, diag.List, string, error) {
	return s.objs, nil, strconv.Itoa(s.gen), nil
}

func (s *sliceInput) Changed() <-chan struct{} { return nil }

// changed returns the pod and the NetworkPolicy that the benchmarks change:
// the first pod of node (not kube-system's) and the first policy with
// ingress rules, in the generator's order.
func changed(objs []source.Object, node string) (*corev1.Pod, *networkingv1.NetworkPolicy) {
	var pod *corev1.Pod
	var np *networkingv1.NetworkPolicy
	for _, o := range objs {
		if p, ok := o.Value.(*corev1.Pod); ok && pod == nil && p.Spec.NodeName == node && p.Namespace != "kube-system" {
			pod = p
		}
		if p, ok := o.Value.(*networkingv1.NetworkPolicy); ok && np == nil && len(p.Spec.Ingress) > 0 {
			np = p
		}
	}
	return pod, np
}

// inKernel calls fn with a renderer over the real kernel, nft and netlink,
// in a network namespace of its own (iface is its nft).
func inKernel(b *testing.B, fn func(r *nft.Renderer, iface knftables.Interface)) {
	netnstest.Run(b, func() {
		iface, err := knftables.New(knftables.InetFamily, nft.TableName)
		if err != nil {
			b.Fatal(err)
		}
		r := nft.New(iface)
		r.WriteElementsWith(dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName})
		r.ListObjectsWith(dataplane.Objects{Family: unix.NFPROTO_INET, Table: nft.TableName})
		fn(r, iface)
	})
}

func byKey(a, b source.Object) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}

// BenchmarkPass times the agent's pass on node-001 of the 10k-pod cluster
// (100 nodes) without an API server: the same changes as
// BenchmarkChangeToProgrammed — a pod's app label flipped, a NetworkPolicy's
// port changed — and a third, a pod of node-001 created or deleted, in
// turn, made to the objects in memory, then one pass: build, compile, nft
// and netlink in a network namespace of its own. relabel-ms, policy-ms and
// pod-churn-ms are the mean pass of each kind.
//
//	go test ./internal/agent -run XXX -bench 'Pass$' -benchtime 200x
func BenchmarkPass(b *testing.B) {
	size := synth.Size10k
	size.Nodes = 100
	objs := synth.Cluster(size)
	node := synth.NodeName(0)
	pod, np := changed(objs, node)
	// The objects in the order of the kube mirror: by kind, namespace and
	// name.
	slices.SortFunc(objs, byKey)
	podAt := slices.IndexFunc(objs, func(o source.Object) bool { return o.Value == any(pod) })
	npAt := slices.IndexFunc(objs, func(o source.Object) bool { return o.Value == any(np) })
	in := &sliceInput{objs: objs}
	inKernel(b, func(r *nft.Renderer, _ knftables.Interface) {
		a := agent.New(agent.Config{Node: node, Input: in, Pipeline: pipeline.Options{SkipInvalid: true}}, r, nil)
		ctx := context.Background()
		if err := a.Pass(ctx); err != nil {
			b.Fatal(err)
		}
		var took [3]time.Duration // relabels, policy changes, pods created or deleted
		var n [3]int
		at := func(v any) int { return slices.IndexFunc(in.objs, func(o source.Object) bool { return o.Value == v }) }
		// The churning pod: a copy of the relabelled one, under a name of
		// its own, created and deleted in turn.
		extra := in.objs[podAt]
		extraPod := extra.Value.(*corev1.Pod).DeepCopy()
		// With its address, as a kubelet reports it (netpol assigns the
		// generator's pods theirs from 198.18.1.0 up).
		extraPod.Name, extraPod.Status.PodIP, extraPod.Status.PodIPs = extraPod.Name+"-churn", "198.18.0.200", nil
		extra.Name, extra.Value = extraPod.Name, extraPod
		for b.Loop() {
			in.gen++
			kind := in.gen % 3
			switch kind {
			case 2:
				if i := at(extra.Value); i >= 0 {
					in.objs = slices.Delete(in.objs, i, i+1)
				} else {
					i, _ := slices.BinarySearchFunc(in.objs, extra, byKey)
					in.objs = slices.Insert(in.objs, i, extra)
				}
				podAt, npAt = at(in.objs[podAt].Value), at(in.objs[npAt].Value)
			case 0:
				p := in.objs[podAt].Value.(*corev1.Pod).DeepCopy()
				if p.Labels["app"] == "cache" {
					p.Labels["app"] = "db"
				} else {
					p.Labels["app"] = "cache"
				}
				in.objs[podAt].Value = p
			case 1:
				np := in.objs[npAt].Value.(*networkingv1.NetworkPolicy).DeepCopy()
				port := intstr.FromInt32(int32(20000 + in.gen))
				// As the other benchmark's merge patch: one rule, one port.
				np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: &port}}}}
				in.objs[npAt].Value = np
			}
			start := time.Now()
			if err := a.Pass(ctx); err != nil {
				b.Fatal(err)
			}
			took[kind] += time.Since(start)
			n[kind]++
		}
		for kind, unit := range []string{"relabel-ms", "policy-ms", "pod-churn-ms"} {
			if n[kind] > 0 {
				b.ReportMetric(float64(took[kind].Microseconds())/1000/float64(n[kind]), unit)
			}
		}
	})
}
