package pipeline_test

import (
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
)

// failClosedCluster: batch and frontend in shop, intruder in untrusted,
// prometheus in monitoring; nothing isolates anyone.
const failClosedCluster = `
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {ns: shop}}
---
apiVersion: v1
kind: Namespace
metadata: {name: untrusted, labels: {ns: untrusted}}
---
apiVersion: v1
kind: Namespace
metadata: {name: monitoring, labels: {ns: monitoring}}
---
apiVersion: v1
kind: Pod
metadata: {name: batch, namespace: shop}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIP: 198.18.1.3}
---
apiVersion: v1
kind: Pod
metadata: {name: frontend, namespace: shop}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIP: 198.18.1.2}
---
apiVersion: v1
kind: Pod
metadata: {name: intruder, namespace: untrusted}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIP: 198.18.2.1}
---
apiVersion: v1
kind: Pod
metadata: {name: prometheus, namespace: monitoring}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIP: 198.18.3.1}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: allow-all}
spec:
  priority: 5
  subject: {namespaces: {}}
  ingress: [{name: all, action: Allow, from: [{namespaces: {}}]}]
`

// TestAdversarialInvalidAdminPolicyPlace: the errors outside an admin
// policy's rules, most of them possible only in files (the CRDs bound
// priorities, tiers and actions): its subject, place or action is
// unknown, so the agent's build keeps it deny-only at the first place it
// could have (priority 0, the Admin tier), with every pod as subject when
// the subject is invalid. allow-all (priority 5) would otherwise allow
// every flow below.
func TestAdversarialInvalidAdminPolicyPlace(t *testing.T) {
	type flow struct {
		from, to string
		want     bool
	}
	for _, c := range []struct {
		name, policy string
		flows        []flow
	}{
		{"subject invalid: Allow matches nothing, Pass denies, Deny denies, for every pod", `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: bad}
spec:
  priority: 1
  subject: {namespaces: {matchLabels: {"bad key": x}}}
  ingress:
  - {name: shop, action: Allow, from: [{namespaces: {matchLabels: {ns: shop}}}]}
  - {name: untrusted, action: Pass, from: [{namespaces: {matchLabels: {ns: untrusted}}}]}
  - {name: monitoring, action: Deny, from: [{namespaces: {matchLabels: {ns: monitoring}}}]}
`, []flow{
			{"shop/frontend", "shop/batch", true}, // the Allow matches nothing; allow-all allows
			{"untrusted/intruder", "shop/batch", false},
			{"untrusted/intruder", "monitoring/prometheus", false}, // every pod is a subject
			{"monitoring/prometheus", "shop/batch", false},
		}},
		{"priority out of range: evaluated at 0, Pass denies", `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: bad}
spec:
  priority: 2000
  subject: {namespaces: {matchLabels: {ns: shop}}}
  ingress: [{name: untrusted, action: Pass, from: [{namespaces: {matchLabels: {ns: untrusted}}}]}]
`, []flow{
			{"untrusted/intruder", "shop/batch", false},
			{"monitoring/prometheus", "shop/batch", true},
			{"untrusted/intruder", "monitoring/prometheus", true}, // not a subject
		}},
		{"ClusterNetworkPolicy tier unknown: the Admin tier", `
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: bad}
spec:
  tier: Middle
  priority: 1
  subject: {namespaces: {matchLabels: {ns: shop}}}
  ingress: [{name: untrusted, action: Deny, from: [{namespaces: {matchLabels: {ns: untrusted}}}]}]
`, []flow{
			{"untrusted/intruder", "shop/batch", false},
			{"monitoring/prometheus", "shop/batch", true},
		}},
		{"action unknown: the rule denies everything", `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: bad}
spec:
  priority: 1
  subject: {namespaces: {matchLabels: {ns: shop}}}
  ingress: [{name: untrusted, action: Drop, from: [{namespaces: {matchLabels: {ns: untrusted}}}]}]
`, []flow{
			{"untrusted/intruder", "shop/batch", false},
			{"monitoring/prometheus", "shop/batch", false},
			{"untrusted/intruder", "monitoring/prometheus", true},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			allowed, invalid := buildSkippingInvalid(t, failClosedCluster+"---\n"+c.policy)
			if !invalid {
				t.Fatal("no error: the case is not invalid")
			}
			for _, f := range c.flows {
				if got := allowed(f.from, f.to, 80); got != f.want {
					t.Errorf("%s -> %s 80/tcp: allowed %v, want %v", f.from, f.to, got, f.want)
				}
			}
		})
	}
}

// npCluster: batch in shop, intruder in untrusted, and an outside
// address; nothing isolates anyone until the case's NetworkPolicy.
const npCluster = `
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {ns: shop}}
---
apiVersion: v1
kind: Namespace
metadata: {name: untrusted, labels: {ns: untrusted}}
---
apiVersion: v1
kind: Pod
metadata: {name: batch, namespace: shop, labels: {app: batch}}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIP: 198.18.1.3}
---
apiVersion: v1
kind: Pod
metadata: {name: intruder, namespace: untrusted}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIP: 198.18.2.1}
`

// TestAdversarialInvalidNetworkPolicyKeepsIsolating: a NetworkPolicy with
// a rule netpol cannot read (values the API server stores: an except
// written as an IPv4-mapped IPv6 prefix, a port range with end below
// start in a file) still isolates its pods; the unreadable rule allows
// nothing, the others allow what they say. Left out whole, it opened its
// pods to everyone. The API server's own reading of a CIDR with leading
// zeros is netpol's too.
func TestAdversarialInvalidNetworkPolicyKeepsIsolating(t *testing.T) {
	type flow struct {
		from string
		port uint16
		want bool
	}
	for _, c := range []struct {
		name, policy string
		invalid      bool
		flows        []flow
	}{
		{"an except netpol cannot read: that rule allows nothing", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: shop}
spec:
  podSelector: {matchLabels: {app: batch}}
  ingress:
  - from: [{ipBlock: {cidr: 198.18.0.0/16, except: ["::ffff:198.18.9.0/120", "fd00::/8"]}}]
    ports: [{port: 22}]
  - from: [{namespaceSelector: {matchLabels: {ns: untrusted}}}]
    ports: [{port: 80}]
`, true, []flow{{"untrusted/intruder", 22, false}, {"198.19.0.1", 22, false}, {"untrusted/intruder", 80, true}, {"untrusted/intruder", 81, false}}},
		{"a port range that ends below its start: that rule allows nothing", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: shop}
spec:
  podSelector: {matchLabels: {app: batch}}
  ingress:
  - from: [{namespaceSelector: {}}]
    ports: [{port: 9000, endPort: 8000}]
`, true, []flow{{"untrusted/intruder", 8500, false}, {"untrusted/intruder", 80, false}}},
		{"leading zeros, as the API server reads them", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: shop}
spec:
  podSelector: {matchLabels: {app: batch}}
  ingress:
  - from: [{ipBlock: {cidr: 198.018.002.000/24}}]
`, false, []flow{{"untrusted/intruder", 80, true}, {"198.19.0.1", 80, false}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			allowed, invalid := buildSkippingInvalid(t, npCluster+"---\n"+c.policy)
			if invalid != c.invalid {
				t.Fatalf("invalid %v, want %v", invalid, c.invalid)
			}
			for _, f := range c.flows {
				if got := allowed(f.from, "shop/batch", f.port); got != f.want {
					t.Errorf("%s -> shop/batch %d/tcp: allowed %v, want %v", f.from, f.port, got, f.want)
				}
			}
		})
	}
}

// buildSkippingInvalid builds yaml as the agent does (SkipInvalid) and
// returns whether a TCP flow is allowed, and whether the input had errors.
func buildSkippingInvalid(t *testing.T, yaml string) (allowed func(from, to string, port uint16) bool, invalid bool) {
	t.Helper()
	dec := &source.Decoder{}
	e, diags, err := pipeline.Build(dec.Decode("in.yaml", []byte(yaml)), dec.Diags, pipeline.Options{SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	endpoint := func(name string) engine.Endpoint {
		ep, err := e.Endpoint(name)
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	return func(from, to string, port uint16) bool {
		return e.Allowed(engine.Flow{Src: endpoint(from), Dst: endpoint(to), Port: l4.Port{Proto: l4.TCP, Num: port}})
	}, len(diags.Errors()) > 0
}
