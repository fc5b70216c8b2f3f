package agent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/kubetest"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/source/kube"
	"github.com/netpol/netpol/internal/status"
)

// denyRemoteTypo is denyRemote with a second rule whose protocol is
// lower-case: the CRD stores it (a free string), netpol refuses it.
const denyRemoteTypo = `{"spec":{"ingress":[
 {"name":"no-remote","action":"Deny","from":[{"pods":{"namespaceSelector":{},"podSelector":{"matchLabels":{"app":"frontend"}}}}]},
 {"name":"no-dns","action":"Deny","from":[{"namespaces":{}}],"ports":[{"portNumber":{"protocol":"udp","port":53}}]}]}}`

// typoFinding is what the agent says of it.
const typoFinding = `AdminNetworkPolicy deny-remote: spec.ingress[1].ports[0].portNumber.protocol: unsupported value "udp"`

// clientChain lists the ingress chain of shop/client as verdict and
// comment (the policy rule it comes from), once per address family.
func clientChain(t *testing.T, fake *knftables.Fake, st agent.Status) []string {
	t.Helper()
	for _, p := range st.IR.Pods {
		if p.Pod != "shop/client" || p.Ingress == "" {
			continue
		}
		rules, err := fake.ListRules(context.Background(), p.Ingress)
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
	return nil
}

// TestAgentAdversarialInvalidAdminUpdateKeepsDenying: a Deny policy is
// programmed; an update adds a rule that the API server stores and netpol
// refuses (protocol "udp"). The policy is not dropped (which lifted its
// denies on every node): its valid rule still denies and the invalid one
// denies everything (fail closed), and the agent says which policy and
// why: its --status, /readyz (not ready), a metric, the policy's
// conditions and a Warning Event.
func TestAgentAdversarialInvalidAdminUpdateKeepsDenying(t *testing.T) {
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
	mustCreate(t, c, shop+denyRemote)
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
	rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "netpol-agent", Host: "node-1"})
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	a := agent.New(agent.Config{Node: "node-1", Input: w,
		Reporter: &status.Writer{Node: "node-1", Client: dyn, Recorder: rec, Policies: w.AdminPolicies}}, nft.New(fake), nil)
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	st := a.Status()
	want := []string{"drop AdminNetworkPolicy deny-remote no-remote", "drop AdminNetworkPolicy deny-remote no-remote"}
	if got := clientChain(t, fake, st); !slices.Equal(got, want) {
		t.Fatalf("before the update: client's ingress chain %q, want %q", got, want)
	}

	if _, err := dyn.Resource(kube.ANP).Patch(ctx, "deny-remote", types.MergePatchType, []byte(denyRemoteTypo), metav1.PatchOptions{}); err != nil {
		t.Fatalf("the API server refuses the update: %v", err)
	}
	st = passUntil(t, ctx, a, w, st.Programmed)
	// The valid rule, per address family, then the invalid one failed
	// closed: it denies everything, whatever the family.
	want = []string{"drop AdminNetworkPolicy deny-remote no-remote", "drop AdminNetworkPolicy deny-remote no-remote",
		"drop AdminNetworkPolicy deny-remote no-dns"}
	if got := clientChain(t, fake, st); !slices.Equal(got, want) {
		t.Errorf("after the invalid update: client's ingress chain %q, want %q", got, want)
	}
	if len(st.FailedClosed) != 1 || !strings.Contains(st.FailedClosed[0], typoFinding) {
		t.Errorf("status: failed closed %q, want one entry containing %q", st.FailedClosed, typoFinding)
	}
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, typoFinding) {
		t.Errorf("/readyz: %d %q, want 503 naming the policy and why", code, body)
	}
	wantMetrics(t, srv.URL, map[string]string{
		`netpol_admin_policy_failed_closed{kind="AdminNetworkPolicy",name="deny-remote"}`: "1",
	})
	waitConditions(t, w, "AdminNetworkPolicy deny-remote", 2, "Accepted=False/Invalid", "Programmed=False/FailedClosed")
	waitEvent(t, cs, "deny-remote", status.EventInvalid, `spec.ingress[1].ports[0].portNumber.protocol: unsupported value "udp"`)

	// Fixed: ready again, and the metric's series goes.
	fixed := strings.Replace(denyRemoteTypo, `"udp"`, `"UDP"`, 1)
	if _, err := dyn.Resource(kube.ANP).Patch(ctx, "deny-remote", types.MergePatchType, []byte(fixed), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	st = passUntil(t, ctx, a, w, st.Programmed)
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusOK || len(st.FailedClosed) != 0 {
		t.Errorf("after the fix: /readyz %d %q, failed closed %q; want ready, none", code, body, st.FailedClosed)
	}
	if _, body := get(t, srv.URL+"/metrics"); strings.Contains(body, `netpol_admin_policy_failed_closed{`) {
		t.Error("after the fix: the failed-closed metric still has a series")
	}
	waitConditions(t, w, "AdminNetworkPolicy deny-remote", 3, "Accepted=True/Valid", "Programmed=True/Programmed")
}

// TestAgentAdversarialInvalidAdminFileKeepsDenying: the same update in
// --source mode (the manifests on disk) keeps the denies too, and the
// agent is not ready and says why.
func TestAgentAdversarialInvalidAdminFileKeepsDenying(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"shop.yaml": shop, "anp.yaml": denyRemote})
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	a := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{dir}}}, nft.New(fake), nil)
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	if err := a.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	typo := denyRemote + `  - {name: no-dns, action: Deny, from: [{namespaces: {}}], ports: [{portNumber: {protocol: udp, port: 53}}]}
`
	writeFiles(t, dir, map[string]string{"shop.yaml": shop, "anp.yaml": typo})
	if err := a.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	st := a.Status()
	want := []string{"drop AdminNetworkPolicy deny-remote no-remote", "drop AdminNetworkPolicy deny-remote no-remote",
		"drop AdminNetworkPolicy deny-remote no-dns"}
	if got := clientChain(t, fake, st); !slices.Equal(got, want) {
		t.Errorf("after the invalid update: client's ingress chain %q, want %q", got, want)
	}
	const finding = `anp.yaml (document 2): ` + typoFinding
	if len(st.FailedClosed) != 1 || !strings.Contains(st.FailedClosed[0], finding) {
		t.Errorf("status: failed closed %q, want one entry containing %q", st.FailedClosed, finding)
	}
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, typoFinding) {
		t.Errorf("/readyz: %d %q, want 503 naming the policy and why", code, body)
	}
}
