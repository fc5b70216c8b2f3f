package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/kubetest"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/source/kube"
	"github.com/netpol/netpol/internal/status"
)

// TestAgentFollowsAPIServer runs the agent's passes on a watch of a real
// API server, with knftables' fake as the kernel: the first pass programs
// node-1's isolated pod, a pod relabel becomes a set-element transaction,
// and a NetworkPolicy deletion removes the pod's table.
func TestAgentFollowsAPIServer(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, shop)

	w, fake, a := node1Agent(t, c)
	st := a.Status()
	if st.Pods != 2 || st.Tables != 1 {
		t.Fatalf("first pass: %d local pods, %d tables; want 2 pods (web, client) and 1 table (web's ingress)", st.Pods, st.Tables)
	}
	if els := elementsOf(t, fake, "ingress-4"); els != "198.18.1.1" {
		t.Fatalf("ingress-4 map keys = %q, want web's address only", els)
	}

	// client becomes a frontend: it joins the policy's peer set, one element.
	client, err := cs.CoreV1().Pods("shop").Get(ctx, "client", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	client.Labels["app"] = "frontend"
	if _, err := cs.CoreV1().Pods("shop").Update(ctx, client, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	st = passUntil(t, ctx, a, w, st.Programmed)
	if st.Stats.Operations != 1 || st.Stats.Elements != 1 {
		t.Errorf("relabel: %+v, want 1 operation adding 1 element", st.Stats)
	}

	if err := cs.NetworkingV1().NetworkPolicies("shop").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	st = passUntil(t, ctx, a, w, st.Programmed)
	if st.Tables != 0 {
		t.Errorf("after the NetworkPolicy's deletion: %d tables, want 0", st.Tables)
	}
	if els := elementsOf(t, fake, "ingress-4"); els != "" {
		t.Errorf("ingress-4 map keys = %q, want none", els)
	}
}

// shop: web and client on node-1, remote (a frontend) on node-2; web
// accepts only frontends.
const shop = `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: shop, labels: {app: client}}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIP: 198.18.1.2}
---
apiVersion: v1
kind: Pod
metadata: {name: remote, namespace: shop, labels: {app: frontend}}
spec: {nodeName: node-2, containers: [{name: c}]}
status: {podIP: 198.18.1.3}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {matchLabels: {app: frontend}}}]}]
`

// denyRemote denies every pod ingress from frontends, remote among them:
// every pod of node-1 gets an ingress table.
const denyRemote = `
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: deny-remote}
spec:
  priority: 10
  subject: {namespaces: {}}
  ingress:
  - {name: no-remote, action: Deny, from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: frontend}}}}]}
`

// node1Agent starts a watch of c and node-1's agent on it, with knftables'
// fake as the kernel, and runs its first pass.
func node1Agent(t *testing.T, c *kubetest.Cluster) (*kube.Watch, *knftables.Fake, *agent.Agent) {
	t.Helper()
	w, err := kube.NewWatch(c.Config, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	a := agent.New(agent.Config{Node: "node-1", Input: w}, nft.New(fake), nil)
	if err := a.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	return w, fake, a
}

// mustCreate creates the objects of a YAML stream in c.
func mustCreate(t *testing.T, c *kubetest.Cluster, stream string) {
	t.Helper()
	if err := c.Create(t.Context(), manifests(t, stream)); err != nil {
		t.Fatal(err)
	}
}

// passUntil runs passes as the agent's loop does, until one programs an
// input other than after.
func passUntil(t *testing.T, ctx context.Context, a *agent.Agent, w *kube.Watch, after string) agent.Status {
	t.Helper()
	deadline := time.After(30 * time.Second) // a bound on a hang, not a performance assertion
	for {
		select {
		case <-w.Changed():
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("the agent never programmed the change")
		}
		if err := a.Pass(ctx); err != nil {
			t.Fatal(err)
		}
		if st := a.Status(); st.Programmed != after {
			return st
		}
	}
}

func elementsOf(t *testing.T, fake *knftables.Fake, m string) string {
	t.Helper()
	return keysOf(t, fake, "map", m)
}

// keysOf lists the keys of a set or map ("set", "map") of the fake.
func keysOf(t *testing.T, fake *knftables.Fake, kind, m string) string {
	t.Helper()
	els, err := fake.ListElements(context.Background(), kind, m)
	if err != nil {
		t.Fatal(err)
	}
	out := ""
	for i, e := range els {
		if i > 0 {
			out += ","
		}
		out += e.Key[0]
	}
	return out
}

// TestAgentReportsStatus runs two nodes' agents against a real API server:
// an invalid AdminNetworkPolicy is enforced failed closed while the rest is
// enforced as written, and reported as Accepted=False with a Warning Event; a valid one is Accepted
// and Programmed; a node that fails adds its own condition, which goes
// away when it recovers; fixing the invalid policy makes it Accepted at
// its new generation. Status writes do not count as input changes.
func TestAgentReportsStatus(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, shop+denyRemote+`
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: backwards-range}
spec:
  priority: 20
  subject: {namespaces: {}}
  ingress:
  - name: range
    action: Deny
    from: [{namespaces: {}}]
    ports: [{portRange: {protocol: TCP, start: 9000, end: 8000}}]
`)
	anps := dyn.Resource(kube.ANP)

	w, err := kube.NewWatch(c.Config, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	b := record.NewBroadcaster(record.WithContext(ctx))
	t.Cleanup(b.Shutdown)
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	writer := func(node string) *status.Writer {
		rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "netpol-agent", Host: node})
		return &status.Writer{Node: node, Client: dyn, Recorder: rec, Policies: w.AdminPolicies}
	}
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	a := agent.New(agent.Config{Node: "node-1", Input: w, Pipeline: pipeline.Options{SkipInvalid: true},
		Reporter: writer("node-1")}, nft.New(fake), nil)
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	// The invalid policy is enforced failed closed (its rule denies all
	// ingress), the rest as written: web is isolated by its NetworkPolicy,
	// and deny-remote gives every pod of node-1 an ingress table.
	if st := a.Status(); st.Error != "" || st.Pods != 2 || st.Tables != 2 {
		t.Fatalf("pass: error %q, %d pods, %d tables; want no error, 2 pods, 2 tables", st.Error, st.Pods, st.Tables)
	}
	waitConditions(t, w, "AdminNetworkPolicy deny-remote", 1,
		"Accepted=True/Valid", "Programmed=True/Programmed")
	bad := waitConditions(t, w, "AdminNetworkPolicy backwards-range", 1,
		"Accepted=False/Invalid", "Programmed=False/FailedClosed")
	const why = "spec.ingress[0].ports[0].portRange: start (9000) must be less than end (8000)"
	if msg := bad.Conditions[0].Message; !strings.Contains(msg, why) {
		t.Errorf("Accepted message = %q, want it to contain %q", msg, why)
	}
	waitEvent(t, cs, "backwards-range", status.EventInvalid, why)

	// The status writes reached the watch without changing its input.
	programmed := a.Status().Programmed
	if _, _, fp, _ := w.Read(); fp != programmed {
		t.Errorf("after the status writes the input is %s, want %s still", fp, programmed)
	}

	// node-2 fails to program: its own condition joins the shared ones,
	// and leaves when node-2 recovers.
	w2 := writer("node-2")
	if err := w2.Report(ctx, nil, errors.New("nftables transaction (3 operations): Error: Could not process rule")); err != nil {
		t.Fatal(err)
	}
	waitConditions(t, w, "AdminNetworkPolicy deny-remote", 1,
		"Accepted=True/Valid", "Programmed=True/Programmed", "netpol.io/NotProgrammed.node-2=True/ProgrammingFailed")
	if err := w2.Report(ctx, nil, nil); err != nil {
		t.Fatal(err)
	}
	waitConditions(t, w, "AdminNetworkPolicy deny-remote", 1,
		"Accepted=True/Valid", "Programmed=True/Programmed")

	// Fixing the range makes the policy valid at generation 2.
	patch := []byte(`{"spec":{"ingress":[{"name":"range","action":"Deny","from":[{"namespaces":{}}],"ports":[{"portRange":{"protocol":"TCP","start":8000,"end":9000}}]}]}}`)
	if _, err := anps.Patch(ctx, "backwards-range", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	passUntil(t, ctx, a, w, programmed)
	waitConditions(t, w, "AdminNetworkPolicy backwards-range", 2,
		"Accepted=True/Valid", "Programmed=True/Programmed")
}

// waitConditions waits until the policy named ref has exactly the
// conditions want ("Type=Status/Reason", in any order), all observing
// generation, and returns it.
func waitConditions(t *testing.T, w *kube.Watch, ref string, generation int64, want ...string) kube.AdminPolicy {
	t.Helper()
	slices.Sort(want)
	var last []string
	deadline := time.Now().Add(30 * time.Second) // a bound on a hang, not a performance assertion
	for time.Now().Before(deadline) {
		for _, p := range w.AdminPolicies() {
			if p.Ref() != ref {
				continue
			}
			last = last[:0]
			stale := false
			for _, c := range p.Conditions {
				last = append(last, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
				stale = stale || c.ObservedGeneration != generation
			}
			slices.Sort(last)
			if !stale && slices.Equal(last, want) {
				return p
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: conditions %v, want %v at generation %d", ref, last, want, generation)
	return kube.AdminPolicy{}
}

func waitEvent(t *testing.T, cs kubernetes.Interface, object, reason, contains string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a bound on a hang, not a performance assertion
	for time.Now().Before(deadline) {
		evs, err := cs.CoreV1().Events("").List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == object && e.Reason == reason && e.Type == corev1.EventTypeWarning &&
				strings.Contains(e.Message, contains) {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no Warning Event %s for %s containing %q", reason, object, contains)
}

// TestAgentFollowsAdminTiers: BaselineAdminNetworkPolicy and
// ClusterNetworkPolicy created, patched and deleted through a real API
// server, and web's ingress chain after each (knftables' fake as the
// kernel): every rule is a verdict and the policy rule it comes from, once
// per address family.
func TestAgentFollowsAdminTiers(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	// shop without its NetworkPolicy: nothing isolates web.
	mustCreate(t, c, shop[:strings.Index(shop, "---\napiVersion: networking.k8s.io/v1")])
	w, fake, a := node1Agent(t, c)
	webChain := func(st agent.Status) []string {
		t.Helper()
		for _, p := range st.IR.Pods {
			if p.Pod != "shop/web" || p.Ingress == "" {
				continue
			}
			rules, err := fake.ListRules(ctx, p.Ingress)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, r := range rules {
				words := strings.Fields(r.Rule)
				out = append(out, words[len(words)-1]+" "+*r.Comment)
			}
			return out
		}
		return nil // no ingress table
	}
	banps := dyn.Resource(schema.GroupVersionResource{Group: "policy.networking.k8s.io", Version: "v1alpha1", Resource: "baselineadminnetworkpolicies"})
	cnps := dyn.Resource(schema.GroupVersionResource{Group: "policy.networking.k8s.io", Version: "v1alpha2", Resource: "clusternetworkpolicies"})
	twice := func(rule string) []string { return []string{rule, rule} } // IPv4, IPv6
	st := a.Status()
	for _, step := range []struct {
		name   string
		change func() error
		want   []string
	}{
		{"BANP created", func() error {
			return c.Create(ctx, manifests(t, `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata: {name: default}
spec:
  subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: web}}}}
  ingress: [{name: frontends, action: Deny, from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: frontend}}}}]}]
`))
		}, twice("drop BaselineAdminNetworkPolicy default frontends")},
		{"BANP patched to Allow", func() error {
			_, err := banps.Patch(ctx, "default", types.MergePatchType,
				[]byte(`{"spec":{"ingress":[{"name":"frontends","action":"Allow","from":[{"pods":{"namespaceSelector":{},"podSelector":{"matchLabels":{"app":"frontend"}}}}]}]}}`), metav1.PatchOptions{})
			return err
		}, twice("return BaselineAdminNetworkPolicy default frontends")},
		{"CNP created in the admin tier", func() error {
			return c.Create(ctx, manifests(t, `
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: guard}
spec:
  tier: Admin
  priority: 10
  subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: web}}}}
  ingress: [{name: clients, action: Deny, from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: client}}}}]}]
`))
		}, append(twice("drop ClusterNetworkPolicy guard clients"), twice("return BaselineAdminNetworkPolicy default frontends")...)},
		{"CNP patched to Accept", func() error {
			_, err := cnps.Patch(ctx, "guard", types.MergePatchType,
				[]byte(`{"spec":{"ingress":[{"name":"clients","action":"Accept","from":[{"pods":{"namespaceSelector":{},"podSelector":{"matchLabels":{"app":"client"}}}}]}]}}`), metav1.PatchOptions{})
			return err
		}, append(twice("return ClusterNetworkPolicy guard clients"), twice("return BaselineAdminNetworkPolicy default frontends")...)},
		{"CNP deleted", func() error { return cnps.Delete(ctx, "guard", metav1.DeleteOptions{}) },
			twice("return BaselineAdminNetworkPolicy default frontends")},
		{"BANP deleted: web has no table", func() error { return banps.Delete(ctx, "default", metav1.DeleteOptions{}) }, nil},
	} {
		if err := step.change(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		st = passUntil(t, ctx, a, w, st.Programmed)
		if got := webChain(st); !slices.Equal(got, step.want) {
			t.Errorf("%s: web's ingress chain\n%s\nwant\n%s", step.name, strings.Join(got, "\n"), strings.Join(step.want, "\n"))
		}
	}
	if els := elementsOf(t, fake, "ingress-4"); els != "" {
		t.Errorf("ingress-4 map keys = %q, want none", els)
	}
}

func manifests(t *testing.T, stream string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := kubetest.Manifests(stream)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestAgentKubeServiceChangeProgramsNothing: the rules stay pod-address
// based (they run after the Service's DNAT, and the cut judges the
// translated tuple), so the agent does not watch Services or
// EndpointSlices: creating and changing them wakes nothing and programs
// nothing.
func TestAgentKubeServiceChangeProgramsNothing(t *testing.T) {
	c := kubetest.Start(t)
	mustCreate(t, c, shop)
	w, fake, a := node1Agent(t, c)
	// Let the watch deliver what the setup wrote (the pods' status writes
	// come after them), and program it.
	for quiet := false; !quiet; {
		select {
		case <-w.Changed():
			if err := a.Pass(t.Context()); err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Second):
			quiet = true
		}
	}
	before := a.Status()
	fake.RLock()
	tx := fake.LastTransaction
	fake.RUnlock()
	mustCreate(t, c, `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-1, namespace: shop, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints: [{addresses: [198.18.1.1]}]
ports: [{name: http, port: 8080, protocol: TCP}]
`)
	select {
	case <-w.Changed():
		t.Error("a Service and an EndpointSlice woke the agent")
	case <-time.After(2 * time.Second): // the watch had time to deliver them, had it watched them
	}
	if err := a.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := a.Status(); st.Programmed != before.Programmed || fake.LastTransaction != tx {
		t.Errorf("after Service changes: programmed %s (was %s), a new transaction: %v; want nothing done",
			st.Programmed, before.Programmed, fake.LastTransaction != tx)
	}
}
