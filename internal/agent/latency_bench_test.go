package agent_test

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/kubetest"
	"github.com/netpol/netpol/internal/netnstest"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/source/kube"
	"github.com/netpol/netpol/internal/synth"
)

// BenchmarkChangeToProgrammed measures the latency from a change written
// to a real API server to the kernel enforcing it, on node-001 of the
// 10k-pod cluster (10,000 NetworkPolicies, 100 AdminNetworkPolicies, 100
// nodes). Each of the 1,000 changes alternates between relabelling a pod
// of node-001 (a selector membership changes) and changing a port of a
// NetworkPolicy (a chain is rewritten); the relabel flips the pod's app
// label, so it leaves some selectors and joins others (set elements, sent
// over netlink unless its own tables change too). The clock runs from
// just before the write to the end of
// the agent pass whose nftables transaction includes it. The agent is the
// real one, in-process, on a knftables interface in a network namespace of
// its own. Loading the cluster (about 40k requests) is not timed.
//
//	go test ./internal/agent -run XXX -bench ChangeToProgrammed -benchtime 1x -timeout 60m
func BenchmarkChangeToProgrammed(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root (nftables)")
	}
	c := kubetest.Start(b)
	// Ends the watch before the API server stops (cleanups run last
	// first): a server with open watches does not stop gracefully.
	ctx := b.Context()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		b.Fatal(err)
	}
	size := synth.Size10k
	size.Nodes = 100
	objs := synth.Cluster(size)
	manifests := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Value) // keeps their TypeMeta
		if err != nil {
			b.Fatal(err)
		}
		manifests[i] = &unstructured.Unstructured{Object: m}
	}
	if err := c.Create(ctx, manifests); err != nil {
		b.Fatal(err)
	}

	w, err := kube.NewWatch(c.Config, source.Options{})
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	// nft runs in a network namespace of its own (netnstest), the API
	// server outside it.
	netnstest.Run(b, func() { measureChanges(b, w, cs, objs) })
}

// measureChanges runs the agent of node-001 on w in the calling thread's
// network namespace, and times the changes written through cs.
func measureChanges(b *testing.B, w *kube.Watch, cs kubernetes.Interface, objs []source.Object) {
	ctx := b.Context()
	iface, err := knftables.New(knftables.InetFamily, nft.TableName)
	if err != nil {
		b.Fatal(err)
	}
	in := &marked{Watch: w}
	node := synth.NodeName(0)
	renderer := nft.New(iface)
	renderer.WriteElementsWith(dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName})
	// As `netpol agent` runs: the conntrack cut after every pass that
	// changes the kernel (in the background, as in Run), the drift check
	// after every pass.
	a := agent.New(agent.Config{Node: node, Input: in, Pipeline: pipeline.Options{SkipInvalid: true},
		Conntrack: dataplane.Conntrack{}, Generation: dataplane.Generation}, renderer, nil)
	a.CutInBackground(ctx) // as Run does
	if err := a.Pass(ctx); err != nil {
		b.Fatal(err)
	}
	b.Logf("initial sync: %s, %d local pods, %d tables", a.Status().Took, a.Status().Pods, a.Status().Tables)
	// The watch may still be delivering the load (the pods' status writes
	// come after them): programme it until it is quiet for 2 s, so that no
	// change is measured with the catch-up.
	for settled := false; !settled; {
		select {
		case <-w.Changed():
			if err := a.Pass(ctx); err != nil {
				b.Fatal(err)
			}
		case <-time.After(2 * time.Second):
			settled = true
		}
	}
	b.Logf("settled: %d local pods, %d tables", a.Status().Pods, a.Status().Tables)

	pod, np := changed(objs, node)
	apps := [2]string{"cache", pod.Labels["app"]}
	if apps[1] == "cache" {
		apps[0] = "db"
	}
	const changes = 1000
	lat := make([]time.Duration, 0, changes)
	var api []time.Duration
	viaNetlink := 0
	for b.Loop() {
		lat, api = lat[:0], api[:0]
		for i := range changes {
			var change func() error
			if i%2 == 0 {
				// The pod moves between the selectors of its app and of
				// another: set elements change, and its own tables may.
				label := apps[i/2%2]
				in.want = func(o source.Object) bool {
					p, ok := o.Value.(*corev1.Pod)
					return ok && p.Namespace == pod.Namespace && p.Name == pod.Name && p.Labels["app"] == label
				}
				change = func() error {
					patch := fmt.Sprintf(`{"metadata":{"labels":{"app":%q}}}`, label)
					_, err := cs.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{})
					return err
				}
			} else {
				port := int32(20000 + i)
				in.want = func(o source.Object) bool {
					p, ok := o.Value.(*networkingv1.NetworkPolicy)
					return ok && p.Namespace == np.Namespace && p.Name == np.Name && len(p.Spec.Ingress) > 0 &&
						len(p.Spec.Ingress[0].Ports) > 0 && p.Spec.Ingress[0].Ports[0].Port.IntVal == port
				}
				change = func() error {
					patch := fmt.Sprintf(`{"spec":{"ingress":[{"ports":[{"port":%d}]}]}}`, port)
					_, err := cs.NetworkingV1().NetworkPolicies(np.Namespace).Patch(ctx, np.Name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{})
					return err
				}
			}
			in.seen = false
			start := time.Now()
			if err := change(); err != nil {
				b.Fatal(err)
			}
			deadline := time.After(time.Minute) // a bound on a hang
			for !in.seen {
				select {
				case <-w.Changed():
				case <-deadline:
					b.Fatalf("change %d never reached the agent", i)
				}
				if err := a.Pass(ctx); err != nil {
					b.Fatal(err)
				}
				if err := a.CheckKernel(ctx); err != nil {
					b.Fatal(err)
				}
			}
			lat = append(lat, time.Since(start))
			// The part before the watch received the change: the API
			// server's write and its watch (on the same two cores).
			if n := w.Noticed(); !n.IsZero() {
				api = append(api, n.Sub(start))
			}
			if a.Status().Stats.Netlink {
				viaNetlink++
			}
		}
	}
	slices.Sort(lat)
	slices.Sort(api)
	q := func(d []time.Duration, p float64) float64 {
		return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000
	}
	b.Logf("%d changes: p50 %.1f ms, p99 %.1f ms, max %.1f ms; of which until the watch had them: p50 %.1f ms, p99 %.1f ms",
		len(lat), q(lat, 0.50), q(lat, 0.99), q(lat, 1), q(api, 0.50), q(api, 0.99))
	b.ReportMetric(q(lat, 0.50), "p50-ms")
	b.ReportMetric(q(lat, 0.99), "p99-ms")
	b.ReportMetric(q(lat, 1), "max-ms")
	b.ReportMetric(q(api, 0.50), "watch-p50-ms")
	b.ReportMetric(q(api, 0.99), "watch-p99-ms")
	b.ReportMetric(float64(viaNetlink), "netlink-changes")
}

// marked is the watch as the agent's input, noting whether the last Read
// returned the change the benchmark waits for.
type marked struct {
	*kube.Watch
	want func(source.Object) bool
	seen bool
}

func (m *marked) Read() ([]source.Object, diag.List, string, error) {
	objs, diags, fp, err := m.Watch.Read()
	if m.want != nil {
		m.seen = m.seen || slices.ContainsFunc(objs, m.want)
	}
	return objs, diags, fp, err
}
