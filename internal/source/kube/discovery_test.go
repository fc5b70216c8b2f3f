package kube

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/netpol/netpol/internal/source"
)

// Fast tests of discovery on client-go's fakes; kube_test.go and
// admin_test.go run the same against a real API server.

// allServed is what the fake discovery serves: every admin policy resource.
var allServed = []*metav1.APIResourceList{
	{GroupVersion: "policy.networking.k8s.io/v1alpha1", APIResources: []metav1.APIResource{
		{Name: "adminnetworkpolicies"}, {Name: "baselineadminnetworkpolicies"}}},
	{GroupVersion: "policy.networking.k8s.io/v1alpha2", APIResources: []metav1.APIResource{{Name: "clusternetworkpolicies"}}},
}

// fakeWatch returns a watch of fake clients whose dynamic client holds one
// AdminNetworkPolicy, quarantine, and whose discovery is disc's.
func fakeWatch(t *testing.T, disc *fakediscovery.FakeDiscovery, rec record.EventRecorder) *Watch {
	t.Helper()
	anp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "policy.networking.k8s.io/v1alpha1",
		"kind":       "AdminNetworkPolicy",
		"metadata":   map[string]any{"name": "quarantine"},
		"spec":       map[string]any{"priority": int64(20), "subject": map[string]any{"namespaces": map[string]any{}}},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		ANP: "AdminNetworkPolicyList", BANP: "BaselineAdminNetworkPolicyList", CNP: "ClusterNetworkPolicyList",
	}, anp)
	w, err := newWatch(clients{core: fake.NewClientset(), dyn: dyn, disc: disc}, WatchOptions{
		Recheck:  5 * time.Millisecond,
		Retry:    wait.Backoff{Duration: time.Millisecond, Factor: 2, Cap: 10 * time.Millisecond, Steps: 100},
		Recorder: rec,
		Node:     "node-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// hasQuarantine reports whether the watch's snapshot holds the ANP.
func hasQuarantine(w *Watch) bool {
	objs, _, _ := w.Snapshot()
	for _, o := range objs {
		if o.Kind == "AdminNetworkPolicy" && o.Name == "quarantine" {
			return true
		}
	}
	return false
}

// eventually waits for cond, or ends the test saying what did not happen.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // a bound on a hang, not a performance assertion
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: never happened", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// wantStates compares the state metric with want, "resource state" lines
// for the states that are 1.
func wantStates(t *testing.T, w *Watch, want ...string) {
	t.Helper()
	if err := states(w, want...); err != nil {
		t.Error(err)
	}
}

// waitStates waits until the state metric is want (see wantStates).
func waitStates(t *testing.T, w *Watch, want ...string) {
	t.Helper()
	eventually(t, strings.Join(want, ", "), func() bool { return states(w, want...) == nil })
}

func states(w *Watch, want ...string) error {
	var exp strings.Builder
	exp.WriteString("# HELP netpol_admin_policy_resource_state " + stateHelp + "\n# TYPE netpol_admin_policy_resource_state gauge\n")
	for _, r := range []string{"adminnetworkpolicies", "baselineadminnetworkpolicies", "clusternetworkpolicies"} {
		for _, s := range []string{"absent-unconfirmed", "not-served", "unknown", "watched"} {
			v := "0"
			for _, w := range want {
				if w == r+" "+s {
					v = "1"
				}
			}
			exp.WriteString(`netpol_admin_policy_resource_state{resource="` + r + `",state="` + s + `"} ` + v + "\n")
		}
	}
	return testutil.CollectAndCompare(w, strings.NewReader(exp.String()), "netpol_admin_policy_resource_state")
}

// TestFaultDiscoveryErrorThenSuccess: the first discovery call (of
// v1alpha1) fails with a 503, the second (v1alpha2) succeeds. ANP and BANP
// are then unknown, not absent: the watch is not ready, Read fails, the
// metric and one Warning Event per kind say so. The retry succeeds and the
// watch reads the ANP.
func TestFaultDiscoveryErrorThenSuccess(t *testing.T) {
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce) // a failed test must not leave the retry blocked
	var calls atomic.Int32
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: allServed}}
	disc.AddReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		switch calls.Add(1) {
		case 1:
			return true, nil, apierrors.NewServiceUnavailable("etcd is away")
		case 2:
			return false, nil, nil
		default:
			// The retry waits until the test has seen the unknown state
			// (the bound is on a hang, should the test end first).
			select {
			case <-release:
			case <-time.After(10 * time.Second):
			}
			return false, nil, nil
		}
	})
	rec := record.NewFakeRecorder(10)
	w := fakeWatch(t, disc, rec)
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}

	err := w.Ready()
	if err == nil || !strings.Contains(err.Error(), "adminnetworkpolicies") || !strings.Contains(err.Error(), "baselineadminnetworkpolicies") ||
		!strings.Contains(err.Error(), "etcd is away") || strings.Contains(err.Error(), "clusternetworkpolicies") {
		t.Errorf("Ready after a failed discovery of v1alpha1 = %v, want an error naming ANP and BANP, and why", err)
	}
	if _, _, _, err := w.Read(); err == nil {
		t.Error("Read succeeds while ANP and BANP are unknown")
	}
	wantStates(t, w, "adminnetworkpolicies unknown", "baselineadminnetworkpolicies unknown", "clusternetworkpolicies watched")
	var events []string
	for len(rec.Events) > 0 {
		events = append(events, <-rec.Events)
	}
	if len(events) != 2 || !strings.HasPrefix(events[0], "Warning "+EventDiscoveryFailed+" ") ||
		!strings.Contains(events[0], "adminnetworkpolicies") || !strings.Contains(events[1], "baselineadminnetworkpolicies") {
		t.Errorf("events = %q, want one Warning %s for ANP and one for BANP", events, EventDiscoveryFailed)
	}

	releaseOnce()
	eventually(t, "ready after the retry", func() bool { return w.Ready() == nil })
	eventually(t, "the ANP read", func() bool { return hasQuarantine(w) })
	if _, _, _, err := w.Read(); err != nil {
		t.Errorf("Read once every kind is known: %v", err)
	}
	wantStates(t, w, "adminnetworkpolicies watched", "baselineadminnetworkpolicies watched", "clusternetworkpolicies watched")
	if len(rec.Events) > 0 {
		t.Errorf("unexpected event after recovery: %q", <-rec.Events)
	}
}

// TestFaultDiscoveryNotServed: a group version that is not found, and
// whose resources' lists are not found either, is a known state once
// confirmed (no CRD, no policies: ready); a later recheck finds it served
// and watches it; a failing recheck leaves a watched kind watched (like
// any informer through an outage); a kind no longer served is no longer
// watched once that is confirmed, and its objects leave the mirror.
func TestFaultDiscoveryNotServed(t *testing.T) {
	var installed, failing atomic.Bool
	var calls atomic.Int32
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: allServed}}
	disc.AddReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		calls.Add(1)
		switch {
		case failing.Load():
			return true, nil, apierrors.NewServiceUnavailable("etcd is away")
		case !installed.Load():
			return true, nil, apierrors.NewNotFound(schema.GroupResource{}, "")
		}
		return false, nil, nil
	})
	rec := record.NewFakeRecorder(10)
	w := absenceWatch(t, disc, rec, func() bool { return !installed.Load() })
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitStates(t, w, "adminnetworkpolicies not-served", "baselineadminnetworkpolicies not-served", "clusternetworkpolicies not-served")
	if err := w.Ready(); err != nil {
		t.Errorf("Ready without the CRDs: %v, want ready", err)
	}
	if hasQuarantine(w) {
		t.Error("the ANP is read while its kind is not served")
	}
	wantStates(t, w, "adminnetworkpolicies not-served", "baselineadminnetworkpolicies not-served", "clusternetworkpolicies not-served")

	installed.Store(true)
	waitStates(t, w, "adminnetworkpolicies watched", "baselineadminnetworkpolicies watched", "clusternetworkpolicies watched")
	eventually(t, "the ANP read once served", func() bool { return hasQuarantine(w) && w.Ready() == nil })

	failing.Store(true)
	n := calls.Load()
	eventually(t, "two more discovery rounds", func() bool { return calls.Load() >= n+4 })
	if err := w.Ready(); err != nil || !hasQuarantine(w) {
		t.Errorf("after failed rechecks of watched kinds: ready %v, ANP read %v; want ready with the ANP", err, hasQuarantine(w))
	}
	wantStates(t, w, "adminnetworkpolicies watched", "baselineadminnetworkpolicies watched", "clusternetworkpolicies watched")

	failing.Store(false)
	installed.Store(false)
	waitStates(t, w, "adminnetworkpolicies not-served", "baselineadminnetworkpolicies not-served", "clusternetworkpolicies not-served")
	if hasQuarantine(w) {
		t.Error("the ANP is still read once its kind is no longer served")
	}
	if err := w.Ready(); err != nil {
		t.Errorf("Ready once the CRDs are gone: %v, want ready", err)
	}
	if len(rec.Events) > 0 {
		t.Errorf("unexpected event: %q", <-rec.Events)
	}
}

// TestFaultAdminListForbiddenStartReturns: the API server serves the admin
// policy resources but refuses to list one (a 403: RBAC without it). Start
// returns after AdminWait instead of waiting for a list that never comes
// (the agent had no status, no /readyz and no rules meanwhile); the watch
// is not ready and says which resource is not listed.
func TestFaultAdminListForbiddenStartReturns(t *testing.T) {
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: allServed}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		ANP: "AdminNetworkPolicyList", BANP: "BaselineAdminNetworkPolicyList", CNP: "ClusterNetworkPolicyList",
	})
	dyn.PrependReactor("list", "adminnetworkpolicies", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(ANP.GroupResource(), "", errors.New("RBAC: not allowed"))
	})
	w, err := newWatch(clients{core: fake.NewClientset(), dyn: dyn, disc: disc}, WatchOptions{AdminWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- w.Start(t.Context()) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second): // a bound on a hang, not a performance assertion
		t.Fatal("Start still waits for a list that the API server refuses")
	}
	err = w.Ready()
	if err == nil || err.Error() != "admin policies not known: adminnetworkpolicies not listed yet" {
		t.Errorf("Ready = %v, want that adminnetworkpolicies are not listed yet", err)
	}
	if _, _, _, err := w.Read(); !errors.Is(err, source.ErrIncomplete) {
		t.Errorf("Read: %v, want source.ErrIncomplete", err)
	}
}

// absenceWatch is fakeWatch whose dynamic client answers the lists of
// the admin policy resources with 404 while gone reports true (their CRDs
// deleted), and whose absence is confirmed after ConfirmAbsent: 1 ns.
func absenceWatch(t *testing.T, disc *fakediscovery.FakeDiscovery, rec record.EventRecorder, gone func() bool) *Watch {
	t.Helper()
	w := fakeWatch(t, disc, rec)
	w.opts.ConfirmAbsent = time.Nanosecond
	dyn := w.clients.dyn.(*dynamicfake.FakeDynamicClient)
	dyn.PrependReactor("list", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if gone() {
			return true, nil, apierrors.NewNotFound(a.GetResource().GroupResource(), "")
		}
		return false, nil, nil
	})
	return w
}

// discoveryScript answers discovery calls in turn with the script's
// errors (nil: served), the last one for ever after. Before answering call
// pause (1-based), it sends on paused and waits for resume: the test looks
// at the watch with every earlier answer applied.
type discoveryScript struct {
	script         []error
	pause          int32
	paused, resume chan struct{}
	calls          atomic.Int32
}

func (s *discoveryScript) discovery() *fakediscovery.FakeDiscovery {
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: allServed}}
	disc.AddReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		n := s.calls.Add(1)
		if n == s.pause {
			s.paused <- struct{}{}
			select {
			case <-s.resume:
			case <-time.After(10 * time.Second): // a bound on a hang, should the test end first
			}
		}
		err := s.script[min(int(n), len(s.script))-1]
		return err != nil, nil, err
	})
	return disc
}

var notFound = apierrors.NewNotFound(schema.GroupResource{Group: "policy.networking.k8s.io"}, "")

// TestAdversarialDiscoveryOne404KeepsTheKind: one round of discovery
// answers 404 for every admin policy group version, while the resources
// are served (an API server restarting its aggregated discovery). The
// kinds are not dropped (which lifted every admin deny until the next
// recheck, a minute later): their policies stay, the watch is not ready
// and says why, and the next answer makes it watched and ready again.
func TestAdversarialDiscoveryOne404KeepsTheKind(t *testing.T) {
	s := &discoveryScript{script: []error{nil, nil, notFound, notFound, nil}, pause: 5,
		paused: make(chan struct{}), resume: make(chan struct{})}
	w := absenceWatch(t, s.discovery(), nil, func() bool { return false })
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.paused:
	case <-time.After(10 * time.Second): // a bound on a hang, not a performance assertion
		t.Fatal("discovery was never asked again")
	}
	if !hasQuarantine(w) {
		t.Error("one 404 from discovery dropped the ANP")
	}
	if err := w.Ready(); err == nil || !strings.Contains(err.Error(), "adminnetworkpolicies") {
		t.Errorf("Ready after a 404 = %v, want not ready, naming the resource", err)
	}
	if _, _, _, err := w.Read(); err != nil {
		t.Errorf("Read after a 404 of a watched kind = %v, want its objects, complete", err)
	}
	wantStates(t, w, "adminnetworkpolicies absent-unconfirmed", "baselineadminnetworkpolicies absent-unconfirmed",
		"clusternetworkpolicies absent-unconfirmed")
	close(s.resume)
	waitStates(t, w, "adminnetworkpolicies watched", "baselineadminnetworkpolicies watched", "clusternetworkpolicies watched")
	eventually(t, "ready once discovery answers", func() bool { return w.Ready() == nil })
	if !hasQuarantine(w) {
		t.Error("the ANP is gone after discovery answered again")
	}
}

// TestAdversarialDiscoveryNotConfirmedByFailures: 404s from discovery
// with 503s between them, while a list of the resource says 404 too: a
// 503 or a timeout says nothing of absence, so the 404s never add up to a
// confirmed one and the kind keeps its policies.
func TestAdversarialDiscoveryNotConfirmedByFailures(t *testing.T) {
	unavailable := apierrors.NewServiceUnavailable("etcd is away")
	var script []error
	script = append(script, nil, nil) // Start: served
	for range 6 {
		// Two 404s per group version, then a 503 each: never three in
		// a row.
		script = append(script, notFound, notFound, notFound, notFound, unavailable, unavailable)
	}
	s := &discoveryScript{script: append(script, nil), pause: int32(len(script)) + 1,
		paused: make(chan struct{}), resume: make(chan struct{})}
	// Listed at Start; 404 from the lists after it.
	w := absenceWatch(t, s.discovery(), nil, func() bool { return s.calls.Load() > 2 })
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.paused:
	case <-time.After(30 * time.Second): // a bound on a hang, not a performance assertion
		t.Fatal("discovery was not asked through the script")
	}
	if !hasQuarantine(w) {
		t.Error("404s separated by 503s dropped the ANP")
	}
	close(s.resume)
}

// TestAdversarialDiscoveryConfirmedAbsence: a kind is dropped once
// discovery has said 404 three times in a row over ConfirmAbsent and a
// list of the resource says 404 too (its CRD is gone); a cluster without
// the CRDs is not ready until their absence is confirmed, then ready with
// no admin policies.
func TestAdversarialDiscoveryConfirmedAbsence(t *testing.T) {
	s := &discoveryScript{script: []error{nil, nil, notFound}, paused: make(chan struct{})}
	w := absenceWatch(t, s.discovery(), nil, func() bool { return s.calls.Load() > 2 })
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitStates(t, w, "adminnetworkpolicies not-served", "baselineadminnetworkpolicies not-served", "clusternetworkpolicies not-served")
	if hasQuarantine(w) {
		t.Error("the ANP stays once the absence of its kind is confirmed")
	}
	if err := w.Ready(); err != nil {
		t.Errorf("Ready once absence is confirmed: %v", err)
	}
	if n := s.calls.Load(); n < 2+3*2 {
		t.Errorf("dropped after %d discovery calls, want three 404s of each group version after the first two", n)
	}

	// At start: a cluster without the CRDs.
	s = &discoveryScript{script: []error{notFound}, paused: make(chan struct{})}
	w = absenceWatch(t, s.discovery(), nil, func() bool { return true })
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := w.Ready(); err == nil {
		t.Error("ready after one 404 at start, want not ready until the absence is confirmed")
	}
	if _, _, _, err := w.Read(); !errors.Is(err, source.ErrIncomplete) {
		t.Errorf("Read after one 404 at start: %v, want source.ErrIncomplete", err)
	}
	waitStates(t, w, "adminnetworkpolicies not-served", "baselineadminnetworkpolicies not-served", "clusternetworkpolicies not-served")
	eventually(t, "ready once the absence is confirmed", func() bool { return w.Ready() == nil })
}
