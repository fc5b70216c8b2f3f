package kube_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/kubetest"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/source/kube"
)

// The cluster of these tests: namespace shop with pods web, frontend and
// batch; web accepts only frontend (a NetworkPolicy); an
// AdminNetworkPolicy denies everything from namespace untrusted, where the
// pod intruder lives; a ClusterNetworkPolicy in the Admin tier allows the
// monitoring namespace before either.
const cluster = core + admin

// core is the cluster without its admin policies, which need the
// network-policy-api CRDs.
const core = `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Namespace
metadata: {name: untrusted}
---
apiVersion: v1
kind: Namespace
metadata: {name: monitoring}
` + pods + `
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {selector: {app: web}, ports: [{name: http, port: 80, targetPort: http}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {matchLabels: {app: frontend}}}]}]
`

const admin = `
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: quarantine}
spec:
  priority: 20
  subject: {namespaces: {}}
  ingress: [{name: untrusted, action: Deny, from: [{namespaces: {matchLabels: {kubernetes.io/metadata.name: untrusted}}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: monitoring}
spec:
  tier: Admin
  priority: 10
  subject: {namespaces: {}}
  ingress: [{name: scrape, action: Accept, from: [{namespaces: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}]}]
`

const pods = `
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec: {nodeName: node-1, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: frontend, namespace: shop, labels: {app: frontend}}
spec: {nodeName: node-1, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.2}
---
apiVersion: v1
kind: Pod
metadata: {name: batch, namespace: shop, labels: {app: batch}}
spec: {nodeName: node-1, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.3}
---
apiVersion: v1
kind: Pod
metadata: {name: intruder, namespace: untrusted, labels: {app: frontend}}
spec: {nodeName: node-1, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.2.1}
---
apiVersion: v1
kind: Pod
metadata: {name: prometheus, namespace: monitoring, labels: {app: prometheus}}
spec: {nodeName: node-1, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.3.1}
`

// start runs a control plane holding cluster.
func start(t *testing.T) (*kubetest.Cluster, kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	c := kubetest.Start(t)
	objs, err := kubetest.Manifests(cluster)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), objs); err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	return c, cs, dyn
}

func build(t *testing.T, objs []source.Object) *engine.Engine {
	t.Helper()
	e, _, err := pipeline.Build(objs, nil, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func allowed(t *testing.T, e *engine.Engine, from, to string) bool {
	t.Helper()
	src, err := e.Endpoint(from)
	if err != nil {
		t.Fatal(err)
	}
	dst, err := e.Endpoint(to)
	if err != nil {
		t.Fatal(err)
	}
	return e.Allowed(engine.Flow{Src: src, Dst: dst, Port: l4.Port{Proto: l4.TCP, Num: 8080}})
}

// TestKubeListDecidesLikeFiles reads the cluster once, as `netpol matrix
// --kubeconfig` does, and checks verdicts that need every kind: the
// NetworkPolicy, the ANP and the CNP, pod IPs from the status, and the
// namespace name label the API server adds.
func TestKubeListDecidesLikeFiles(t *testing.T) {
	c, _, _ := start(t)
	ctx := t.Context()

	objs, diags, err := kube.List(ctx, c.Config, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := diags.Err(); err != nil {
		t.Fatalf("decoding the cluster's objects: %v", err)
	}
	e := build(t, objs)
	// The Service and its backend, from the selector: no controller-manager
	// runs here to write EndpointSlices.
	svc := e.Cluster().Service("shop", "web")
	if svc == nil || len(svc.ClusterIPs) == 0 || len(svc.Ports) != 1 || len(svc.Ports[0].Backends) != 1 {
		t.Fatalf("Service shop/web: got %+v, want one port with one backend", svc)
	}
	if b := svc.Ports[0].Backends[0]; b.Pod == nil || b.Pod.Key() != "shop/web" || b.Port.String() != "8080/tcp" {
		t.Errorf("backend of shop/web http: got %+v, want shop/web on 8080/tcp", b)
	}
	for _, c := range []struct {
		from, to string
		want     bool
	}{
		{"shop/frontend", "shop/web", true},         // the NetworkPolicy allows it
		{"shop/batch", "shop/web", false},           // isolated by the NetworkPolicy
		{"untrusted/intruder", "shop/web", false},   // the ANP denies before the NP allows frontends
		{"untrusted/intruder", "shop/batch", false}, // the ANP denies
		{"monitoring/prometheus", "shop/web", true}, // the CNP accepts before the NP isolates
		{"shop/web", "untrusted/intruder", true},    // the ANP denies only what comes from untrusted
		{"198.18.1.3", "198.18.1.2", true},          // by IP: batch -> frontend, nothing isolates frontend
		{"shop/batch", "monitoring/prometheus", true},
	} {
		if got := allowed(t, e, c.from, c.to); got != c.want {
			t.Errorf("%s -> %s: allowed %v, want %v", c.from, c.to, got, c.want)
		}
	}
}

// TestKubeWatchFollowsChanges mirrors the cluster with informers: a pod
// relabel and a policy deletion each arrive as a change, and the snapshot
// then decides differently.
func TestKubeWatchFollowsChanges(t *testing.T) {
	c, cs, dyn := start(t)
	ctx := t.Context()

	w := startWatch(t, c, kube.WatchOptions{})
	objs, _, before := w.Snapshot()
	if allowed(t, build(t, objs), "shop/batch", "shop/web") {
		t.Fatal("batch -> web allowed before the relabel")
	}

	relabelBatch(t, cs)
	waitFor(t, w, before, func(e *engine.Engine) bool { return allowed(t, e, "shop/batch", "shop/web") })

	_, _, v := w.Snapshot()
	if err := dyn.Resource(kube.ANP).Delete(ctx, "quarantine", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, v, func(e *engine.Engine) bool { return allowed(t, e, "untrusted/intruder", "shop/batch") })
}

// startWatch starts a watch of c.
func startWatch(t *testing.T, c *kubetest.Cluster, opts kube.WatchOptions) *kube.Watch {
	t.Helper()
	w, err := kube.NewWatchWithOptions(c.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return w
}

// relabelBatch makes batch a frontend, which web's NetworkPolicy admits.
func relabelBatch(t *testing.T, cs kubernetes.Interface) {
	t.Helper()
	batch, err := cs.CoreV1().Pods("shop").Get(t.Context(), "batch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	batch.Labels["app"] = "frontend"
	if _, err := cs.CoreV1().Pods("shop").Update(t.Context(), batch, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitFor waits for changes after version until cond holds on the snapshot.
func waitFor(t *testing.T, w *kube.Watch, version string, cond func(*engine.Engine) bool) {
	t.Helper()
	deadline := time.After(30 * time.Second) // a bound on a hang, not a performance assertion
	for {
		select {
		case <-w.Changed():
		case <-deadline:
			t.Fatal("the watch never showed the change")
		}
		objs, _, v := w.Snapshot()
		if v == version {
			continue
		}
		if cond(build(t, objs)) {
			return
		}
	}
}

// TestKubeWatchStartHoldsTheFirstList: when Start returns, a snapshot has
// every object of the first list, not only those the event handlers got to
// (an agent's first pass must not program part of the cluster).
func TestKubeWatchStartHoldsTheFirstList(t *testing.T) {
	c := kubetest.Start(t)
	var stream strings.Builder
	stream.WriteString("apiVersion: v1\nkind: Namespace\nmetadata: {name: many}\n")
	const pods = 1000
	for i := range pods {
		fmt.Fprintf(&stream, "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d, namespace: many, labels: {app: a}}\nspec: {containers: [{name: c}]}\n", i)
	}
	objs, err := kubetest.Manifests(stream.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(t.Context(), objs); err != nil {
		t.Fatal(err)
	}
	w := startWatch(t, c, kube.WatchOptions{})
	snapshot, _, _ := w.Snapshot()
	n := 0
	for _, o := range snapshot {
		if o.Kind == "Pod" && o.Namespace == "many" {
			n++
		}
	}
	if n != pods {
		t.Errorf("the first snapshot after Start has %d of the %d pods", n, pods)
	}
}

// TestKubeWatchCompactPods: an agent's watch (CompactPods) keeps its pods
// as source.Pod from the informer on, without a JSON round trip, and
// decides as the typed watch does, through a relabel too.
func TestKubeWatchCompactPods(t *testing.T) {
	c, cs, _ := start(t)
	typed := startWatch(t, c, kube.WatchOptions{})
	compact := startWatch(t, c, kube.WatchOptions{Source: source.Options{CompactPods: true}})
	typedObjs, _, _ := typed.Snapshot()
	objs, diags, before := compact.Snapshot()
	if err := diags.Err(); err != nil {
		t.Fatal(err)
	}
	pods := 0
	for _, o := range objs {
		if o.Kind != "Pod" {
			continue
		}
		pods++
		if _, ok := o.Value.(*source.Pod); !ok {
			t.Fatalf("%s is a %T, want a *source.Pod", o.Ref(), o.Value)
		}
	}
	if pods != 5 {
		t.Fatalf("%d pods, want 5", pods)
	}
	te, ce := build(t, typedObjs), build(t, objs)
	for _, f := range [][2]string{{"shop/frontend", "shop/web"}, {"shop/batch", "shop/web"}, {"untrusted/intruder", "shop/web"},
		{"monitoring/prometheus", "shop/web"}, {"198.18.1.3", "198.18.1.2"}, {"shop/web", "untrusted/intruder"}} {
		if a, b := allowed(t, te, f[0], f[1]), allowed(t, ce, f[0], f[1]); a != b {
			t.Errorf("%s -> %s: typed %v, compact %v", f[0], f[1], a, b)
		}
	}
	relabelBatch(t, cs)
	waitFor(t, compact, before, func(e *engine.Engine) bool { return allowed(t, e, "shop/batch", "shop/web") })
}

// TestKubeWatchSpeaksProtobuf: the built-in kinds (pods, namespaces,
// nodes, NetworkPolicies) come as protobuf, as kube-proxy's do (client-go's
// typed clients ask for it): every node lists and watches every pod, and
// protobuf is fewer bytes for the API server to send and for the agent to
// decode than JSON. A guard: a config that asked for JSON would fail it.
// The admin policies are custom resources, which only speak JSON.
func TestKubeWatchSpeaksProtobuf(t *testing.T) {
	c, cs, _ := start(t)
	var mu sync.Mutex
	seen := map[string]string{} // resource path -> content type of its answers
	cfg := rest.CopyConfig(c.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err == nil {
				mu.Lock()
				seen[strings.TrimPrefix(r.URL.Path, "/apis")] = resp.Header.Get("Content-Type")
				mu.Unlock()
			}
			return resp, err
		})
	})
	w, err := kube.NewWatchWithOptions(cfg, kube.WatchOptions{Source: source.Options{CompactPods: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, _, before := w.Snapshot()
	relabelBatch(t, cs) // a watch event as well as the lists
	waitFor(t, w, before, func(e *engine.Engine) bool { return allowed(t, e, "shop/batch", "shop/web") })
	mu.Lock()
	defer mu.Unlock()
	for _, path := range []string{"/api/v1/pods", "/api/v1/namespaces", "/api/v1/nodes", "/networking.k8s.io/v1/networkpolicies"} {
		if got := seen[path]; got != "application/vnd.kubernetes.protobuf" && got != "application/vnd.kubernetes.protobuf;stream=watch" {
			t.Errorf("%s came as %q, want protobuf", path, got)
		}
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
