package engine_test

import (
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

// base is the cluster the checklist cases share: namespaces x and y, pods
// x/a, x/b, y/a (explicit addresses), nodes n1 and n2, a host-network pod on n1.
const base = `
apiVersion: v1
kind: Namespace
metadata: {name: x, labels: {ns: x}}
---
apiVersion: v1
kind: Namespace
metadata: {name: "y", labels: {ns: "y"}}
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {zone: a}}
status: {addresses: [{type: InternalIP, address: 198.19.255.1}]}
---
apiVersion: v1
kind: Node
metadata: {name: n2, labels: {zone: b}}
status: {addresses: [{type: InternalIP, address: 198.19.255.2}]}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: x, labels: {pod: a}}
spec:
  nodeName: n1
  containers: [{name: c, ports: [{name: http, containerPort: 80}, {name: dns, containerPort: 53, protocol: UDP}]}]
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: x, labels: {pod: b}}
spec:
  nodeName: n2
  containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]
status: {podIP: 198.18.1.2}
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: "y", labels: {pod: a}}
spec:
  nodeName: n2
  containers: [{name: c, ports: [{name: http, containerPort: 80}]}]
status: {podIP: 198.18.2.1}
---
apiVersion: v1
kind: Pod
metadata: {name: agent, namespace: x, labels: {pod: agent}}
spec: {nodeName: n1, hostNetwork: true, containers: [{name: c}]}
`

type flowCase struct {
	from, to, port string
	allowed        bool
	// decidedBy, when set, is "tier policy-name rule action" of the last
	// step of the side that denied (or of the ingress side when allowed).
	decidedBy string
}

func build(t *testing.T, policies string, opts engine.Options) *engine.Engine {
	t.Helper()
	return buildFrom(t, policies, source.Options{}, opts)
}

// buildFrom is build with decoding options.
func buildFrom(t *testing.T, policies string, read source.Options, opts engine.Options) *engine.Engine {
	t.Helper()
	dec := &source.Decoder{Options: read}
	objs := dec.Decode("test.yaml", []byte(base+"---\n"+policies))
	c, diags := state.Build(objs, state.Options{})
	set, more := policy.Normalize(c.Policies)
	diags = append(append(dec.Diags, diags...), more...)
	if err := diags.Err(); err != nil {
		t.Fatalf("input: %v", err)
	}
	return engine.New(c, set, opts)
}

func check(t *testing.T, e *engine.Engine, cases []flowCase) {
	t.Helper()
	for _, c := range cases {
		src, err := e.Endpoint(c.from)
		if err != nil {
			t.Fatal(err)
		}
		dst, err := e.Endpoint(c.to)
		if err != nil {
			t.Fatal(err)
		}
		spec, err := l4.ParsePortSpec(c.port)
		if err != nil {
			t.Fatal(err)
		}
		f, err := e.NewFlow(src, dst, spec)
		if err != nil {
			t.Fatal(err)
		}
		v := e.Decide(f)
		if v.Allowed != c.allowed {
			var b strings.Builder
			engine.WriteTrace(&b, f, v)
			t.Errorf("%s -> %s %s: allowed=%v, want %v\n%s", c.from, c.to, c.port, v.Allowed, c.allowed, b.String())
			continue
		}
		if c.decidedBy == "" {
			continue
		}
		side := v.Ingress
		if !v.Egress.Allowed {
			side = v.Egress
		}
		last := side.Steps[len(side.Steps)-1]
		got := last.Tier
		if last.Policy != nil {
			got += " " + last.Policy.Name + " " + last.Rule
		}
		got += " " + last.Action
		if got != c.decidedBy {
			t.Errorf("%s -> %s %s: decided by %q, want %q", c.from, c.to, c.port, got, c.decidedBy)
		}
	}
}

func TestChecklistNetworkPolicyPeers(t *testing.T) {
	cases := []struct {
		name, policy string
		flows        []flowCase
	}{
		{"absent from allows all sources", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: x}
spec: {podSelector: {matchLabels: {pod: a}}, ingress: [{ports: [{port: 80}]}]}`,
			[]flowCase{{"y/a", "x/a", "80", true, "NetworkPolicy p ingress[0] Allow"}, {"y/a", "x/a", "81", false, ""}}},
		{"v1 from: [] is the same as absent", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: x}
spec: {podSelector: {matchLabels: {pod: a}}, ingress: [{from: []}]}`,
			[]flowCase{{"y/a", "x/a", "80", true, ""}}},
		{"v1beta1 from: [] matches nothing", `
apiVersion: extensions/v1beta1
kind: NetworkPolicy
metadata: {name: p, namespace: x}
spec: {podSelector: {matchLabels: {pod: a}}, ingress: [{from: []}]}`,
			[]flowCase{{"y/a", "x/a", "80", false, ""}, {"x/b", "x/a", "80", false, ""}}},
		{"podSelector alone is the policy's namespace", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: x}
spec: {podSelector: {matchLabels: {pod: a}}, ingress: [{from: [{podSelector: {}}]}]}`,
			[]flowCase{{"x/b", "x/a", "80", true, ""}, {"y/a", "x/a", "80", false, ""}}},
		{"namespaceSelector {} is every namespace", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: x}
spec: {podSelector: {matchLabels: {pod: a}}, ingress: [{from: [{namespaceSelector: {}}]}]}`,
			[]flowCase{{"x/b", "x/a", "80", true, ""}, {"y/a", "x/a", "80", true, ""}}},
		{"namespaceSelector and podSelector in one peer is an AND", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  ingress: [{from: [{namespaceSelector: {matchLabels: {ns: "y"}}, podSelector: {matchLabels: {pod: b}}}]}]`,
			[]flowCase{{"y/a", "x/a", "80", false, ""}, {"x/b", "x/a", "80", false, ""}}},
		{"two peers are an OR", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  ingress: [{from: [{namespaceSelector: {matchLabels: {ns: "y"}}}, {podSelector: {matchLabels: {pod: b}}}]}]`,
			[]flowCase{{"y/a", "x/a", "80", true, ""}, {"x/b", "x/a", "80", true, ""}}},
		{"ipBlock with except, matching pod IPs", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: x}
spec:
  podSelector: {matchLabels: {pod: a}}
  ingress: [{from: [{ipBlock: {cidr: 198.18.0.0/16, except: [198.18.2.0/24]}}]}]`,
			[]flowCase{{"x/b", "x/a", "80", true, ""}, {"y/a", "x/a", "80", false, ""}, {"198.18.9.9", "x/a", "80", true, ""}, {"198.19.0.9", "x/a", "80", false, ""}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, build(t, c.policy, engine.Options{}), c.flows) })
	}
}

func TestChecklistPortsAndTypes(t *testing.T) {
	cases := []struct {
		name, policy string
		flows        []flowCase
	}{
		{"named port resolves per destination pod", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: x}
spec: {podSelector: {}, ingress: [{ports: [{port: http}]}]}`,
			[]flowCase{{"y/a", "x/a", "80", true, ""}, {"y/a", "x/a", "8080", false, ""}, {"y/a", "x/b", "8080", true, ""}, {"y/a", "x/b", "80", false, ""}}},
		{"named port must match the protocol", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: x}
spec: {podSelector: {}, ingress: [{ports: [{port: dns, protocol: TCP}]}]}`,
			[]flowCase{{"y/a", "x/a", "53/udp", false, ""}, {"y/a", "x/a", "53/tcp", false, ""}}},
		{"endPort is inclusive", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: x}
spec: {podSelector: {}, ingress: [{ports: [{port: 8000, endPort: 8010}]}]}`,
			[]flowCase{{"y/a", "x/a", "7999", false, ""}, {"y/a", "x/a", "8000", true, ""}, {"y/a", "x/a", "8010", true, ""}, {"y/a", "x/a", "8011", false, ""}, {"y/a", "x/a", "8005/udp", false, ""}}},
		{"protocol defaults to TCP; UDP and SCTP are distinct", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: x}
spec: {podSelector: {}, ingress: [{ports: [{port: 80}, {port: 90, protocol: SCTP}]}]}`,
			[]flowCase{{"y/a", "x/a", "80/tcp", true, ""}, {"y/a", "x/a", "80/udp", false, ""}, {"y/a", "x/a", "90/sctp", true, ""}, {"y/a", "x/a", "90/tcp", false, ""}}},
		{"policyTypes default: ingress only without egress rules", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: x}
spec: {podSelector: {matchLabels: {pod: a}}}`,
			[]flowCase{{"x/a", "y/a", "80", true, ""}, {"y/a", "x/a", "80", false, "NetworkPolicy Deny"}}},
		{"policyTypes Egress alone isolates egress only", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: x}
spec: {podSelector: {matchLabels: {pod: a}}, policyTypes: [Egress]}`,
			[]flowCase{{"x/a", "y/a", "80", false, "NetworkPolicy Deny"}, {"y/a", "x/a", "80", true, ""}}},
		{"egress rules imply egress isolation", `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: x}
spec: {podSelector: {matchLabels: {pod: a}}, egress: [{to: [{podSelector: {matchLabels: {pod: b}}}]}]}`,
			[]flowCase{{"x/a", "x/b", "8080", true, "Default Allow"}, {"x/a", "y/a", "80", false, ""}, {"y/a", "x/a", "80", false, ""}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { check(t, build(t, c.policy, engine.Options{}), c.flows) })
	}
}

func TestChecklistConnectionSemantics(t *testing.T) {
	denyAll := `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, namespace: x}
spec: {podSelector: {}, policyTypes: [Ingress, Egress]}`
	e := build(t, denyAll, engine.Options{})
	check(t, e, []flowCase{
		{"x/a", "x/a", "80", true, ""},        // a pod may always reach itself
		{"x/a", "198.18.1.1", "80", true, ""}, // also by its own IP
		{"x/b", "x/a", "80", false, ""},       // isolated both ways
		{"node/n1", "x/a", "80", true, ""},    // its own node (kubelet probes)
		{"node/n2", "x/a", "80", false, ""},   // another node is not exempt
		{"x/agent", "x/a", "80", true, ""},    // host-network pod on the same node
		{"x/agent", "x/b", "8080", false, ""}, // ... but not on another node
		{"x/b", "x/agent", "80", false, ""},   // egress of b is isolated
		{"y/a", "x/agent", "80", true, ""},    // host-network pods are never subjects
	})
	// Host-network pods are never selected by pod peers either.
	e = build(t, `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: p, namespace: "y"}
spec: {podSelector: {}, ingress: [{from: [{namespaceSelector: {}}]}]}`, engine.Options{})
	check(t, e, []flowCase{{"x/b", "y/a", "80", true, ""}, {"x/agent", "y/a", "80", false, ""}})
}

const tiers = `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: first}
spec:
  priority: 5
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress:
  - {name: pass-y-80, action: Pass, from: [{namespaces: {matchLabels: {ns: "y"}}}], ports: [{portNumber: {protocol: TCP, port: 80}}]}
  - {name: deny-y, action: Deny, from: [{namespaces: {matchLabels: {ns: "y"}}}]}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: second}
spec:
  priority: 6
  subject: {namespaces: {}}
  ingress:
  - {name: allow-y, action: Allow, from: [{namespaces: {matchLabels: {ns: "y"}}}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: b-only-from-x, namespace: x}
spec: {podSelector: {matchLabels: {pod: b}}, ingress: [{from: [{podSelector: {}}]}]}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata: {name: default}
spec:
  subject: {namespaces: {}}
  ingress: [{name: deny-all, action: Deny, from: [{namespaces: {}}]}]
`

func TestChecklistTiers(t *testing.T) {
	e := build(t, tiers, engine.Options{})
	check(t, e, []flowCase{
		// Pass skips the lower admin rules ("second" would allow); no NP
		// isolates x/a, so the baseline decides.
		{"y/a", "x/a", "80", false, "Baseline default deny-all Deny"},
		// Pass, then the NP that isolates x/b decides: y is not in x.
		{"y/a", "x/b", "80", false, "NetworkPolicy Deny"},
		// Written order: deny-y decides before anything of "second".
		{"y/a", "x/a", "81", false, "Admin first deny-y Deny"},
		// x -> y: "first" does not select y/a; "second" has no x rule; the
		// baseline denies.
		{"x/a", "y/a", "80", false, "Baseline default deny-all Deny"},
		// Within x: no admin rule matches and no NP isolates x/a.
		{"x/b", "x/a", "80", false, "Baseline default deny-all Deny"},
	})
}

func TestChecklistClusterNetworkPolicy(t *testing.T) {
	e := build(t, `
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: admin}
spec:
  tier: Admin
  priority: 1
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress:
  - {name: accept-udp, action: Accept, from: [{namespaces: {}}], protocols: [{udp: {destinationPort: {range: {start: 50, end: 60}}}}]}
---
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: base-pass}
spec:
  tier: Baseline
  priority: 1
  subject: {namespaces: {}}
  ingress:
  - {name: pass-y, action: Pass, from: [{namespaces: {matchLabels: {ns: "y"}}}]}
---
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: base-deny}
spec:
  tier: Baseline
  priority: 2
  subject: {namespaces: {}}
  ingress:
  - {name: deny, action: Deny, from: [{namespaces: {}}]}
  egress:
  - {name: deny-nodes, action: Deny, to: [{nodes: {matchLabels: {zone: b}}}]}
  - {name: deny-net, action: Deny, to: [{networks: [198.18.2.0/24]}]}
`, engine.Options{})
	check(t, e, []flowCase{
		{"y/a", "x/a", "53/udp", true, "Admin admin accept-udp Accept"},
		{"y/a", "x/a", "80", true, "Default Allow"}, // Pass in Baseline ends the tier
		{"x/b", "x/a", "80", false, "Baseline base-deny deny Deny"},
		{"x/a", "node/n2", "80", false, "Baseline base-deny deny-nodes Deny"},
		{"x/a", "node/n1", "80", true, ""},
		{"x/b", "y/a", "80", false, ""}, // networks match pod IPs (egress deny-net)
	})
}

func TestChecklistKEPShape(t *testing.T) {
	e := build(t, `
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: "y", labels: {pod: b}}
spec: {containers: [{name: c}]}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: self}
spec:
  priority: 10
  subject: {namespaces: {}}
  ingress:
  - {name: same-ns-b, action: Allow, from: [{pods: {namespaces: {related: Self}, podSelector: {matchLabels: {pod: b}}}}]}
  - {name: other-ns, action: Deny, from: [{namespaces: {related: NotSelf}}]}
`, engine.Options{})
	check(t, e, []flowCase{
		{"x/b", "x/a", "80", true, "Admin self same-ns-b Allow"},
		{"y/b", "y/a", "80", true, "Admin self same-ns-b Allow"},
		{"y/b", "x/a", "80", false, "Admin self other-ns Deny"},
		{"x/b", "y/a", "80", false, "Admin self other-ns Deny"},
	})
}

func TestChecklistSameLabels(t *testing.T) {
	e := build(t, `
apiVersion: v1
kind: Namespace
metadata: {name: t1a, labels: {tenant: t1}}
---
apiVersion: v1
kind: Namespace
metadata: {name: t1b, labels: {tenant: t1}}
---
apiVersion: v1
kind: Namespace
metadata: {name: t2a, labels: {tenant: t2}}
---
{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: t1a}, spec: {containers: [{name: c}]}}
---
{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: t1b}, spec: {containers: [{name: c}]}}
---
{apiVersion: v1, kind: Pod, metadata: {name: p, namespace: t2a}, spec: {containers: [{name: c}]}}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: tenants}
spec:
  priority: 20
  subject: {namespaces: {matchExpressions: [{key: tenant, operator: Exists}]}}
  ingress:
  - {name: pass-same, action: Pass, from: [{namespaces: {sameLabels: [tenant]}}]}
  - {name: deny-rest, action: Deny, from: [{namespaces: {notSameLabels: [tenant]}}]}
`, engine.Options{})
	check(t, e, []flowCase{
		{"t1b/p", "t1a/p", "80", true, "Default Allow"},
		{"t2a/p", "t1a/p", "80", false, "Admin tenants deny-rest Deny"},
		{"x/a", "t1a/p", "80", false, "Admin tenants deny-rest Deny"},
	})
}

func TestChecklistFailClosed(t *testing.T) {
	const tmpl = `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: future}
spec:
  priority: 1
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress:
  - {name: r, action: ACTION, from: [{serviceAccounts: {}}]}
`
	for _, c := range []struct {
		action  string
		allowed bool
	}{{"Allow", true}, {"Deny", false}, {"Pass", false}} {
		// Lenient: by default an unknown field makes the policy invalid.
		e := buildFrom(t, strings.Replace(tmpl, "ACTION", c.action, 1), source.Options{Lenient: true}, engine.Options{})
		check(t, e, []flowCase{{"y/a", "x/a", "80", c.allowed, ""}, {"198.19.9.9", "x/b", "8080", c.allowed, ""}})
	}
}

func TestChecklistEqualPriorityWarning(t *testing.T) {
	e := build(t, `
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: aaa}
spec:
  tier: Admin
  priority: 7
  subject: {namespaces: {}}
  ingress: [{action: Accept, from: [{namespaces: {}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: zzz}
spec:
  priority: 7
  subject: {namespaces: {matchLabels: {ns: x}}}
  ingress: [{name: deny, action: Deny, from: [{namespaces: {}}]}]
`, engine.Options{})
	w := e.PriorityOverlaps()
	if len(w) != 1 || !strings.Contains(w[0].Message, "netpol evaluates AdminNetworkPolicy zzz first") {
		t.Fatalf("warnings: %v", w)
	}
	// The documented order: AdminNetworkPolicy before ClusterNetworkPolicy.
	check(t, e, []flowCase{{"y/a", "x/a", "80", false, "Admin zzz deny Deny"}})
}

func TestChecklistLegacyNamespaceIsolation(t *testing.T) {
	const ns = `
apiVersion: v1
kind: Namespace
metadata:
  name: x
  labels: {ns: x}
  annotations: {net.beta.kubernetes.io/network-policy: '{"ingress": {"isolation": "DefaultDeny"}}'}
`
	// The annotated namespace replaces base's x (declared twice is an error),
	// so build this cluster on its own.
	dec := &source.Decoder{}
	text := strings.Replace(base, "apiVersion: v1\nkind: Namespace\nmetadata: {name: x, labels: {ns: x}}\n", strings.TrimPrefix(ns, "\n"), 1)
	objs := dec.Decode("t.yaml", []byte(text))
	c, _ := state.Build(objs, state.Options{})
	set, _ := policy.Normalize(c.Policies)
	check(t, engine.New(c, set, engine.Options{LegacyNamespaceIsolation: true}), []flowCase{
		{"y/a", "x/a", "80", false, "NetworkPolicy Deny"},
		{"x/a", "y/a", "80", true, ""},
	})
	check(t, engine.New(c, set, engine.Options{}), []flowCase{{"y/a", "x/a", "80", true, ""}})
}
