package suggest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/network-policy-api/apis/v1alpha1"

	"github.com/netpol/netpol/internal/l4"
)

// twoClients: two clients in app, each calling its own server in shop;
// both servers declare http on 8080.
const twoClients = `
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: app, labels: {app: client}}
spec: {containers: [{name: c}]}
status: {podIP: 198.18.2.1}
---
apiVersion: v1
kind: Pod
metadata: {name: client2, namespace: app, labels: {app: client2}}
spec: {containers: [{name: c}]}
status: {podIP: 198.18.2.2}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: api, namespace: shop, labels: {app: api}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.2}
`

func twoClientsFlows() []Flow {
	tcp := func(n uint16) l4.Port { return l4.Port{Proto: l4.TCP, Num: n} }
	return []Flow{
		{From: "app/client", To: "shop/web", Port: tcp(8080), Count: 1},
		{From: "app/client2", To: "shop/api", Port: tcp(8080), Count: 1},
		{From: "shop/web", To: "198.18.200.7", Port: tcp(443), Count: 1},
	}
}

// TestSuggestAdmin pins the AdminNetworkPolicies for the fixture.
func TestSuggestAdmin(t *testing.T) {
	e, flows := fixture(t)
	ps, err := Suggest(e.Cluster(), flows, Options{Tier: TierAdmin, Priority: 100})
	if err != nil {
		t.Fatal(err)
	}
	got, err := YAML(ps)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != wantAdmin {
		t.Errorf("got\n%s\nwant\n%s", got, wantAdmin)
	}
	// 2 workloads from 999 need 999 and 1000; from 1000, 1001 is beyond.
	if _, err := Suggest(e.Cluster(), flows, Options{Tier: TierAdmin, Priority: 999}); err != nil {
		t.Errorf("priority 999: %v", err)
	}
	_, err = Suggest(e.Cluster(), flows, Options{Tier: TierAdmin, Priority: 1000})
	if want := "2 workloads need the priorities 1000 to 1001, one each, and an AdminNetworkPolicy's is from 0 to 1000: choose another first priority, or another tier"; err == nil || err.Error() != want {
		t.Errorf("priority 1000: %v, want %q", err, want)
	}
}

// TestSuggestBaseline pins the BaselineAdminNetworkPolicy for twoClients.
func TestSuggestBaseline(t *testing.T) {
	ps, err := Suggest(build(t, twoClients).Cluster(), twoClientsFlows(), Options{Tier: TierBaseline})
	if err != nil {
		t.Fatal(err)
	}
	got, err := YAML(ps)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != wantBaseline {
		t.Errorf("got\n%s\nwant\n%s", got, wantBaseline)
	}
}

// TestVerifyTiers: the check on every tier. twoClients has 6 cells
// (web and api declare 8080; each is reached by the 3 other pods), all
// allowed before. NetworkPolicies and AdminNetworkPolicies keep the two
// observed cells and lose the other 4. The baseline policy's one subject
// lets client reach api and client2 reach web too (each server's egress
// rule and each client's ingress rule apply to every pod of the two
// namespaces): 2 open unobserved, 2 lost (web -> api, api -> web: no
// ingress rule names a server as a source).
func TestVerifyTiers(t *testing.T) {
	for _, tt := range []struct {
		tier Tier
		want Report
	}{
		{TierNetworkPolicy, Report{Flows: 3, Allowed: 3, Cells: 6, Lost: 4, OpenUnobserved: 0}},
		{TierAdmin, Report{Flows: 3, Allowed: 3, Cells: 6, Lost: 4, OpenUnobserved: 0}},
		{TierBaseline, Report{Flows: 3, Allowed: 3, Cells: 6, Lost: 2, OpenUnobserved: 2}},
	} {
		before := build(t, twoClients)
		after := suggestTier(t, twoClients, twoClientsFlows(), Options{Tier: tt.tier, Priority: 100})
		r, err := Verify(before, after, twoClientsFlows())
		if err != nil {
			t.Fatal(err)
		}
		if !sameCounts(r, tt.want) || len(r.Denied) != 0 {
			t.Errorf("tier %d: %+v, want %+v", tt.tier, r, tt.want)
		}
	}
	// The fixture with its admin policies: as with its NetworkPolicies
	// (TestVerify): 4 cells, the web pods lose each other.
	before, flows := fixture(t)
	after := suggestTier(t, cluster, flows, Options{Tier: TierAdmin, Priority: 100})
	r, err := Verify(before, after, flows)
	if want := (Report{Flows: 3, Allowed: 3, Cells: 4, Lost: 2}); err != nil || !sameCounts(r, want) || len(r.Denied) != 0 {
		t.Errorf("fixture, admin: %+v %v, want %+v", r, err, want)
	}
	// Staged (no Enforce), the admin policies enforce nothing
	// (internal/policy reads netpol.io/staged on every kind): the 4 cells
	// stay open, 2 of them observed; the staged engine has them.
	ps, err := Suggest(before.Cluster(), flows, Options{Tier: TierAdmin, Priority: 100})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := YAML(ps)
	if err != nil {
		t.Fatal(err)
	}
	staged := build(t, cluster+"\n---\n"+string(docs))
	r, err = Verify(before, staged, flows)
	if want := (Report{Flows: 3, Allowed: 3, Cells: 4, Lost: 0, OpenUnobserved: 2}); err != nil || !sameCounts(r, want) || staged.Staged() == nil {
		t.Errorf("fixture, admin, staged: %+v %v (staged engine %v), want %+v", r, err, staged.Staged() != nil, want)
	}
}

// TestSuggestBaselineTaken: the API takes one BaselineAdminNetworkPolicy,
// named default; when the input has it already, a second one would
// replace it when applied (and fails to load beside it), so the tier is
// refused with the place of the one there is.
func TestSuggestBaselineTaken(t *testing.T) {
	input := twoClients + `---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata: {name: default}
spec:
  subject: {namespaces: {}}
  ingress: [{name: deny-dev, action: Deny, from: [{namespaces: {matchLabels: {env: dev}}}]}]
`
	_, err := Suggest(build(t, input).Cluster(), twoClientsFlows(), Options{Tier: TierBaseline})
	want := "the input has the BaselineAdminNetworkPolicy default already (c.yaml (document 5)), and the API takes only one: add the suggested rules to it by hand, or choose another tier"
	if err == nil || err.Error() != want {
		t.Errorf("%v, want %q", err, want)
	}
}

// TestSuggestAdminLimits: the API's limits hold whatever the flows: 30
// outside addresses on one port are one rule with two networks peers (25
// and 5, the most a peer takes), and 150 clients of one server on one
// port are two rules (100 peers, the most a rule takes, and 50).
func TestSuggestAdminLimits(t *testing.T) {
	var docs []string
	var flows []Flow
	https := l4.Port{Proto: l4.TCP, Num: 443}
	docs = append(docs, `apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: https, containerPort: 443}]}]}`)
	for i := 0; i < 150; i++ {
		docs = append(docs, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: c%d, namespace: app, labels: {app: c%d}}
spec: {containers: [{name: c}]}`, i, i))
		flows = append(flows, Flow{From: fmt.Sprintf("app/c%d", i), To: "shop/web", Port: https, Count: 1})
	}
	for i := 0; i < 30; i++ {
		flows = append(flows, Flow{From: "shop/web", To: fmt.Sprintf("203.0.113.%d", i+1), Port: https, Count: 1})
	}
	input := strings.Join(docs, "\n---\n")
	ps, err := Suggest(build(t, input).Cluster(), flows, Options{Tier: TierAdmin, Priority: 100})
	if err != nil {
		t.Fatal(err)
	}
	web := ps[len(ps)-1].(*v1alpha1.AdminNetworkPolicy)
	var got []string
	for _, r := range web.Spec.Ingress {
		got = append(got, fmt.Sprintf("ingress %s: %d peers", r.Name, len(r.From)))
	}
	for _, r := range web.Spec.Egress {
		var nets []string
		for _, p := range r.To {
			nets = append(nets, strconv.Itoa(len(p.Networks)))
		}
		got = append(got, fmt.Sprintf("egress %s: networks %s", r.Name, strings.Join(nets, " ")))
	}
	want := []string{
		"ingress allow-from-app/c0-and-99-more: 100 peers",
		"ingress allow-from-app/c54-and-49-more: 50 peers", // c0 c1 c10 c100-c109 c11 ... c53 are the first 100 in order
		"ingress deny-everything-else: 1 peers",
		"egress allow-to-203.0.113.1/32-and-29-more: networks 25 5",
		"egress allow-dns: networks 0",
		"egress deny-everything-else: networks 2",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s:\n%s\nwant\n%s", web.Name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// And the engine takes them (the limits are validated on load).
	out, err := YAML(ps)
	if err != nil {
		t.Fatal(err)
	}
	build(t, input+"\n---\n"+string(out))
}

// TestSuggestAdminRules: a direction takes 100 rules: ingress 99 Allow
// rules and the Deny, egress 98 and the DNS rule and the Deny. Clients
// each on its own port make a rule each.
func TestSuggestAdminRules(t *testing.T) {
	for _, tt := range []struct {
		clients int
		wantErr string
	}{
		{99, ""},
		{100, "AdminNetworkPolicy shop.web-suggested: ingress: 100 rules for the observed peers and ports, and the API takes 99 in this direction besides the final Deny: write NetworkPolicies (the default tier)"},
	} {
		docs := []string{"apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop, labels: {app: web}}\nspec: {containers: [{name: c}]}"}
		var flows []Flow
		for i := 0; i < tt.clients; i++ {
			docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: c%d, namespace: app, labels: {app: c%d}}\nspec: {containers: [{name: c}]}", i, i))
			flows = append(flows, Flow{From: fmt.Sprintf("app/c%d", i), To: "shop/web", Port: l4.Port{Proto: l4.TCP, Num: uint16(1000 + i)}, Count: 1})
		}
		input := strings.Join(docs, "\n---\n")
		ps, err := Suggest(build(t, input).Cluster(), flows, Options{Tier: TierAdmin, Priority: 0})
		if fmt.Sprint(err) != fmt.Sprint(tt.wantErr) && !(err == nil && tt.wantErr == "") {
			t.Errorf("%d clients: %v, want %q", tt.clients, err, tt.wantErr)
			continue
		}
		if err == nil {
			out, err := YAML(ps)
			if err != nil {
				t.Fatal(err)
			}
			build(t, input+"\n---\n"+string(out)) // the limits are validated on load
		}
	}
}
