package suggest

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/netpol/netpol/internal/l4"
)

// selectorsCluster: in shop, web's pods carry app, a version that the next
// rollout changes and their template hash; api and worker share
// app.kubernetes.io/name and tell themselves apart by component; legacy
// has only labels of its own; loner has none.
const selectorsCluster = `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web, version: v1.4.2, pod-template-hash: 6d9f8b7c5d}}
    spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app.kubernetes.io/name: shop, app.kubernetes.io/component: api}}
  template:
    metadata: {labels: {app.kubernetes.io/name: shop, app.kubernetes.io/component: api, team: payments}}
    spec: {containers: [{name: c, ports: [{containerPort: 9000}]}]}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: worker, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app.kubernetes.io/name: shop, app.kubernetes.io/component: worker}}
  template:
    metadata: {labels: {app.kubernetes.io/name: shop, app.kubernetes.io/component: worker, team: payments}}
    spec: {containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: legacy, namespace: shop, labels: {tier: batch, owner: ops}}
spec: {containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: loner, namespace: shop}
spec: {containers: [{name: c}]}
`

// TestSuggestSelectorsOnStableLabels: a workload is selected by the
// well-known application labels it has (app.kubernetes.io/*, app) when they
// select its pods and no other pod of the namespace, never by a version
// that the next rollout changes; a workload without them by every label
// its pods share and keep.
func TestSuggestSelectorsOnStableLabels(t *testing.T) {
	e := build(t, selectorsCluster)
	flows := []Flow{
		{From: "shop/Deployment/worker", To: "shop/Deployment/api", Port: l4.Port{Proto: l4.TCP, Num: 9000}, Count: 1},
		{From: "shop/legacy", To: "shop/Deployment/web", Port: l4.Port{Proto: l4.TCP, Num: 8080}, Count: 1},
	}
	ps, err := Suggest(e.Cluster(), flows, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range ps {
		np := p.(*networkingv1.NetworkPolicy)
		got[np.Name] = labels.Set(np.Spec.PodSelector.MatchLabels).String()
	}
	want := map[string]string{
		"api-suggested":    "app.kubernetes.io/component=api,app.kubernetes.io/name=shop",
		"worker-suggested": "app.kubernetes.io/component=worker,app.kubernetes.io/name=shop",
		"legacy-suggested": "owner=ops,tier=batch",
		"web-suggested":    "app=web",
	}
	if len(got) != len(want) {
		t.Errorf("policies %v, want %v", got, want)
	}
	for name, sel := range want {
		if got[name] != sel {
			t.Errorf("%s selects %q, want %q", name, got[name], sel)
		}
	}
}

// TestSuggestRefusesUnselectable: a pod with no label cannot be selected
// alone; an empty selector would isolate every pod of its namespace, so
// suggest refuses, naming the pod and what to do.
func TestSuggestRefusesUnselectable(t *testing.T) {
	e := build(t, selectorsCluster)
	_, err := Suggest(e.Cluster(), []Flow{{From: "shop/loner", To: "shop/Deployment/web", Port: l4.Port{Proto: l4.TCP, Num: 8080}, Count: 1}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "shop/loner") || !strings.Contains(err.Error(), "label") {
		t.Fatalf("suggest for an unlabelled pod: %v, want an error naming shop/loner and asking for a label", err)
	}
}

// TestSuggestWarnsWhenASelectorReachesFurther: two bare pods with the same
// labels cannot be selected apart, so the policy of the one seen isolates
// the other too; suggest still writes it, and says so.
func TestSuggestWarnsWhenASelectorReachesFurther(t *testing.T) {
	twin := `
---
apiVersion: v1
kind: Pod
metadata: {name: legacy-twin, namespace: shop, labels: {tier: batch, owner: ops}}
spec: {containers: [{name: c}]}
`
	e := build(t, selectorsCluster+twin)
	var warnings []string
	_, err := Suggest(e.Cluster(), []Flow{{From: "shop/legacy", To: "shop/Deployment/web", Port: l4.Port{Proto: l4.TCP, Num: 8080}, Count: 1}},
		Options{Warn: func(s string) { warnings = append(warnings, s) }})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"pod shop/legacy: its selector owner=ops,tier=batch also selects pod shop/legacy-twin, which its policy isolates too: label them apart"}
	if strings.Join(warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}
}
