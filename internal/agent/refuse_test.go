package agent_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// objectsInput is an Input of objects already decoded.
type objectsInput []source.Object

func (in objectsInput) Read() ([]source.Object, diag.List, string, error) {
	return in, nil, "objects", nil
}
func (objectsInput) Changed() <-chan struct{} { return nil }

// TestAdversarialAgentReportsRefusedPolicy: a tenant's NetworkPolicy past
// the limit does not stop the node programming: the pass succeeds, the
// tenant's other policy is in the kernel, the refused one adds nothing to
// its pod's chain (which still ends in the isolation drop), and the agent
// names it in its status and counts it in a metric.
func TestAdversarialAgentReportsRefusedPolicy(t *testing.T) {
	objs := append(synth.PeersPortsPolicy(1, compile.DefaultMaxPolicyTerms+1), synth.AllowFrom("small", "198.18.3.3/32", 8080))
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	a := agent.New(agent.Config{Node: synth.HostileNode, Input: objectsInput(objs)}, nft.New(fake), nil)
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	if err := a.Pass(t.Context()); err != nil {
		t.Fatalf("a pass with a refused policy failed: %v", err)
	}
	st := a.Status()
	if len(st.Refused) != 1 || !strings.HasPrefix(st.Refused[0], "NetworkPolicy tenant/hostile has 10002 ") {
		t.Errorf("status refused %q, want NetworkPolicy tenant/hostile", st.Refused)
	}
	wantMetrics(t, srv.URL, map[string]string{"netpol_policies_refused": "1"})
	if len(st.IR.Tables) != 1 {
		t.Fatalf("%d tables, want the pod's ingress table", len(st.IR.Tables))
	}
	rules, err := fake.ListRules(t.Context(), st.IR.Tables[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, r := range rules {
		texts = append(texts, r.Rule)
	}
	got := strings.Join(texts, "\n")
	if len(rules) != 3 || !strings.Contains(got, "th dport 8080 return") || texts[2] != "drop" || strings.Contains(got, "1000") {
		t.Errorf("the pod's chain:\n%s\nwant the other policy's two rules (8080, one per family) and the isolation drop, nothing of the refused one", got)
	}
}
