package state_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

const pendingPods = `
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {addresses: [{type: InternalIP, address: 198.19.0.1}]}
---
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: a}
spec: {nodeName: n1}
status: {phase: Running, podIP: 198.18.0.5}
---
apiVersion: v1
kind: Pod
metadata: {name: scheduled, namespace: a}
spec: {nodeName: n1}
status: {phase: Pending}
---
apiVersion: v1
kind: Pod
metadata: {name: unscheduled, namespace: a}
status: {phase: Pending}
`

// TestObservedPodsAreAsObserved: from an API server, a pod that has no
// address yet has none and one not scheduled is on no node; from
// manifests, both get made-up ones, so that a matrix can show them.
func TestObservedPodsAreAsObserved(t *testing.T) {
	for _, tc := range []struct {
		observed bool
		want     map[string]string // pod -> "node addresses"
	}{
		{true, map[string]string{"a/running": "n1 [198.18.0.5]", "a/scheduled": "n1 []", "a/unscheduled": " []"}},
		// Made up: the only node, and an address of each family.
		{false, map[string]string{"a/running": "n1 [198.18.0.5]", "a/scheduled": "n1 2", "a/unscheduled": "n1 2"}},
	} {
		dec := &source.Decoder{}
		c, diags := state.Build(dec.Decode("p.yaml", []byte(pendingPods)), state.Options{Observed: tc.observed})
		if len(diags) > 0 {
			t.Fatal(diags)
		}
		for _, p := range c.Pods {
			got := fmt.Sprint(p.Node, " ", p.IPs)
			if !tc.observed && p.Name != "running" && len(p.IPs) == 2 && p.IPs[0].Is4() && p.IPs[1].Is6() {
				got = p.Node + " 2"
			}
			if got != tc.want[p.Key()] {
				t.Errorf("observed=%v: %s is %q, want %q", tc.observed, p.Key(), got, tc.want[p.Key()])
			}
		}
	}
}

// TestPodsShareTheirLabels: pods with the same labels share one label set
// (a workload's replicas), pods with others do not.
func TestPodsShareTheirLabels(t *testing.T) {
	dec := &source.Decoder{}
	c, diags := state.Build(dec.Decode("p.yaml", []byte(`
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: x, labels: {app: web, tier: front}}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: z, labels: {tier: front, app: web}}
---
apiVersion: v1
kind: Pod
metadata: {name: c, namespace: x, labels: {app: web, tier: back}}
`)), state.Options{})
	if len(diags.Errors()) > 0 || len(c.Pods) != 3 {
		t.Fatal(diags, len(c.Pods))
	}
	ptr := func(key string) uintptr { return reflect.ValueOf(c.Pod(key).Labels).Pointer() }
	if ptr("x/a") != ptr("z/b") || ptr("x/a") == ptr("x/c") {
		t.Errorf("x/a and z/b share labels: %v (want true); x/a and x/c: %v (want false)", ptr("x/a") == ptr("z/b"), ptr("x/a") == ptr("x/c"))
	}
}

// TestPodsShareOnlyEqualLabels: template labels are not checked, so a key
// with "=" in it and a value with one must not be taken for each other.
func TestPodsShareOnlyEqualLabels(t *testing.T) {
	dec := &source.Decoder{}
	c, diags := state.Build(dec.Decode("d.yaml", []byte(`
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: one, namespace: x}
spec: {replicas: 1, selector: {matchLabels: {a: "b=c"}}, template: {metadata: {labels: {a: "b=c"}}, spec: {containers: [{name: c, image: x}]}}}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: two, namespace: x}
spec: {replicas: 1, selector: {matchLabels: {"a=b": c}}, template: {metadata: {labels: {"a=b": c}}, spec: {containers: [{name: c, image: x}]}}}
`)), state.Options{})
	if len(c.Pods) != 2 {
		t.Fatalf("%d pods (%v), want 2", len(c.Pods), diags)
	}
	for _, p := range c.Pods {
		want := map[bool]string{true: "b=c", false: ""}[p.Owner == "ReplicaSet one"]
		if got := p.Labels["a"]; got != want {
			t.Errorf("%s (%s) has a=%q, want %q: labels %v", p.Key(), p.Owner, got, want, p.Labels)
		}
	}
}
