package exposure

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
)

func build(t *testing.T, docs string) *engine.Engine {
	t.Helper()
	dec := &source.Decoder{}
	e, _, err := pipeline.Build(dec.Decode("c.yaml", []byte(docs)), dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// cluster: payments/api is isolated by a NetworkPolicy that lets any pod
// of a namespace labelled env=prod in on 8443, and 0.0.0.0/0 but one
// block on 5432; an admin policy denies namespaces labelled env=dev
// first and passes kube-system; shop/web has no policy of its own but a
// NetworkPolicy that opens it to every namespace; the baseline denies
// egress to nodes labelled role=infra; shop/batch has two pods that
// policies select differently (one is labelled tier=jobs).
const cluster = `
apiVersion: v1
kind: Namespace
metadata: {name: payments, labels: {env: prod}}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {env: prod}}
---
apiVersion: v1
kind: Pod
metadata: {name: api-0, namespace: payments, labels: {app: api}, ownerReferences: [{kind: StatefulSet, name: api, apiVersion: apps/v1, uid: u1, controller: true}]}
spec: {containers: [{name: c, ports: [{name: https, containerPort: 8443}]}]}
status: {podIP: 198.18.0.1}
---
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: shop, labels: {app: web}}
status: {podIP: 198.18.0.2}
---
apiVersion: v1
kind: Pod
metadata: {name: batch-a, namespace: shop, labels: {app: batch}, ownerReferences: [{kind: Job, name: batch, apiVersion: batch/v1, uid: u2, controller: true}]}
status: {podIP: 198.18.0.3}
---
apiVersion: v1
kind: Pod
metadata: {name: batch-b, namespace: shop, labels: {app: batch, tier: jobs}, ownerReferences: [{kind: Job, name: batch, apiVersion: batch/v1, uid: u2, controller: true}]}
status: {podIP: 198.18.0.4}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: api, namespace: payments}
spec:
  podSelector: {matchLabels: {app: api}}
  ingress:
  - from: [{namespaceSelector: {matchLabels: {env: prod}}}]
    ports: [{port: 8443}]
  - from: [{ipBlock: {cidr: 0.0.0.0/0, except: [198.18.9.0/24]}}]
    ports: [{port: 5432}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-open, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{namespaceSelector: {}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: guard}
spec:
  priority: 10
  subject: {namespaces: {matchLabels: {env: prod}}}
  ingress:
  - {name: no-dev, action: Deny, from: [{namespaces: {matchLabels: {env: dev}}}]}
  - {name: system, action: Pass, from: [{namespaces: {matchLabels: {kubernetes.io/metadata.name: kube-system}}}], ports: [{portNumber: {port: 9090}}]}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata: {name: default}
spec:
  subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {tier: jobs}}}}
  egress:
  - {name: no-infra, action: Deny, to: [{nodes: {matchLabels: {role: infra}}}]}
`

// flat is a report with each side's blocks written out in place, entry
// by entry with its tier, as a reader of one workload reads it.
func flat(r *Report) any {
	type entry struct {
		Tier string `json:"tier"`
		Entry
	}
	type side struct {
		Entries    []entry  `json:"entries"`
		Rest       string   `json:"rest"`
		IsolatedBy []string `json:"isolatedBy,omitempty"`
		Open       []string `json:"open,omitempty"`
	}
	type workload struct {
		Namespace string   `json:"namespace"`
		Kind      string   `json:"kind,omitempty"`
		Name      string   `json:"name"`
		Pods      []string `json:"pods"`
		Ingress   side     `json:"ingress"`
		Egress    side     `json:"egress"`
	}
	flatSide := func(s Side) side {
		out := side{Rest: s.Rest, IsolatedBy: s.IsolatedBy, Open: s.Open}
		for _, id := range s.Blocks {
			for _, en := range r.Blocks[id].Entries {
				out.Entries = append(out.Entries, entry{r.Blocks[id].Tier, en})
			}
		}
		return out
	}
	var out []workload
	for _, w := range r.Workloads {
		out = append(out, workload{w.Namespace, w.Kind, w.Name, w.Pods, flatSide(w.Ingress), flatSide(w.Egress)})
	}
	return out
}

func TestExposure(t *testing.T) {
	r := Of(build(t, cluster), Options{})
	got, err := json.MarshalIndent(flat(r), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	// The guard's ingress tier is one block for every workload; the two
	// NetworkPolicies' tiers and the baseline's egress one each.
	if len(r.Blocks) != 4 {
		t.Errorf("%d blocks, want 4", len(r.Blocks))
	}
	// Written by hand from the policies above, entry by entry in the
	// order the tiers decide.
	want := `[
  {
    "namespace": "payments",
    "kind": "StatefulSet",
    "name": "api",
    "pods": ["payments/api-0"],
    "ingress": {
      "entries": [
        {"tier": "admin", "verdict": "deny", "peer": "every pod in namespaces labelled env=dev", "ports": "any", "policy": {"kind": "AdminNetworkPolicy", "name": "guard"}, "rule": "no-dev", "podsToday": 0},
        {"tier": "admin", "verdict": "pass", "peer": "every pod in namespace kube-system", "ports": "9090/tcp", "policy": {"kind": "AdminNetworkPolicy", "name": "guard"}, "rule": "system", "podsToday": 0},
        {"tier": "networkpolicy", "verdict": "allow", "peer": "every pod in namespaces labelled env=prod", "ports": "8443/tcp", "policy": {"kind": "NetworkPolicy", "namespace": "payments", "name": "api"}, "rule": "ingress[0]", "podsToday": 4},
        {"tier": "networkpolicy", "verdict": "allow", "peer": "0.0.0.0/0 except 198.18.9.0/24", "ports": "5432/tcp", "policy": {"kind": "NetworkPolicy", "namespace": "payments", "name": "api"}, "rule": "ingress[1]"}
      ],
      "rest": "deny",
      "isolatedBy": ["NetworkPolicy payments/api"]
    },
    "egress": {"entries": null, "rest": "allow", "open": ["anything"]}
  },
  {
    "namespace": "shop",
    "kind": "Job",
    "name": "batch",
    "pods": ["shop/batch-a"],
    "ingress": {
      "entries": [
        {"tier": "admin", "verdict": "deny", "peer": "every pod in namespaces labelled env=dev", "ports": "any", "policy": {"kind": "AdminNetworkPolicy", "name": "guard"}, "rule": "no-dev", "podsToday": 0},
        {"tier": "admin", "verdict": "pass", "peer": "every pod in namespace kube-system", "ports": "9090/tcp", "policy": {"kind": "AdminNetworkPolicy", "name": "guard"}, "rule": "system", "podsToday": 0}
      ],
      "rest": "allow"
    },
    "egress": {"entries": null, "rest": "allow", "open": ["anything"]}
  },
  {
    "namespace": "shop",
    "kind": "Job",
    "name": "batch",
    "pods": ["shop/batch-b"],
    "ingress": {
      "entries": [
        {"tier": "admin", "verdict": "deny", "peer": "every pod in namespaces labelled env=dev", "ports": "any", "policy": {"kind": "AdminNetworkPolicy", "name": "guard"}, "rule": "no-dev", "podsToday": 0},
        {"tier": "admin", "verdict": "pass", "peer": "every pod in namespace kube-system", "ports": "9090/tcp", "policy": {"kind": "AdminNetworkPolicy", "name": "guard"}, "rule": "system", "podsToday": 0}
      ],
      "rest": "allow"
    },
    "egress": {
      "entries": [
        {"tier": "baseline", "verdict": "deny", "peer": "nodes labelled role=infra", "ports": "any", "policy": {"kind": "BaselineAdminNetworkPolicy", "name": "default"}, "rule": "no-infra"}
      ],
      "rest": "allow"
    }
  },
  {
    "namespace": "shop",
    "name": "web-0",
    "pods": ["shop/web-0"],
    "ingress": {
      "entries": [
        {"tier": "admin", "verdict": "deny", "peer": "every pod in namespaces labelled env=dev", "ports": "any", "policy": {"kind": "AdminNetworkPolicy", "name": "guard"}, "rule": "no-dev", "podsToday": 0},
        {"tier": "admin", "verdict": "pass", "peer": "every pod in namespace kube-system", "ports": "9090/tcp", "policy": {"kind": "AdminNetworkPolicy", "name": "guard"}, "rule": "system", "podsToday": 0},
        {"tier": "networkpolicy", "verdict": "allow", "peer": "every pod in every namespace", "ports": "any", "policy": {"kind": "NetworkPolicy", "namespace": "shop", "name": "web-open"}, "rule": "ingress[0]", "podsToday": 4}
      ],
      "rest": "deny",
      "isolatedBy": ["NetworkPolicy shop/web-open"]
    },
    "egress": {"entries": null, "rest": "allow", "open": ["anything"]}
  }
]`
	if compact(t, string(got)) != compact(t, want) {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestExposureOpen: what a side is open to, with nothing before it that
// could take part back: an admin deny before the allow means the allow
// is not all there is.
func TestExposureOpen(t *testing.T) {
	for name, tc := range map[string]struct {
		extra string
		want  []string
	}{
		"every namespace and 0.0.0.0/0": {`
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: open, namespace: shop}
spec:
  podSelector: {}
  ingress: [{from: [{namespaceSelector: {}}, {ipBlock: {cidr: 0.0.0.0/0}}]}]
`, []string{"every namespace", "0.0.0.0/0"}},
		"a deny first": {`
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: open, namespace: shop}
spec:
  podSelector: {}
  ingress: [{from: [{namespaceSelector: {}}, {ipBlock: {cidr: 0.0.0.0/0}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: first}
spec:
  priority: 1
  subject: {namespaces: {}}
  ingress: [{action: Deny, from: [{namespaces: {matchLabels: {env: dev}}}]}]
`, nil},
		"no policy": {"", []string{"anything"}},
	} {
		e := build(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nstatus: {podIP: 198.18.0.2}\n---\n"+tc.extra)
		ws := Of(e, Options{}).Workloads
		if len(ws) != 1 || strings.Join(ws[0].Ingress.Open, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: open %v, want %v", name, ws[0].Ingress.Open, tc.want)
		}
	}
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v\n%s", err, s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// TestExposureFailClosedAllow: an Allow rule whose only peer has no field
// netpol knows (read with --lenient) matches nothing: it is listed as
// such and opens nothing, though it has no peers to list.
func TestExposureFailClosedAllow(t *testing.T) {
	dec := &source.Decoder{Options: source.Options{Lenient: true}}
	e, _, err := pipeline.Build(dec.Decode("c.yaml", []byte(`
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop}
status: {podIP: 198.18.0.2}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: future}
spec:
  priority: 1
  subject: {namespaces: {}}
  ingress: [{name: new-peer, action: Allow, from: [{someNewPeer: {}}]}]
`)), dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := Of(e, Options{})
	in := r.Workloads[0].Ingress
	if len(in.Blocks) != 1 {
		t.Fatalf("blocks %v", in.Blocks)
	}
	en := r.Blocks[in.Blocks[0]].Entries[0]
	if en.Peer != "nothing" || en.Note != "invalid: matches nothing (its fail-closed form)" || strings.Join(in.Open, ",") != "anything" || len(in.Openings) != 0 {
		t.Errorf("entry %+v, open %v (only the default's), openings %v", en, in.Open, in.Openings)
	}
}
