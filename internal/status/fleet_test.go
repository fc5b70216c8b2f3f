package status_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/netpol/netpol/internal/kubetest"
	"github.com/netpol/netpol/internal/source/kube"
	"github.com/netpol/netpol/internal/status"
)

// TestFleetWritesStatusOnce: every node runs an agent, and each reports
// on every admin policy. What they agree on (Accepted, Programmed) must
// cost the policy one write and one entry of managedFields, not one per
// node: the API server sends the whole object, managedFields included,
// to every agent's watch on each write, so per-node writers make a fleet
// of N nodes receive N² copies of a policy that grows with N (and a
// policy past etcd's 1.5 MB limit at a few thousand nodes). A node that
// fails adds its own condition, and its own entry, until it recovers.
func TestFleetWritesStatusOnce(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()
	if err := c.Create(ctx, manifestsOf(t, `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: deny-remote}
spec:
  priority: 10
  subject: {namespaces: {}}
  ingress: [{name: remote, action: Deny, from: [{namespaces: {matchLabels: {zone: remote}}}]}]
`)); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	current := func() *unstructured.Unstructured {
		u, err := dyn.Resource(kube.ANP).Get(ctx, "deny-remote", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	// The agents' view of the policies: the API server's, as a watch
	// would have it once the writes before reached it.
	policies := func() []kube.AdminPolicy {
		u := current()
		p := kube.AdminPolicy{Resource: kube.ANP, Kind: "AdminNetworkPolicy", Name: u.GetName(), UID: u.GetUID(), Generation: u.GetGeneration()}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, raw := range conds {
			var cond metav1.Condition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw.(map[string]any), &cond); err != nil {
				t.Fatal(err)
			}
			p.Conditions = append(p.Conditions, cond)
		}
		return []kube.AdminPolicy{p}
	}
	const nodes = 8
	writers := make([]*status.Writer, nodes)
	for i := range writers {
		writers[i] = &status.Writer{Node: fmt.Sprintf("node-%d", i), Client: dyn, Policies: policies}
	}
	watch, err := dyn.Resource(kube.ANP).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=deny-remote", ResourceVersion: current().GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Stop()
	for _, w := range writers {
		if err := w.Report(ctx, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	checkStatus(t, "all nodes programmed", current(), []string{"Accepted=True/Valid", "Programmed=True/Programmed"}, 1)
	// A write of the test's own marks the end of the agents' writes in
	// the watch.
	if _, err := dyn.Resource(kube.ANP).Patch(ctx, "deny-remote", types.MergePatchType, []byte(`{"metadata":{"labels":{"probe":"end"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	writes := 0
	for ev := range watch.ResultChan() {
		if u, ok := ev.Object.(*unstructured.Unstructured); ok && u.GetLabels()["probe"] == "end" {
			break
		}
		writes++
	}
	if writes != 1 {
		t.Errorf("%d nodes reporting the same conditions wrote the policy %d times, want once", nodes, writes)
	}

	// node-3 fails: its own condition and manager join, then leave.
	if err := writers[3].Report(ctx, nil, errors.New("nftables: operation not permitted")); err != nil {
		t.Fatal(err)
	}
	checkStatus(t, "node-3 failed", current(), []string{"Accepted=True/Valid", "Programmed=True/Programmed", "netpol.io/NotProgrammed.node-3=True/ProgrammingFailed"}, 2)
	if err := writers[3].Report(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	checkStatus(t, "node-3 recovered", current(), []string{"Accepted=True/Valid", "Programmed=True/Programmed"}, 1)
}

// checkStatus compares the policy's conditions ("Type=Status/Reason", in
// any order) and counts the netpol agents' entries in its managedFields.
func checkStatus(t *testing.T, step string, u *unstructured.Unstructured, want []string, managers int) {
	t.Helper()
	var got []string
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, raw := range conds {
		m := raw.(map[string]any)
		got = append(got, fmt.Sprintf("%s=%s/%s", m["type"], m["status"], m["reason"]))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s: conditions %v, want %v", step, got, want)
	}
	var ours []string
	for _, f := range u.GetManagedFields() {
		if strings.HasPrefix(f.Manager, "netpol-agent") {
			ours = append(ours, f.Manager)
		}
	}
	if len(ours) != managers {
		t.Errorf("%s: managedFields of %v, want %d of netpol's", step, ours, managers)
	}
}

func manifestsOf(t *testing.T, stream string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := kubetest.Manifests(stream)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
