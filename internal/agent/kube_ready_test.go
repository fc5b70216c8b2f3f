package agent_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/kubetest"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source/kube"
)

// unready is the file input of a test that says whether it is ready, as
// kube.Watch does.
type unready struct {
	agent.Files
	err error
}

func (u *unready) Ready() error { return u.err }

// TestAgentKubeReadyzAsksTheInput: an agent that has programmed is still
// not ready while its input says it is not (kube.Watch while it cannot tell
// whether the API server serves an admin policy kind).
func TestAgentKubeReadyzAsksTheInput(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(twoPods), 0o644); err != nil {
		t.Fatal(err)
	}
	in := &unready{Files: agent.Files{Paths: []string{dir}}, err: errors.New("adminnetworkpolicies: unknown")}
	a := agent.New(agent.Config{Node: "node-1", Input: in}, nft.New(knftables.NewFake(knftables.InetFamily, nft.TableName)), nil)
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	if err := a.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "adminnetworkpolicies: unknown") {
		t.Errorf("/readyz while the input is not ready: %d %q, want 503 saying why", code, body)
	}
	in.err = nil
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz once the input is ready: %d %q, want 200", code, body)
	}
}

// policyDiscovery matches the discovery requests of the network-policy-api
// group versions, and not the lists and watches of their resources.
var policyDiscovery = regexp.MustCompile(`^/apis/policy\.networking\.k8s\.io/[^/]+$`)

// TestAgentKubeFaultNotReadyWhileAdminKindsUnknown: while the API server answers
// the discovery of the admin policy kinds with 503 (injected in front of a
// real API server), the agent does not program a cluster without them: a
// pass fails, /readyz and /metrics say which kinds are unknown, and a
// Warning Event on the node says why. Once discovery answers, the agent
// programs the admin policies and is ready.
func TestAgentKubeFaultNotReadyWhileAdminKindsUnknown(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(t, c, shop+denyRemote)
	var failing atomic.Bool
	failing.Store(true)
	cfg := rest.CopyConfig(c.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if failing.Load() && policyDiscovery.MatchString(req.URL.Path) {
				return &http.Response{StatusCode: http.StatusServiceUnavailable, Request: req,
					Header: http.Header{"Content-Type": {"text/plain"}}, Body: io.NopCloser(strings.NewReader("injected"))}, nil
			}
			return rt.RoundTrip(req)
		})
	})
	b := record.NewBroadcaster(record.WithContext(ctx))
	t.Cleanup(b.Shutdown)
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	rec := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "netpol-agent", Host: "node-1"})

	w, err := kube.NewWatchWithOptions(cfg, kube.WatchOptions{Recorder: rec, Node: "node-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	a := agent.New(agent.Config{Node: "node-1", Input: w}, nft.New(knftables.NewFake(knftables.InetFamily, nft.TableName)), nil)
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()

	if err := a.Pass(ctx); err == nil {
		t.Errorf("a pass programmed while discovery fails: %d tables", a.Status().Tables)
	}
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "adminnetworkpolicies") {
		t.Errorf("/readyz while discovery fails: %d %q, want 503 naming adminnetworkpolicies", code, body)
	}
	wantMetrics(t, srv.URL, map[string]string{
		`netpol_admin_policy_resource_state{resource="adminnetworkpolicies",state="unknown"}`:   "1",
		`netpol_admin_policy_resource_state{resource="clusternetworkpolicies",state="unknown"}`: "1",
		`netpol_admin_policy_resource_state{resource="adminnetworkpolicies",state="watched"}`:   "0",
	})
	waitEvent(t, cs, "node-1", kube.EventDiscoveryFailed, "adminnetworkpolicies")

	failing.Store(false)
	deadline := time.Now().Add(30 * time.Second) // a bound on a hang, not a performance assertion
	for err := a.Pass(ctx); err != nil; err = a.Pass(ctx) {
		if time.Now().After(deadline) {
			t.Fatalf("discovery answers again, and the agent still fails: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st := a.Status(); st.Pods != 2 || st.Tables != 2 {
		t.Errorf("once discovery answers: %d pods, %d tables; want 2 pods, 2 tables", st.Pods, st.Tables)
	}
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz once discovery answers: %d %q, want 200", code, body)
	}
	wantMetrics(t, srv.URL, map[string]string{
		`netpol_admin_policy_resource_state{resource="adminnetworkpolicies",state="unknown"}`: "0",
		`netpol_admin_policy_resource_state{resource="adminnetworkpolicies",state="watched"}`: "1",
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
