package status_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/netpol/netpol/internal/source/kube"
	"github.com/netpol/netpol/internal/status"
)

// lockstep is an API server for writers that report at the same moment:
// each apply waits until every writer still walking has sent one, then
// they all land at once, as applies sent within one watch latency of each
// other do. The writers' view of the policies is the server's as of the
// last landing.
type lockstep struct {
	mu      sync.Mutex
	cond    *sync.Cond
	walking int
	pending []func()
	round   int
	conds   map[string][]metav1.Condition // policy -> its conditions
	applies int
}

func (l *lockstep) arrive(land func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.applies++
	l.pending = append(l.pending, land)
	round := l.round
	l.flushIfAll()
	for l.round == round {
		l.cond.Wait()
	}
}

// flushIfAll lands the pending applies once every walking writer has one.
func (l *lockstep) flushIfAll() {
	if len(l.pending) == 0 || len(l.pending) < l.walking {
		return
	}
	for _, land := range l.pending {
		land()
	}
	l.pending = nil
	l.round++
	l.cond.Broadcast()
}

func (l *lockstep) done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.walking--
	l.flushIfAll()
}

// lockstepClient is a dynamic client whose status applies go to l (the
// client-go fake runs its reactors under one lock, which a barrier would
// deadlock).
type lockstepClient struct {
	dynamic.Interface
	l *lockstep
}

func (c lockstepClient) Resource(schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return lockstepResource{l: c.l}
}

type lockstepResource struct {
	dynamic.NamespaceableResourceInterface
	l *lockstep
}

func (r lockstepResource) ApplyStatus(_ context.Context, name string, u *unstructured.Unstructured, _ metav1.ApplyOptions) (*unstructured.Unstructured, error) {
	var conds []metav1.Condition
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range raw {
		var cond metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(c.(map[string]any), &cond); err != nil {
			return nil, err
		}
		conds = append(conds, cond)
	}
	r.l.arrive(func() { r.l.conds[name] = conds })
	return u, nil
}

// TestFleetWalkWritesEachPolicyOnce: agents that report at the same
// moment (a fleet starting, a policy changed) must not all apply every
// policy's status: an apply the server finds already done costs it as
// much as a write (20 agents at start kept the API server at 4.3 CPU-s
// every 20 s), and 5,000 agents with 1,500 policies would send 7.5 million.
// Each writer walks from a place of its own and looks at the policy again
// just before it applies.
func TestFleetWalkWritesEachPolicyOnce(t *testing.T) {
	const writers, policies = 10, 40
	l := &lockstep{walking: writers, conds: map[string][]metav1.Condition{}}
	l.cond = sync.NewCond(&l.mu)
	view := func() []kube.AdminPolicy {
		l.mu.Lock()
		defer l.mu.Unlock()
		var out []kube.AdminPolicy
		for i := range policies {
			name := fmt.Sprintf("p%02d", i)
			out = append(out, kube.AdminPolicy{Resource: anps, Kind: "AdminNetworkPolicy", Name: name, UID: types.UID(name),
				Generation: 1, Conditions: l.conds[name]})
		}
		return out
	}
	client := lockstepClient{l: l}
	var wg sync.WaitGroup
	for i := range writers {
		w := &status.Writer{Node: fmt.Sprintf("node-%03d", i), Client: client, Policies: view}
		wg.Go(func() {
			defer l.done()
			if err := w.Report(context.Background(), nil, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := range policies {
		if name := fmt.Sprintf("p%02d", i); len(l.conds[name]) != 2 {
			t.Errorf("%s has conditions %v, want Accepted and Programmed", name, l.conds[name])
		}
	}
	t.Logf("%d writers, %d policies: %d applies", writers, policies, l.applies)
	// Writers may still meet on a policy in the same round: allow some.
	if l.applies > policies*3/2 {
		t.Errorf("%d writers sent %d applies for %d policies, want about one each", writers, l.applies, policies)
	}
}
