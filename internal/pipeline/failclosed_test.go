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
			dec := &source.Decoder{}
			objs := dec.Decode("in.yaml", []byte(failClosedCluster+"---\n"+c.policy))
			e, diags, err := pipeline.Build(objs, dec.Diags, pipeline.Options{SkipInvalid: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(diags.Errors()) == 0 {
				t.Fatal("no error: the case is not invalid")
			}
			for _, f := range c.flows {
				src, err := e.Endpoint(f.from)
				if err != nil {
					t.Fatal(err)
				}
				dst, err := e.Endpoint(f.to)
				if err != nil {
					t.Fatal(err)
				}
				if got := e.Allowed(engine.Flow{Src: src, Dst: dst, Port: l4.Port{Proto: l4.TCP, Num: 80}}); got != f.want {
					t.Errorf("%s -> %s 80/tcp: allowed %v, want %v", f.from, f.to, got, f.want)
				}
			}
		})
	}
}
