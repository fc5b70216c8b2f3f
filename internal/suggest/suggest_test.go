package suggest

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
)

// cluster: a Deployment's two pods (their template hash differs from any
// selector's taste), a client in another namespace, the cluster DNS.
const cluster = `
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {kubernetes.io/metadata.name: shop}}
---
apiVersion: v1
kind: Namespace
metadata: {name: app, labels: {kubernetes.io/metadata.name: app}}
---
apiVersion: v1
kind: Pod
metadata: {name: web-7d9f-a, namespace: shop, labels: {app: web, pod-template-hash: 7d9f}, ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-7d9f, uid: u1, controller: true}]}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: web-7d9f-b, namespace: shop, labels: {app: web, pod-template-hash: 7d9f}, ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-7d9f, uid: u1, controller: true}]}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.2}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: app, labels: {app: client, tier: front}}
spec: {containers: [{name: c}]}
status: {podIP: 198.18.2.1}
`

// fixture is the engine of cluster and three flows: the client to both
// web pods (by name, then by address), a web pod to an outside address.
func fixture(t *testing.T) (*engine.Engine, []Flow) {
	t.Helper()
	dec := &source.Decoder{}
	e, _, err := pipeline.Build(dec.Decode("c.yaml", []byte(cluster)), dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tcp := func(n uint16) l4.Port { return l4.Port{Proto: l4.TCP, Num: n} }
	return e, []Flow{
		{From: "app/client", To: "shop/web-7d9f-a", Port: tcp(8080), Count: 3},
		{From: "198.18.2.1", To: "198.18.1.2", Port: tcp(8080), Count: 1},
		{From: "shop/web-7d9f-b", To: "198.18.200.7", Port: tcp(443), Count: 2},
	}
}

// TestSuggest: one policy per workload, staged, isolating both ways, with
// the observed flows and the DNS; the Deployment's pods selected by the
// label they share and keep, the port by its name, the other namespace by
// its name, the outside address alone.
func TestSuggest(t *testing.T) {
	e, flows := fixture(t)
	nps, err := Suggest(e.Cluster(), flows, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, np := range nps {
		b, err := yaml.Marshal(np)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	got := strings.Join(docs, "---\n")
	if got != wantSuggested {
		t.Errorf("got\n%s\nwant\n%s", got, wantSuggested)
	}
}

// TestVerify: with the suggestion enforced, every observed flow is
// allowed; the two web pods no longer reach each other (they were never
// seen to), and nothing unobserved stays open among the declared ports.
func TestVerify(t *testing.T) {
	before, flows := fixture(t)
	nps, err := Suggest(before.Cluster(), flows, Options{Enforce: true})
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, np := range nps {
		b, _ := yaml.Marshal(np)
		docs = append(docs, string(b))
	}
	dec2 := &source.Decoder{}
	after, _, err := pipeline.Build(dec2.Decode("c.yaml", []byte(cluster+"---\n"+strings.Join(docs, "---\n"))), dec2.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Verify(before, after, flows)
	if err != nil {
		t.Fatal(err)
	}
	if r.Flows != 3 || r.Allowed != 3 || len(r.Denied) != 0 || r.Cells != 4 || r.Lost != 2 || r.OpenUnobserved != 0 {
		t.Errorf("report %+v, want 3 flows all allowed, 4 cells, 2 lost (web to web), 0 open unobserved", r)
	}
	// Staged, the same policies enforce nothing: every cell stays as it was.
	staged, err := Suggest(before.Cluster(), flows, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if staged[0].GetAnnotations()["netpol.io/staged"] != "true" {
		t.Errorf("annotations %v, want netpol.io/staged", staged[0].GetAnnotations())
	}
	stagedDocs, err := YAML(staged)
	if err != nil {
		t.Fatal(err)
	}
	dec3 := &source.Decoder{}
	withStaged, _, err := pipeline.Build(dec3.Decode("c.yaml", []byte(cluster+"---\n"+string(stagedDocs))), dec3.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := Verify(before, withStaged, flows); err != nil || r.Lost != 0 || r.Allowed != 3 || r.OpenUnobserved != 2 {
		t.Errorf("staged: report %+v, %v; want nothing lost, 3 flows allowed, 2 open unobserved (web to web, as before)", r, err)
	}
}

// TestSuggestCIDRMax: outside addresses are widened to the prefix that
// covers them, as wide as the options allow: two addresses of one /24 make
// one rule, an IPv6 address its /64.
func TestSuggestCIDRMax(t *testing.T) {
	e, _ := fixture(t)
	https := l4.Port{Proto: l4.TCP, Num: 443}
	flows := []Flow{
		{From: "shop/web-7d9f-a", To: "198.18.200.7", Port: https, Count: 1},
		{From: "shop/web-7d9f-b", To: "198.18.200.9", Port: https, Count: 1},
		{From: "shop/web-7d9f-b", To: "fd00::5:1", Port: https, Count: 1},
	}
	nps, err := Suggest(e.Cluster(), flows, Options{CIDRMax4: 24, CIDRMax6: 64})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	np := nps[0].(*networkingv1.NetworkPolicy)
	for _, r := range np.Spec.Egress {
		for _, p := range r.To {
			if p.IPBlock != nil {
				got = append(got, p.IPBlock.CIDR+" "+r.Ports[0].Port.String())
			}
		}
	}
	if want := []string{"198.18.200.0/24 443", "fd00::/64 443"}; strings.Join(got, ", ") != strings.Join(want, ", ") || np.Name != "web-suggested" {
		t.Errorf("%s egress to %q, want %q", np.Name, got, want)
	}
}

// sameNames: in shop, a bare pod named web and a Deployment named web
// (its pod owned through the ReplicaSet web-5c8d), and a bare pod client
// whose name no other workload of shop has.
const sameNames = `
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web-debug}}
spec: {containers: [{name: c}]}
status: {podIP: 198.18.3.1}
---
apiVersion: v1
kind: Pod
metadata: {name: web-5c8d-x, namespace: shop, labels: {app: web, pod-template-hash: 5c8d}, ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5c8d, uid: u2, controller: true}]}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.3.2}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: shop, labels: {app: client}}
spec: {containers: [{name: c}]}
status: {podIP: 198.18.3.3}
`

// TestSuggestNamesApart: two workloads of one namespace with the same name
// (the bare pod web, the Deployment web) get names that tell them apart,
// by their kind; a name no other workload of the namespace has stays
// <name>-suggested.
func TestSuggestNamesApart(t *testing.T) {
	dec := &source.Decoder{}
	e, _, err := pipeline.Build(dec.Decode("c.yaml", []byte(sameNames)), dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	http := l4.Port{Proto: l4.TCP, Num: 8080}
	nps, err := Suggest(e.Cluster(), []Flow{
		{From: "shop/web", To: "shop/web-5c8d-x", Port: http, Count: 1},
		{From: "shop/client", To: "shop/web-5c8d-x", Port: http, Count: 1},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, np := range nps {
		got = append(got, np.GetNamespace()+"/"+np.GetName())
	}
	want := []string{"shop/client-suggested", "shop/web-deployment-suggested", "shop/web-pod-suggested"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("policies %q, want %q", got, want)
	}
}
