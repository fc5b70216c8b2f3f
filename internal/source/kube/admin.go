package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Admin policy resources. A cluster without their CRDs simply has none.
var (
	ANP  = schema.GroupVersionResource{Group: "policy.networking.k8s.io", Version: "v1alpha1", Resource: "adminnetworkpolicies"}
	BANP = schema.GroupVersionResource{Group: "policy.networking.k8s.io", Version: "v1alpha1", Resource: "baselineadminnetworkpolicies"}
	CNP  = schema.GroupVersionResource{Group: "policy.networking.k8s.io", Version: "v1alpha2", Resource: "clusternetworkpolicies"}
)

// adminResources are the admin policy resources with the kind of their
// objects, in the order discovery asks for them.
var adminResources = []struct {
	gvr  schema.GroupVersionResource
	kind string
}{
	{ANP, "AdminNetworkPolicy"},
	{BANP, "BaselineAdminNetworkPolicy"},
	{CNP, "ClusterNetworkPolicy"},
}

// EventDiscoveryFailed is the reason of the Warning Event about the node
// when the agent cannot tell whether the API server serves an admin policy
// resource.
const EventDiscoveryFailed = "AdminPolicyDiscoveryFailed"

// resourceState is what discovery last said of an admin policy resource.
type resourceState int

const (
	// unknown: discovery has not answered yet. Reading the cluster as if
	// the resource had no objects would drop its policies on a timeout, so
	// the watch is not ready.
	unknown resourceState = iota
	// notServed: the API server does not serve it (no CRD): it has no
	// objects. Discovery asks again every WatchOptions.Recheck.
	notServed
	// watched: served, and an informer mirrors its objects.
	watched
	// absentUnconfirmed: discovery says it is not served, which one
	// answer does not prove (an API server restarting its aggregated
	// discovery answers 404 for a while): a watched resource keeps its
	// informer and objects, an unknown one stays without, and the watch is
	// not ready until a confirmed absence (WatchOptions.ConfirmAbsent)
	// or another answer.
	absentUnconfirmed
)

var stateNames = [...]string{unknown: "unknown", notServed: "not-served", watched: "watched", absentUnconfirmed: "absent-unconfirmed"}

// minAbsentAnswers is how many "not served" answers in a row discovery
// must give before the absence is checked with a list of the resource.
const minAbsentAnswers = 3

func (s resourceState) String() string { return stateNames[s] }

// errNotAsked is why a resource is unknown before discovery was asked.
var errNotAsked = errors.New("not asked yet")

// adminResource is one admin policy resource as the watch knows it.
type adminResource struct {
	gvr   schema.GroupVersionResource
	kind  string
	state resourceState
	err   error // why the state is unknown
	// reported: the unknown state has been logged and sent as an Event;
	// once per episode, not on every retry.
	reported bool
	inf      cache.SharedIndexInformer // while watched (and absentUnconfirmed after watched)
	synced   cache.InformerSynced
	stop     context.CancelFunc
	// absentSince is the first of the absentAnswers "not served" answers
	// in a row that discovery gave (0: its last answer was another).
	absentSince   time.Time
	absentAnswers int
}

// discover asks the API server which admin policy resources it serves,
// once per group version, and follows the answers: a served resource is
// watched; one that is not found is not (any longer) once its absence is
// confirmed: minAbsentAnswers answers in a row over ConfirmAbsent, and a
// list of the resource itself answering 404 (its CRD is gone). A failure
// (a timeout, a 503) leaves a known state as it was (through an outage a
// watched resource stays watched, as every informer keeps its last
// objects), an unknown one unknown, and breaks a run of "not found". It
// reports whether every state is known.
func (w *Watch) discover(ctx context.Context) bool {
	var gvs []string
	for _, r := range adminResources {
		if gv := r.gvr.GroupVersion().String(); !slices.Contains(gvs, gv) {
			gvs = append(gvs, gv)
		}
	}
	var confirm []*adminResource
	for _, gv := range gvs {
		list, err := w.clients.disc.ServerResourcesForGroupVersion(gv)
		w.amu.Lock()
		for _, r := range w.admin {
			if r.gvr.GroupVersion().String() != gv {
				continue
			}
			switch {
			case err == nil && served(list, r.gvr.Resource):
				r.absentAnswers = 0
				w.startWatching(ctx, r)
			case err == nil || apierrors.IsNotFound(err):
				if w.notFound(r) {
					confirm = append(confirm, r)
				}
			default:
				r.absentAnswers = 0
				w.failed(r, err)
			}
		}
		w.amu.Unlock()
	}
	// Outside the lock: Ready and the metrics must not wait on a request.
	for _, r := range confirm {
		lctx, cancel := context.WithTimeout(ctx, confirmTimeout)
		_, err := w.clients.dyn.Resource(r.gvr).List(lctx, metav1.ListOptions{Limit: 1})
		cancel()
		w.amu.Lock()
		switch {
		case apierrors.IsNotFound(err):
			w.stopWatching(r)
		case err == nil:
			// Served after all: discovery was wrong, and its run of
			// answers counts for nothing.
			r.absentAnswers = 0
			w.startWatching(ctx, r)
		default:
			r.absentAnswers = 0 // cannot tell: confirmed again from the start
			klog.V(2).InfoS("Cannot confirm the absence of an admin policy resource", "resource", r.gvr.String(), "err", err)
		}
		w.amu.Unlock()
	}
	w.amu.Lock()
	defer w.amu.Unlock()
	known := true
	for _, r := range w.admin {
		known = known && r.state != unknown && r.state != absentUnconfirmed
	}
	return known
}

// confirmTimeout bounds the list that confirms an absence.
const confirmTimeout = 10 * time.Second

// notFound records that discovery says r is not served, and reports
// whether the absence is due to be confirmed with a list. Called with amu
// held.
func (w *Watch) notFound(r *adminResource) bool {
	if r.state == notServed {
		return false
	}
	now := time.Now()
	if r.absentAnswers == 0 {
		r.absentSince = now
	}
	r.absentAnswers++
	if r.state != absentUnconfirmed {
		klog.InfoS("Discovery says an admin policy resource is not served; confirming before dropping its policies",
			"resource", r.gvr.String(), "was", r.state)
		r.state, r.err, r.reported = absentUnconfirmed, nil, false
		w.notify() // Ready changed
	}
	return r.absentAnswers >= minAbsentAnswers && now.Sub(r.absentSince) >= w.opts.ConfirmAbsent
}

func served(list *metav1.APIResourceList, resource string) bool {
	return list != nil && slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == resource })
}

// rediscover runs discovery until ctx ends: every Recheck while all states
// are known, sooner (Retry) while one is not.
func (w *Watch) rediscover(ctx context.Context, known bool) {
	retry := w.opts.Retry
	for {
		wait := w.opts.Recheck
		if known {
			retry = w.opts.Retry
		} else {
			wait = retry.Step()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		known = w.discover(ctx)
	}
}

// startWatching starts an informer for r, unless it has one. Called with
// amu held.
func (w *Watch) startWatching(ctx context.Context, r *adminResource) {
	if r.inf != nil { // watched, or absentUnconfirmed after watched
		w.setKnown(r, watched)
		return
	}
	lw := newReconnecting(listWatch[*unstructured.UnstructuredList](w.clients.dyn.Resource(r.gvr)), w.clients.dyn, r.gvr.Resource)
	inf := cache.NewSharedIndexInformerWithOptions(lw, &unstructured.Unstructured{},
		cache.SharedIndexInformerOptions{ObjectDescription: r.gvr.String()})
	// Handlers of this informer write this generation of the kind: if the
	// kind is removed (stopWatching), events it still delivers are void.
	synced, err := w.watch(inf, metav1.TypeMeta{}, w.m.generation(r.kind))
	if err != nil { // only if the informer had stopped, and it has not started
		w.failed(r, err)
		return
	}
	ictx, stop := context.WithCancel(ctx)
	go inf.RunWithContext(ictx)
	// Ready waits for the first list; an empty one changes no object, and
	// the agent must still hear that the watch is ready.
	go func() {
		if cache.WaitForCacheSync(ictx.Done(), synced) {
			w.notify()
		}
	}()
	r.inf, r.synced, r.stop = inf, synced, stop
	w.setKnown(r, watched)
}

// stopWatching records that r is not served, and drops its informer and
// objects if it had them (its CRD was removed). Called with amu held.
func (w *Watch) stopWatching(r *adminResource) {
	r.absentAnswers = 0
	if r.inf != nil {
		r.stop()
		r.inf, r.synced, r.stop = nil, nil, nil
		w.m.removeKind(r.kind)
	}
	w.setKnown(r, notServed)
}

// setKnown moves r to a known state. Called with amu held.
func (w *Watch) setKnown(r *adminResource, s resourceState) {
	if r.state == s {
		return
	}
	if r.reported {
		klog.InfoS("Discovery of an admin policy resource answers again", "resource", r.gvr.String(), "state", s)
	} else {
		klog.V(2).InfoS("Admin policy resource", "resource", r.gvr.String(), "state", s)
	}
	r.state, r.err, r.reported = s, nil, false
	w.notify() // Read may succeed now, or have objects fewer
}

// failed records a failed discovery of r. Called with amu held.
func (w *Watch) failed(r *adminResource, err error) {
	if r.state == absentUnconfirmed && r.inf == nil {
		r.state = unknown // nothing is known of it again
	} else if r.state == absentUnconfirmed {
		w.setKnown(r, watched) // a failure says nothing of absence
	}
	if r.state != unknown {
		klog.V(2).InfoS("Discovery failed; the admin policy resource's last known state stands",
			"resource", r.gvr.String(), "state", r.state, "err", err)
		return
	}
	r.err = err
	if r.reported {
		return
	}
	r.reported = true
	klog.ErrorS(err, "Cannot tell whether the API server serves an admin policy resource; not ready until discovery answers",
		"resource", r.gvr.String())
	if w.opts.Recorder != nil {
		// Kubelet and kube-proxy refer to their node the same way.
		node := &corev1.ObjectReference{Kind: "Node", Name: w.opts.Node, UID: types.UID(w.opts.Node)}
		w.opts.Recorder.Eventf(node, corev1.EventTypeWarning, EventDiscoveryFailed,
			"Cannot tell whether the API server serves %s (%s): %v. The agent keeps the rules it last programmed and is not ready until discovery answers.",
			r.gvr.Resource, r.gvr.GroupVersion(), err)
	}
}

// Ready reports whether the watch knows every admin policy resource's
// state and holds the objects of those watched: until then a snapshot
// could lack admin policies that exist, and Read fails. A resource the API
// server does not serve is known to have no objects.
func (w *Watch) Ready() error { return w.check(true) }

// check says why the watch is not ready: every reason, or (all false)
// only those for which it lacks objects that may exist, which make a Read
// incomplete.
func (w *Watch) check(all bool) error {
	w.amu.Lock()
	defer w.amu.Unlock()
	var why []string
	for _, r := range w.admin {
		switch {
		case r.state == unknown:
			why = append(why, fmt.Sprintf("cannot tell whether the API server serves %s (%s): %v", r.gvr.Resource, r.gvr.GroupVersion(), r.err))
		case r.state == absentUnconfirmed && (all || r.inf == nil):
			held := "its policies are not known"
			if r.inf != nil {
				held = "its policies are kept"
			}
			why = append(why, fmt.Sprintf("discovery says the API server does not serve %s (%s) since %s (%d answers); %s until that is confirmed",
				r.gvr.Resource, r.gvr.GroupVersion(), r.absentSince.UTC().Format(time.RFC3339), r.absentAnswers, held))
		case r.inf != nil && !r.synced():
			why = append(why, r.gvr.Resource+" not listed yet")
		}
	}
	if len(why) > 0 {
		return fmt.Errorf("admin policies not known: %s", strings.Join(why, "; "))
	}
	return nil
}

// stateHelp is the help of the state metric.
const stateHelp = "Discovery state of each admin policy resource (1 for the current state): watched; not-served (no CRD: no such policies); unknown (discovery fails: the agent keeps its rules and is not ready); absent-unconfirmed (discovery says not served: the policies are kept and the agent is not ready until a list confirms it)."

var stateDesc = prometheus.NewDesc("netpol_admin_policy_resource_state", stateHelp, []string{"resource", "state"}, nil)

// Describe and Collect make the watch a prometheus.Collector of the
// admin policy resources' states.
func (w *Watch) Describe(ch chan<- *prometheus.Desc) { ch <- stateDesc }

func (w *Watch) Collect(ch chan<- prometheus.Metric) {
	w.amu.Lock()
	defer w.amu.Unlock()
	for _, r := range w.admin {
		// Every state, 0 or 1: a missing series answers no query.
		for s := range stateNames {
			v := 0.0
			if r.state == resourceState(s) {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, v, r.gvr.Resource, stateNames[s])
		}
	}
}

// servedAdminResources returns the admin policy resources the API server
// serves, for a one-time read. A group version that is not found is not
// served (no CRD); any other failure is an error, not an empty answer.
func servedAdminResources(d discovery.DiscoveryInterface) ([]schema.GroupVersionResource, error) {
	var out []schema.GroupVersionResource
	lists := map[string]*metav1.APIResourceList{}
	for _, r := range adminResources {
		gv := r.gvr.GroupVersion().String()
		list, seen := lists[gv]
		if !seen {
			var err error
			list, err = d.ServerResourcesForGroupVersion(gv)
			if err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("discovery of %s: %w", gv, err)
			}
			lists[gv] = list
		}
		if served(list, r.gvr.Resource) {
			out = append(out, r.gvr)
		}
	}
	return out, nil
}
