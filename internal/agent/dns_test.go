package agent_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/dnsproxy"
	"github.com/netpol/netpol/internal/render/nft"
)

// scopeLearner is a DNSLearner that keeps what it was last given.
type scopeLearner struct{ last dnsproxy.Scope }

func (l *scopeLearner) Update(_ context.Context, s dnsproxy.Scope) error {
	l.last = s
	return nil
}
func (l *scopeLearner) Stats() dnsproxy.Stats              { return dnsproxy.Stats{} }
func (l *scopeLearner) NamesOf(netip.Addr) []string        { return nil }
func (l *scopeLearner) Collectors() []prometheus.Collector { return nil }

// domainsOnNode1: a pod of node-1 under a domainNames rule, a pod of
// node-2, and no kube-dns Service in the input.
const domainsOnNode1 = `
apiVersion: v1
kind: Node
metadata: {name: node-1}
status: {addresses: [{type: InternalIP, address: 198.19.255.1}]}
---
apiVersion: v1
kind: Namespace
metadata: {name: app, labels: {kubernetes.io/metadata.name: app}}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: app, labels: {app: client}}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIPs: [{ip: 198.18.1.1}]}
---
apiVersion: v1
kind: Pod
metadata: {name: far, namespace: app, labels: {app: far}}
spec: {nodeName: node-2, containers: [{name: c}]}
status: {podIPs: [{ip: 198.18.2.1}]}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: names}
spec:
  priority: 10
  subject: {namespaces: {matchLabels: {kubernetes.io/metadata.name: app}}}
  egress:
  - name: names
    action: Allow
    to: [{domainNames: ["*.allowed.test"]}]
    ports: [{portNumber: {port: 443, protocol: TCP}}]
`

// TestAdversarialClusterDNSFollowed: the cluster DNS cannot be read when
// the agent starts (the API server is away, or kube-dns is not there
// yet). The agent is not ready and says why; once the addresses can be
// read, a pass with the input unchanged hands them to the learner and the
// agent is ready. The learner is told the cluster's own addresses too,
// which no answer may teach.
func TestAdversarialClusterDNSFollowed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(domainsOnNode1), 0o644); err != nil {
		t.Fatal(err)
	}
	learner := &scopeLearner{}
	var servers []netip.Addr
	dnsErr := errors.New(`services "kube-dns" not found`)
	a := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{dir}}, DNS: learner,
		ClusterDNS: func() ([]netip.Addr, error) { return servers, dnsErr }},
		nft.New(knftables.NewFake(knftables.InetFamily, nft.TableName)), nil)
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	if err := a.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, `services "kube-dns" not found`) {
		t.Errorf("/readyz without the cluster DNS: %d %q, want 503 saying why", code, body)
	}
	if len(learner.last.Servers) != 0 || !slices.Equal(learner.last.Clients, []netip.Addr{netip.MustParseAddr("198.18.1.1")}) {
		t.Errorf("learner given servers %v and clients %v, want none and 198.18.1.1", learner.last.Servers, learner.last.Clients)
	}
	servers, dnsErr = []netip.Addr{netip.MustParseAddr("198.18.0.10")}, nil
	if err := a.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(learner.last.Servers, servers) {
		t.Errorf("after the cluster DNS could be read: learner given servers %v, want %v", learner.last.Servers, servers)
	}
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz with the cluster DNS: %d %q, want 200", code, body)
	}
	cluster := learner.last.Cluster
	for addr, want := range map[string]bool{"198.19.255.1": true, "198.18.1.1": true, "198.18.2.1": true, "198.18.3.1": false} {
		if cluster == nil || cluster(netip.MustParseAddr(addr)) != want {
			t.Errorf("the learner's Cluster(%s) is not %v", addr, want)
		}
	}
}
