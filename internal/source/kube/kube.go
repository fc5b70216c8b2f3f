// Package kube is the Kubernetes source: it reads the objects policy needs
// from an API server, through the same decoder as the file source, so the
// layers below see the same objects whether they came from YAML files or
// from a cluster. List reads once (the CLI); Watch keeps a mirror current
// with informers and says when it changed (the agent). It imports source
// and diag, and nothing below it.
package kube

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/source"
)

// kinds of the core resources, to restore the TypeMeta that the API server
// leaves out of list items and watch events.
var (
	kindNamespace     = metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}
	kindPod           = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	kindNode          = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
	kindNetworkPolicy = metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"}
	kindService       = metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}
	kindEndpointSlice = metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"}
)

// List reads every object policy needs once, as the CLI does for a live
// cluster.
func List(ctx context.Context, cfg *rest.Config, opts source.Options) ([]source.Object, diag.List, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	m := newMirror(opts)
	list := metav1.ListOptions{}
	nss, err := cs.CoreV1().Namespaces().List(ctx, list)
	if err != nil {
		return nil, nil, fmt.Errorf("listing namespaces: %w", err)
	}
	for i := range nss.Items {
		m.set(&nss.Items[i], kindNamespace)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, list)
	if err != nil {
		return nil, nil, fmt.Errorf("listing nodes: %w", err)
	}
	for i := range nodes.Items {
		m.set(StripNode(&nodes.Items[i]), kindNode)
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, list)
	if err != nil {
		return nil, nil, fmt.Errorf("listing pods: %w", err)
	}
	for i := range pods.Items {
		m.set(withReady(StripPod(&pods.Items[i]), &pods.Items[i]), kindPod)
	}
	// Services and EndpointSlices are read once here, for explain, matrix
	// and lint; the agent's Watch does not watch them, as they never change
	// the programmed rules. Nor does policy: a user whose RBAC was written
	// for the agent gets the policies' answers, and a warning.
	var unreadable diag.List
	forbidden := func(kind string, err error) bool {
		if !apierrors.IsForbidden(err) {
			return false
		}
		unreadable = append(unreadable, diag.Diagnostic{Severity: diag.Warning, Origin: diag.Origin{File: "cluster"},
			Message: fmt.Sprintf("cannot list %s (%v): flows to Services and their checks see none", kind, err)})
		return true
	}
	svcs, err := cs.CoreV1().Services("").List(ctx, list)
	switch {
	case err == nil:
		for i := range svcs.Items {
			m.set(&svcs.Items[i], kindService)
		}
	case !forbidden("Services", err):
		return nil, nil, fmt.Errorf("listing Services: %w", err)
	}
	eps, err := cs.DiscoveryV1().EndpointSlices("").List(ctx, list)
	switch {
	case err == nil:
		for i := range eps.Items {
			m.set(&eps.Items[i], kindEndpointSlice)
		}
	case !forbidden("EndpointSlices", err):
		return nil, nil, fmt.Errorf("listing EndpointSlices: %w", err)
	}
	nps, err := cs.NetworkingV1().NetworkPolicies("").List(ctx, list)
	if err != nil {
		return nil, nil, fmt.Errorf("listing NetworkPolicies: %w", err)
	}
	for i := range nps.Items {
		m.set(&nps.Items[i], kindNetworkPolicy)
	}
	served, err := servedAdminResources(cs.Discovery())
	if err != nil {
		return nil, nil, err
	}
	for _, gvr := range served {
		l, err := dyn.Resource(gvr).List(ctx, list)
		if err != nil {
			return nil, nil, fmt.Errorf("listing %s: %w", gvr.Resource, err)
		}
		for i := range l.Items {
			m.set(&l.Items[i], metav1.TypeMeta{})
		}
	}
	objs, diags, _ := m.snapshot()
	return objs, append(unreadable, diags...), nil
}

// StripPod keeps what policy needs of a pod: identity, labels, node,
// host networking, container ports and addresses, and the controller that
// made it (matrix --by workload). Informers hold every pod of the cluster,
// so the rest (specs, statuses, managed fields) would cost memory for
// nothing.
func StripPod(p *corev1.Pod) *corev1.Pod {
	out := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, UID: p.UID},
		Spec:       corev1.PodSpec{NodeName: p.Spec.NodeName, HostNetwork: p.Spec.HostNetwork},
		Status: corev1.PodStatus{Phase: p.Status.Phase, PodIP: p.Status.PodIP, PodIPs: p.Status.PodIPs,
			HostIP: p.Status.HostIP},
	}
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
		out.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	for _, c := range p.Spec.Containers {
		if len(c.Ports) > 0 {
			out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Ports: c.Ports})
		}
	}
	return out
}

// withReady adds the pod's Ready condition to its stripped copy: the
// endpoint controller leaves pods that are not ready out of their Services'
// backends. Only List keeps it; the agent's informers strip it, so that
// readiness flapping costs the agent nothing.
func withReady(stripped, p *corev1.Pod) *corev1.Pod {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			stripped.Status.Conditions = []corev1.PodCondition{{Type: c.Type, Status: c.Status}}
		}
	}
	return stripped
}

// StripNode keeps what policy needs of a node: its labels (node peers
// select them) and addresses. Nodes report status every few minutes; what
// is left changes only when policy could notice.
func StripNode(n *corev1.Node) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, UID: n.UID},
		Status:     corev1.NodeStatus{Addresses: n.Status.Addresses},
	}
}

// mirror holds the decoded objects by kind, namespace and name. Each object
// is decoded once, when it changes.
type mirror struct {
	opts    source.Options
	mu      sync.Mutex
	keys    []string  // "Kind/namespace/name", sorted: a snapshot never sorts 20k keys
	objects []decoded // in the order of keys
	// pending are objects whose keys are not in keys yet: merged in at
	// the next snapshot (merge).
	pending map[string]decoded
	version uint64
	// gens counts each kind's removals (removeKind): a write made for an
	// earlier generation is one an informer stopped before the removal
	// still delivers, and it must not bring the kind's objects back.
	gens map[string]int64
}

// anyGen marks a write that no removal voids (the core kinds, List).
const anyGen = -1

type decoded struct {
	// sum is the SHA-256 of what was decoded, to tell real changes from
	// no-ops without keeping a JSON copy of every object.
	sum   [sha256.Size]byte
	objs  []source.Object
	diags diag.List
}

func newMirror(opts source.Options) *mirror {
	return &mirror{opts: opts, gens: map[string]int64{}}
}

// generation returns the current generation of kind, for the handlers of
// an informer that starts now.
func (m *mirror) generation(kind string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gens[kind]
}

// set decodes obj (typed, with tm as its TypeMeta, or unstructured) and
// stores it, replacing its previous version. It reports whether anything
// policy sees changed: updates of what policy ignores (resource versions,
// managed fields, an admin policy's status, which agents write) are not
// changes, or every status write would make every agent recompute.
func (m *mirror) set(obj runtime.Object, tm metav1.TypeMeta) bool { return m.setIf(obj, tm, anyGen) }

// setIf is set for a write of generation gen of the object's kind: none
// when the kind was removed since (see gens).
func (m *mirror) setIf(obj runtime.Object, tm metav1.TypeMeta, gen int64) bool {
	acc, err := metaAccessor(obj)
	if err != nil {
		return false
	}
	if tm.Kind != "" {
		obj.GetObjectKind().SetGroupVersionKind(tm.GroupVersionKind())
	}
	acc.SetResourceVersion("")
	acc.SetManagedFields(nil)
	if u, ok := obj.(*unstructured.Unstructured); ok {
		unstructured.RemoveNestedField(u.Object, "status")
	}
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	key := kind + "/" + acc.GetNamespace() + "/" + acc.GetName()
	label := source.Object{Kind: kind, Namespace: acc.GetNamespace(), Name: acc.GetName()}.Ref()
	cp, compact := obj.(*compactPod)
	var data []byte
	if compact {
		data, err = json.Marshal(cp.Pod)
	} else {
		data, err = json.Marshal(obj)
	}
	d := decoded{sum: sumOf(data)}
	m.mu.Lock()
	last, found := m.lookup(key)
	same := found && err == nil && last.sum == d.sum
	m.mu.Unlock()
	if same {
		return false
	}
	switch {
	case err != nil:
		d.diags = diag.List{{Severity: diag.Error, Origin: diag.Origin{File: "cluster"}, Object: label, Message: err.Error()}}
	case compact:
		// Typed by the client and compact already: nothing to decode.
		d.objs = []source.Object{cp.object()}
	default:
		dec := &source.Decoder{Options: m.opts}
		d.objs = dec.Decode("cluster", data)
		d.diags = dec.Diags
		for i := range d.diags {
			if d.diags[i].Object == "" { // the decoder could not name it: we can
				d.diags[i].Object = label
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if gen != anyGen && m.gens[kind] != gen {
		return false // the kind was removed after this informer stopped
	}
	// Looked up again: another informer may have inserted a key meanwhile.
	if i, found := slices.BinarySearch(m.keys, key); found {
		m.objects[i] = d
	} else {
		if m.pending == nil {
			m.pending = map[string]decoded{}
		}
		m.pending[key] = d
	}
	m.version++
	return true
}

// lookup returns what the mirror holds under key.
func (m *mirror) lookup(key string) (decoded, bool) {
	if d, ok := m.pending[key]; ok {
		return d, true
	}
	if i, found := slices.BinarySearch(m.keys, key); found {
		return m.objects[i], true
	}
	return decoded{}, false
}

// merge moves the pending objects into the sorted ones, in one pass. Keys
// inserted one by one into the sorted slice cost a move of everything
// after them each: the first list of the 30k cluster (60,601 objects, the
// NetworkPolicies sorting before the pods that arrived first) took the
// agent 139 s.
func (m *mirror) merge() {
	if len(m.pending) == 0 {
		return
	}
	added := slices.Sorted(maps.Keys(m.pending))
	keys := make([]string, 0, len(m.keys)+len(added))
	objects := make([]decoded, 0, cap(keys))
	i := 0
	for _, key := range added {
		for ; i < len(m.keys) && m.keys[i] < key; i++ {
			keys, objects = append(keys, m.keys[i]), append(objects, m.objects[i])
		}
		keys, objects = append(keys, key), append(objects, m.pending[key])
	}
	keys, objects = append(keys, m.keys[i:]...), append(objects, m.objects[i:]...)
	m.keys, m.objects, m.pending = keys, objects, nil
}

// removeKind removes every object of a kind, and reports whether there was
// one.
func (m *mirror) removeKind(kind string) bool {
	prefix := kind + "/"
	m.mu.Lock()
	defer m.mu.Unlock()
	m.merge()
	m.gens[kind]++
	i, _ := slices.BinarySearch(m.keys, prefix)
	j := i
	for j < len(m.keys) && strings.HasPrefix(m.keys[j], prefix) {
		j++
	}
	if i == j {
		return false
	}
	m.keys, m.objects = slices.Delete(m.keys, i, j), slices.Delete(m.objects, i, j)
	m.version++
	return true
}

func (m *mirror) remove(obj any, kind string, gen int64) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	acc, err := metaAccessor(obj)
	if err != nil {
		return
	}
	key := kind + "/" + acc.GetNamespace() + "/" + acc.GetName()
	m.mu.Lock()
	defer m.mu.Unlock()
	if gen != anyGen && m.gens[kind] != gen {
		return
	}
	if _, ok := m.pending[key]; ok {
		delete(m.pending, key)
	} else if i, found := slices.BinarySearch(m.keys, key); found {
		m.keys, m.objects = slices.Delete(m.keys, i, i+1), slices.Delete(m.objects, i, i+1)
	}
	m.version++
}

// snapshot returns every object in a stable order (by kind, namespace and
// name), their decoding findings, and a version that changes whenever an
// object does.
func (m *mirror) snapshot() ([]source.Object, diag.List, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.merge()
	objs := make([]source.Object, 0, len(m.keys))
	var diags diag.List
	for _, d := range m.objects {
		objs = append(objs, d.objs...)
		diags = append(diags, d.diags...)
	}
	return objs, diags, "cluster-" + strconv.FormatUint(m.version, 10)
}

func metaAccessor(obj any) (metav1.Object, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T has no object metadata", obj)
	}
	return o, nil
}

// Watch mirrors the cluster with informers. Snapshot returns the current
// objects; Changed receives (coalesced) after every change.
//
// The admin policy resources are CRDs, which a cluster may lack, or install
// later. Discovery tells which the API server serves; until it has
// answered for each, the watch is not ready (Ready) and Read fails, rather
// than report a cluster without the admin policies it may have. It asks
// again, so that CRDs installed or removed later are followed.
type Watch struct {
	m       *mirror
	opts    WatchOptions
	clients clients
	changed chan struct{}
	core    []cache.SharedIndexInformer
	synced  []cache.InformerSynced // of core

	amu   sync.Mutex
	admin []*adminResource // in the order of adminResources

	mu      sync.Mutex
	pending time.Time // when the first change not yet read arrived
	noticed time.Time // pending as of the last Read
}

// WatchOptions configure a Watch; the zero value is the agent's default.
type WatchOptions struct {
	// Source are the decoder's options.
	Source source.Options
	// Recheck is how often discovery asks again about the admin policy
	// resources once it knows them all, to follow CRDs installed or
	// removed later. Default: a minute.
	Recheck time.Duration
	// Retry spaces the discovery attempts while some resource is unknown
	// (discovery failed for another reason than "not found"). Default:
	// 500 ms doubling to 8 s, jittered, so that a transient failure costs
	// seconds of readiness and a lasting one little load.
	Retry wait.Backoff
	// ConfirmAbsent is how long discovery must say that an admin policy
	// resource is not served, in at least three answers in a row with no
	// other answer between them, before a list of the resource is asked
	// to confirm it (a 404 too): only then is the resource known not to be
	// served, and a watched one dropped with its policies. Default: 10 s.
	ConfirmAbsent time.Duration
	// Recorder, when set, receives a Warning Event (EventDiscoveryFailed)
	// about Node when a resource's state becomes unknown.
	Recorder record.EventRecorder
	// Node is the node the Events are about; required with Recorder.
	Node string
	// AdminWait bounds how long Start waits for the first list of the
	// admin policy resources that discovery found served. Past it, Start
	// returns and the watch is not Ready until they are listed (a 403
	// never lists; a fresh API server answers watch-lists of custom
	// resources with Retry-After for seconds). Default: 10 s.
	AdminWait time.Duration
}

func (o *WatchOptions) complete() {
	if o.Recheck == 0 {
		o.Recheck = time.Minute
	}
	if o.AdminWait == 0 {
		o.AdminWait = 10 * time.Second
	}
	if o.ConfirmAbsent == 0 {
		o.ConfirmAbsent = 10 * time.Second
	}
	if o.Retry.Duration == 0 {
		o.Retry = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.5, Cap: 8 * time.Second, Steps: math.MaxInt32}
	}
}

func (o *WatchOptions) validate() error {
	if o.Recheck < 0 {
		return fmt.Errorf("negative discovery recheck period %v", o.Recheck)
	}
	if o.Recorder != nil && o.Node == "" {
		return fmt.Errorf("an event recorder needs the node the events are about")
	}
	return nil
}

// clients are what a watch reads the API server with; tests give fakes.
type clients struct {
	core kubernetes.Interface
	dyn  dynamic.Interface
	disc discovery.DiscoveryInterface
}

// NewWatch prepares the informers; Start runs them.
func NewWatch(cfg *rest.Config, opts source.Options) (*Watch, error) {
	return NewWatchWithOptions(cfg, WatchOptions{Source: opts})
}

// NewWatchWithOptions is NewWatch with the options of a Watch.
func NewWatchWithOptions(cfg *rest.Config, opts WatchOptions) (*Watch, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return newWatch(clients{core: cs, dyn: dyn, disc: cs.Discovery()}, opts)
}

func newWatch(c clients, opts WatchOptions) (*Watch, error) {
	opts.complete()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	w := &Watch{m: newMirror(opts.Source), opts: opts, clients: c, changed: make(chan struct{}, 1)}
	for _, r := range adminResources {
		w.admin = append(w.admin, &adminResource{gvr: r.gvr, kind: r.kind, err: errNotAsked})
	}
	cs := c.core
	typed := []struct {
		resource string
		lw       *cache.ListWatch
		obj      runtime.Object
		tm       metav1.TypeMeta
		// Informers keep every pod and node of the cluster: keep only
		// what policy reads.
		transform cache.TransformFunc
	}{
		{"namespaces", listWatch[*corev1.NamespaceList](cs.CoreV1().Namespaces()), &corev1.Namespace{}, kindNamespace, dropManagedFields},
		{"nodes", listWatch[*corev1.NodeList](cs.CoreV1().Nodes()), &corev1.Node{}, kindNode, func(obj any) (any, error) {
			if n, ok := obj.(*corev1.Node); ok {
				return StripNode(n), nil
			}
			return obj, nil
		}},
		{"pods", listWatch[*corev1.PodList](cs.CoreV1().Pods("")), &corev1.Pod{}, kindPod, func(obj any) (any, error) {
			p, ok := obj.(*corev1.Pod)
			switch {
			case !ok:
				return obj, nil
			case opts.Source.CompactPods:
				return compactPodOf(p), nil
			}
			return StripPod(p), nil
		}},
		{"networkpolicies", listWatch[*networkingv1.NetworkPolicyList](cs.NetworkingV1().NetworkPolicies("")), &networkingv1.NetworkPolicy{}, kindNetworkPolicy, dropManagedFields},
	}
	for _, t := range typed {
		inf := cache.NewSharedIndexInformerWithOptions(newReconnecting(t.lw, cs, t.resource), t.obj,
			cache.SharedIndexInformerOptions{})
		if t.transform != nil {
			if err := inf.SetTransform(t.transform); err != nil {
				return nil, err
			}
		}
		synced, err := w.watch(inf, t.tm, anyGen)
		if err != nil {
			return nil, err
		}
		w.core, w.synced = append(w.core, inf), append(w.synced, synced)
	}
	return w, nil
}

// listWatch lists and watches with a typed client of one resource (or a
// dynamic one: L is then *unstructured.UnstructuredList).
func listWatch[L runtime.Object](c interface {
	List(context.Context, metav1.ListOptions) (L, error)
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return c.List(ctx, opts)
		},
		WatchFuncWithContext: c.Watch,
	}
}

// watch mirrors what inf holds, as writes of generation gen (anyGen for
// the core kinds). The function it returns reports whether the mirror
// holds inf's first list.
func (w *Watch) watch(inf cache.SharedIndexInformer, tm metav1.TypeMeta, gen int64) (cache.InformerSynced, error) {
	kind := tm.Kind
	onSet := func(obj any) {
		ro, ok := obj.(runtime.Object)
		if !ok {
			return
		}
		ro = ro.DeepCopyObject() // the informer's cache is shared: never write to it
		if w.m.setIf(ro, tm, gen) {
			w.notify()
		}
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    onSet,
		UpdateFunc: func(_, obj any) { onSet(obj) },
		DeleteFunc: func(obj any) {
			k := kind
			if u, ok := obj.(*unstructured.Unstructured); ok {
				k = u.GetKind()
			} else if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				if u, ok := t.Obj.(*unstructured.Unstructured); ok {
					k = u.GetKind()
				}
			}
			w.m.remove(obj, k, gen)
			w.notify()
		},
	})
	if err != nil {
		return nil, fmt.Errorf("adding an event handler: %w", err)
	}
	// Synced once the handler has seen the first list, not only the
	// informer's cache: the mirror is what the agent reads.
	return reg.HasSynced, nil
}

func (w *Watch) notify() {
	w.mu.Lock()
	if w.pending.IsZero() {
		w.pending = time.Now()
	}
	w.mu.Unlock()
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// Start runs the informers until ctx is done and waits until the mirror
// holds their first list. While the API server is unreachable the
// informers retry and the mirror keeps what it had.
//
// Once the core objects are listed (the server answers), discovery asks
// which admin policy resources it serves and Start waits for the first
// list of those, at most AdminWait; if discovery fails or a list takes
// longer, Start returns anyway, the watch is not Ready, and discovery and
// the informers go on in the background.
func (w *Watch) Start(ctx context.Context) error {
	for _, inf := range w.core {
		go inf.RunWithContext(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), w.synced...) {
		return fmt.Errorf("the API server's objects were not listed before the context ended")
	}
	known := w.discover(ctx)
	w.amu.Lock()
	var synced []cache.InformerSynced
	for _, r := range w.admin {
		if r.state == watched {
			synced = append(synced, r.synced)
		}
	}
	w.amu.Unlock()
	listed, cancel := context.WithTimeout(ctx, w.opts.AdminWait)
	defer cancel()
	if !cache.WaitForCacheSync(listed.Done(), synced...) {
		if ctx.Err() != nil {
			return fmt.Errorf("the API server's admin policies were not listed before the context ended")
		}
		// Not Ready: Read says why, and the agent decides what to
		// program (source.ErrIncomplete).
		klog.InfoS("Admin policies not listed yet; going on without them until they are", "waited", w.opts.AdminWait, "why", w.Ready())
	}
	go w.rediscover(ctx, known)
	return nil
}

// Snapshot returns the current objects, their decoding findings, and a
// version that changes whenever an object does.
func (w *Watch) Snapshot() ([]source.Object, diag.List, string) { return w.m.snapshot() }

// Changed receives after changes; several changes may be reported once.
func (w *Watch) Changed() <-chan struct{} { return w.changed }

// Read is Snapshot in the shape of the agent's input. While the API
// server is unreachable it returns the last objects listed. While the
// watch is not Ready it returns what it knows with an error wrapping
// source.ErrIncomplete: the agent keeps the rules it programmed rather than
// drop admin policies it could not read, and only a node that never
// programmed enforces what is known.
func (w *Watch) Read() ([]source.Object, diag.List, string, error) {
	ready := w.check(false)
	w.mu.Lock()
	w.noticed, w.pending = w.pending, time.Time{}
	w.mu.Unlock()
	objs, diags, version := w.m.snapshot()
	if ready != nil {
		// What is known, and why it is not all (the agent decides
		// whether to program it).
		return objs, diags, version, fmt.Errorf("%w: %w", source.ErrIncomplete, ready)
	}
	return objs, diags, version, nil
}

// Noticed returns when the watch received the first of the changes that
// the last Read returned (zero when it returned none): the start of the
// change-to-programmed latency.
func (w *Watch) Noticed() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.noticed
}

// AdminPolicy is an admin policy as the API server holds it: what status
// reporting needs.
type AdminPolicy struct {
	Resource   schema.GroupVersionResource
	Kind, Name string
	UID        types.UID
	Generation int64
	Conditions []metav1.Condition
}

// Ref names the policy as findings do (source.Object.Ref).
func (p AdminPolicy) Ref() string { return source.Object{Kind: p.Kind, Name: p.Name}.Ref() }

// AdminPolicies lists the admin policies the watch holds, by resource and
// name.
func (w *Watch) AdminPolicies() []AdminPolicy {
	var out []AdminPolicy
	w.amu.Lock()
	defer w.amu.Unlock()
	for _, r := range w.admin {
		if r.inf == nil {
			continue
		}
		gvr := r.gvr
		for _, obj := range r.inf.GetStore().List() {
			u, ok := obj.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			p := AdminPolicy{Resource: gvr, Kind: u.GetKind(), Name: u.GetName(), UID: u.GetUID(), Generation: u.GetGeneration()}
			if raw, found, _ := unstructured.NestedSlice(u.Object, "status", "conditions"); found {
				for _, r := range raw {
					var c metav1.Condition
					if m, ok := r.(map[string]any); ok &&
						runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c) == nil {
						p.Conditions = append(p.Conditions, c)
					}
				}
			}
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// dropManagedFields is the informers' transform for namespaces and
// NetworkPolicies: the server-side apply bookkeeping is often larger than
// the object, and the mirror clears it anyway. The object is the
// informer's own, fresh from the decoder: it may be written.
func dropManagedFields(obj any) (any, error) {
	if o, ok := obj.(metav1.Object); ok {
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// sumOf is what the mirror keeps of an object's JSON to tell a change.
func sumOf(data []byte) [sha256.Size]byte { return sha256.Sum256(data) }
