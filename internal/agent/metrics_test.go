package agent_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/dnsproxy"
	"github.com/netpol/netpol/internal/observed"
	"github.com/netpol/netpol/internal/render/nft"
)

const twoPods = `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec: {nodeName: node-1, containers: [{name: c, ports: [{containerPort: 80}]}]}
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: shop, labels: {app: client}}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIP: 198.18.1.2}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {matchLabels: {app: client}}}]}]
`

// TestAgentServesMetricsAndHealth: /readyz turns ready with the first
// programmed input; /metrics reports what is programmed, and an invalid
// input as an input error while the last rules stay.
func TestAgentServesMetricsAndHealth(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(file, []byte(twoPods), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	a := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{dir}}}, nft.New(fake), nil)
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()

	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before the first pass: %d %q, want 503", code, body)
	}
	if code, _ := get(t, srv.URL+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d, want 200", code)
	}
	if err := a.Pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after the first pass: %d %q, want 200", code, body)
	}
	// web's ingress table allows client: one chain, the set of client's
	// address, and web's address in the ingress-4 map.
	wantMetrics(t, srv.URL, map[string]string{
		"netpol_local_pods":                         "2",
		"netpol_nft_chains":                         "3", // egress, ingress, web's table
		"netpol_nft_set_elements":                   "2", // web in ingress-4, client in the peer set
		"netpol_errors_total{stage=\"input\"}":      "0",
		"netpol_errors_total{stage=\"kernel\"}":     "0",
		"netpol_sync_duration_seconds_count":        "1",
		"netpol_change_to_programmed_seconds_count": "1",
		"netpol_conntrack_entries_cut_total":        "0",
	})

	// An input that cannot be read as a whole (a YAML syntax error: which
	// objects the file holds is unknown): counted, and the rules stay.
	if err := os.WriteFile(file, []byte(twoPods+"\n---\nkind: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.Pass(t.Context()); err == nil {
		t.Fatal("a pass over an invalid input succeeded")
	}
	wantMetrics(t, srv.URL, map[string]string{
		"netpol_errors_total{stage=\"input\"}": "1",
		"netpol_nft_set_elements":              "2",
		"netpol_sync_duration_seconds_count":   "1",
	})
	if code, _ := get(t, srv.URL+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz after a bad input: %d, want 200: the last rules are still enforced", code)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// wantMetrics checks samples of the text exposition format.
func wantMetrics(t *testing.T, base string, want map[string]string) {
	t.Helper()
	_, body := get(t, base+"/metrics")
	got := map[string]string{}
	for _, line := range strings.Split(body, "\n") {
		if name, value, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") {
			got[name] = value
		}
	}
	for name, v := range want {
		if got[name] != v {
			t.Errorf("%s = %q, want %q", name, got[name], v)
		}
	}
}

// countingLearner is a DNSLearner that counts how often its Stats are
// read: a real one sweeps every learned address under the lock that the
// answers' hold needs.
type countingLearner struct{ stats int }

func (l *countingLearner) Update(context.Context, dnsproxy.Scope) error {
	return nil
}
func (l *countingLearner) Stats() dnsproxy.Stats              { l.stats++; return dnsproxy.Stats{Answers: 7} }
func (l *countingLearner) NamesOf(netip.Addr) []string        { return nil }
func (l *countingLearner) Collectors() []prometheus.Collector { return nil }

// TestMetricsReadStatsOncePerScrape: one scrape of /metrics reads the DNS
// learner's Stats once for all its counters and gauges, and the recorder's
// once for its own.
func TestMetricsReadStatsOncePerScrape(t *testing.T) {
	learner, rec := &countingLearner{}, &countingRecorder{}
	a := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{t.TempDir()}}, DNS: learner, Record: rec},
		nft.New(knftables.NewFake(knftables.InetFamily, nft.TableName)), nil)
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	_, body := get(t, srv.URL+"/metrics")
	if learner.stats != 1 || rec.stats != 1 {
		t.Errorf("one scrape read the learner's Stats %d times and the recorder's %d, want once each", learner.stats, rec.stats)
	}
	for _, line := range []string{"netpol_dns_answers_total 7", "netpol_record_connections_total 3"} {
		if !strings.Contains(body, "\n"+line+"\n") {
			t.Errorf("/metrics has no line %q", line)
		}
	}
}

// countingRecorder is a Recorder that counts how often its Stats are read.
type countingRecorder struct{ stats int }

func (r *countingRecorder) Update(func(netip.Addr) string) {}
func (r *countingRecorder) Stats() observed.Stats          { r.stats++; return observed.Stats{Connections: 3} }
