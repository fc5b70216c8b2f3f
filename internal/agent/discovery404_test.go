package agent_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/kubetest"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source/kube"
)

// TestAgentKubeAdversarialDiscovery404KeepsDenies: in front of a real API
// server that serves the CRDs, discovery of the admin policy group
// versions answers 404 for a while (as an API server restarting its
// aggregated discovery does). The agent's passes meanwhile keep
// deny-remote's rules (one 404 used to drop the kind and lift its denies
// until the next recheck), and it is not ready; when discovery answers
// again it is ready with the same rules.
func TestAgentKubeAdversarialDiscovery404KeepsDenies(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()
	mustCreate(t, c, shop+denyRemote)
	var notFound atomic.Bool
	var injected atomic.Int32
	cfg := rest.CopyConfig(c.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if notFound.Load() && policyDiscovery.MatchString(req.URL.Path) {
				injected.Add(1)
				return &http.Response{StatusCode: http.StatusNotFound, Request: req,
					Header: http.Header{"Content-Type": {"text/plain"}}, Body: io.NopCloser(strings.NewReader("404 page not found"))}, nil
			}
			return rt.RoundTrip(req)
		})
	})
	w, err := kube.NewWatchWithOptions(cfg, kube.WatchOptions{Recheck: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	a := agent.New(agent.Config{Node: "node-1", Input: w}, nft.New(fake), nil)
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	denies := []string{"drop AdminNetworkPolicy deny-remote no-remote", "drop AdminNetworkPolicy deny-remote no-remote"}
	if got := clientChain(t, fake, a.Status()); !slices.Equal(got, denies) {
		t.Fatalf("before the 404s: client's ingress chain %q, want %q", got, denies)
	}

	notFound.Store(true)
	// Three requests: the round of both group versions answered, and
	// the next one begun, so the first round's answers are applied.
	deadline := time.Now().Add(30 * time.Second) // a bound on a hang, not a performance assertion
	for injected.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatal("discovery was not asked again")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if got := clientChain(t, fake, a.Status()); !slices.Equal(got, denies) {
		t.Errorf("after a 404 from discovery: client's ingress chain %q, want %q", got, denies)
	}
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "adminnetworkpolicies") {
		t.Errorf("/readyz after a 404 from discovery: %d %q, want 503 naming adminnetworkpolicies", code, body)
	}

	notFound.Store(false)
	for {
		if code, _ := get(t, srv.URL+"/readyz"); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not ready after discovery answers again")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if got := clientChain(t, fake, a.Status()); !slices.Equal(got, denies) {
		t.Errorf("once discovery answers again: client's ingress chain %q, want %q", got, denies)
	}
}
