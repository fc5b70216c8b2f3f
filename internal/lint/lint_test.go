package lint

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// base is two teams and cluster DNS: a/client (no ports), b/server (http=80)
// and b/worker (no ports), kube-system/dns (dns=53/udp).
const base = `
apiVersion: v1
kind: Namespace
metadata: {name: a, labels: {team: a}}
---
apiVersion: v1
kind: Namespace
metadata: {name: b, labels: {team: b}}
---
apiVersion: v1
kind: Namespace
metadata: {name: kube-system}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: a, labels: {app: client}}
spec: {containers: [{name: c}]}
status: {podIP: 198.18.0.1}
---
apiVersion: v1
kind: Pod
metadata: {name: server, namespace: b, labels: {app: server}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 80}]}]}
status: {podIP: 198.18.0.2}
---
apiVersion: v1
kind: Pod
metadata: {name: worker, namespace: b, labels: {app: worker}}
spec: {containers: [{name: c}]}
status: {podIP: 198.18.0.3}
---
apiVersion: v1
kind: Pod
metadata: {name: dns, namespace: kube-system, labels: {k8s-app: kube-dns}}
spec: {containers: [{name: c, ports: [{name: dns, containerPort: 53, protocol: UDP}]}]}
status: {podIP: 198.18.0.53}
`

func lintYAML(t *testing.T, docs ...string) []Finding {
	t.Helper()
	dec := &source.Decoder{}
	objects := dec.Decode("test.yaml", []byte(strings.Join(docs, "\n---\n")))
	e, diags, err := pipeline.Build(objects, dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return Run(e, diags, Options{})
}

// short is a finding as the tests spell it: severity code object field
// [example].
func short(f Finding) string {
	s := fmt.Sprintf("%s %s %s %s", f.Severity, f.Code, f.Object, f.Field)
	if f.Example != nil {
		s += " [" + f.Example.String() + "]"
	}
	return s
}

func TestFindings(t *testing.T) {
	cases := []struct {
		name     string
		policies string
		want     []string
	}{{
		name: "equal priorities that disagree on real traffic",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: open}
spec:
  priority: 20
  subject: {namespaces: {matchLabels: {team: b}}}
  ingress: [{name: allow-a, action: Allow, from: [{namespaces: {matchLabels: {team: a}}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: closed}
spec:
  priority: 20
  subject: {pods: {namespaceSelector: {matchLabels: {team: b}}, podSelector: {matchLabels: {app: server}}}}
  ingress: [{name: deny-a, action: Deny, from: [{namespaces: {matchLabels: {team: a}}}], ports: [{portNumber: {port: 80, protocol: TCP}}]}]`,
		want: []string{"error admin-priority-overlap AdminNetworkPolicy open spec.priority [a/client -> b/server on 80/tcp]"},
	}, {
		name: "equal priorities that agree are only noted",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: one}
spec:
  priority: 20
  subject: {namespaces: {matchLabels: {team: b}}}
  ingress: [{name: deny-a, action: Deny, from: [{namespaces: {matchLabels: {team: a}}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: two}
spec:
  priority: 20
  subject: {namespaces: {matchLabels: {team: b}}}
  ingress: [{name: deny-a-80, action: Deny, from: [{namespaces: {matchLabels: {team: a}}}], ports: [{portNumber: {port: 80, protocol: TCP}}]}]`,
		want: []string{"info admin-priority-overlap AdminNetworkPolicy two spec.priority [a/client -> b/server on 80/tcp]"},
	}, {
		// Existing analysers fail on any equal priority; these two share
		// their subject pods but never the same traffic (other ports).
		name: "equal priorities that never match the same traffic",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: web}
spec:
  priority: 20
  subject: {namespaces: {matchLabels: {team: b}}}
  ingress: [{name: allow-80, action: Allow, from: [{namespaces: {}}], ports: [{portNumber: {port: 80, protocol: TCP}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: ssh}
spec:
  priority: 20
  subject: {namespaces: {matchLabels: {team: b}}}
  ingress: [{name: deny-22, action: Deny, from: [{namespaces: {}}], ports: [{portNumber: {port: 22, protocol: TCP}}]}]`,
		want: nil,
	}, {
		name: "NetworkPolicy rule fully overridden by an admin deny",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: guard}
spec:
  priority: 10
  subject: {namespaces: {matchLabels: {team: b}}}
  ingress: [{name: deny-a, action: Deny, from: [{namespaces: {matchLabels: {team: a}}}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: server, namespace: b}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress: [{from: [{namespaceSelector: {matchLabels: {team: a}}}], ports: [{port: http}]}]`,
		want: []string{"warning admin-overrides-networkpolicy NetworkPolicy b/server spec.ingress[0] [a/client -> b/server on 80/tcp]"},
	}, {
		name: "NetworkPolicy rule partly overridden by an admin allow; Pass hands over",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: guard}
spec:
  priority: 10
  subject: {namespaces: {matchLabels: {team: b}}}
  ingress:
  - {name: pass-own, action: Pass, from: [{namespaces: {matchLabels: {team: b}}}]}
  - {name: allow-a, action: Allow, from: [{namespaces: {matchLabels: {team: a}}}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: server, namespace: b}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress: [{from: [{namespaceSelector: {}}], ports: [{port: http}]}]`,
		want: []string{"info admin-overrides-networkpolicy NetworkPolicy b/server spec.ingress[0] [a/client -> b/server on 80/tcp]"},
	}, {
		name: "admin rule shadowed by an earlier rule with another action",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: guard}
spec:
  priority: 10
  subject: {namespaces: {matchLabels: {team: b}}}
  ingress:
  - {name: deny-all, action: Deny, from: [{namespaces: {}}]}
  - {name: allow-client, action: Allow, from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: client}}}}], ports: [{portNumber: {port: 80, protocol: TCP}}]}`,
		want: []string{"warning rule-shadowed AdminNetworkPolicy guard spec.ingress[1] [a/client -> b/server on 80/tcp]"},
	}, {
		name: "NetworkPolicy rule covered by another rule",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: server, namespace: b}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress:
  - from: [{namespaceSelector: {}}]
  - from: [{podSelector: {matchLabels: {app: worker}}}]
    ports: [{port: 80}]`,
		want: []string{"info exposed-to-all NetworkPolicy b/server spec.ingress[0]", "info rule-shadowed NetworkPolicy b/server spec.ingress[1] [b/worker -> b/server on 80/tcp]"},
	}, {
		name: "a rule open to every address, and one open to every namespace",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: server, namespace: b}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress:
  - from: [{ipBlock: {cidr: 0.0.0.0/0}}]
    ports: [{port: 5432}]
  - from: [{ipBlock: {cidr: 0.0.0.0/0, except: [198.18.0.0/15]}}, {namespaceSelector: {}, podSelector: {matchLabels: {app: worker}}}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: worker, namespace: b}
spec:
  podSelector: {matchLabels: {app: worker}}
  ingress: [{from: [{namespaceSelector: {}}]}]`,
		want: []string{"warning exposed-to-all NetworkPolicy b/server spec.ingress[0]", "info exposed-to-all NetworkPolicy b/worker spec.ingress[0]"},
	}, {
		name: "open to every namespace, but an admin rule decides first",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: worker, namespace: b}
spec:
  podSelector: {matchLabels: {app: worker}}
  ingress: [{from: [{namespaceSelector: {}}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: first}
spec:
  priority: 1
  subject: {namespaces: {matchLabels: {kubernetes.io/metadata.name: b}}}
  ingress: [{action: Deny, from: [{namespaces: {matchLabels: {kubernetes.io/metadata.name: a}}}]}]`,
		// No exposed-to-all: the deny takes namespace a back.
		want: []string{"warning admin-overrides-networkpolicy NetworkPolicy b/worker spec.ingress[0] [a/client -> b/worker on 80/tcp]"},
	}, {
		name: "subject and peers that select nothing",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: typo, namespace: b}
spec:
  podSelector: {matchLabels: {app: sever}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: server, namespace: b}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: worker}}}, {namespaceSelector: {matchLabels: {team: c}}}]`,
		want: []string{
			"warning selects-nothing NetworkPolicy b/server spec.ingress[0].from[1]",
			"warning selects-nothing NetworkPolicy b/typo spec.podSelector",
		},
	}, {
		name: "named port no destination declares, ingress and egress",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: server, namespace: b}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress: [{ports: [{port: http}, {port: https}]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: to-server}
spec:
  priority: 10
  subject: {namespaces: {matchLabels: {team: a}}}
  egress: [{name: web, action: Allow, to: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: server}}}}], ports: [{namedPort: web}]}]`,
		want: []string{
			"warning named-port-undeclared AdminNetworkPolicy to-server spec.egress[0].ports[0].namedPort",
			"warning named-port-undeclared NetworkPolicy b/server spec.ingress[0].ports[1].port",
		},
	}, {
		name: "egress isolation without DNS, and a deny-all",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: client, namespace: a}
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress: [{to: [{namespaceSelector: {matchLabels: {team: b}}}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: lockdown, namespace: b}
spec:
  podSelector: {matchLabels: {app: worker}}
  policyTypes: [Ingress, Egress]`,
		want: []string{
			"warning dns-blocked NetworkPolicy a/client spec.egress [a/client -> kube-system/dns on 53/udp]",
			"info isolated-allows-nothing NetworkPolicy b/lockdown spec.egress",
			"info isolated-allows-nothing NetworkPolicy b/lockdown spec.ingress",
		},
	}, {
		name: "ingress rules that match nothing",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: server, namespace: b}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress: [{from: [{podSelector: {matchLabels: {app: fronted}}}]}]`,
		want: []string{
			"warning isolated-allows-nothing NetworkPolicy b/server spec.ingress",
			"warning selects-nothing NetworkPolicy b/server spec.ingress[0].from[0]",
		},
	}, {
		name: "KEP-2091 fields",
		policies: `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: kep}
spec:
  priority: 10
  subject: {namespaces: {}}
  ingress:
  - {name: own, action: Pass, from: [{namespaces: {related: Self}}]}
  - {name: team, action: Pass, from: [{pods: {namespaces: {sameLabels: [team]}, podSelector: {}}}]}
  - {name: a, action: Allow, from: [{namespaces: {namespaceSelector: {matchLabels: {team: a}}}}]}`,
		want: []string{
			"warning kep-field AdminNetworkPolicy kep spec.ingress[0].from[0].namespaces.related",
			"warning kep-field AdminNetworkPolicy kep spec.ingress[1].from[0].pods.namespaces.sameLabels",
			"warning kep-field AdminNetworkPolicy kep spec.ingress[2].from[0].namespaces.namespaceSelector",
			"info rule-shadowed AdminNetworkPolicy kep spec.ingress[1] [b/worker -> b/server on 80/tcp]",
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, f := range lintYAML(t, base, c.policies) {
				got = append(got, short(f))
				if f.Message == "" || (f.Code != CodeInput && f.Hint == "") {
					t.Errorf("%s: empty message or hint: %+v", short(f), f)
				}
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
			}
		})
	}
}

// TestOverrideMessageNamesTheAdminRule: a developer reads which admin rule
// decides, and how much of the rule it takes.
func TestOverrideMessageNamesTheAdminRule(t *testing.T) {
	fs := lintYAML(t, base, `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: guard}
spec:
  priority: 10
  subject: {namespaces: {matchLabels: {team: b}}}
  ingress: [{name: deny-a, action: Deny, from: [{namespaces: {matchLabels: {team: a}}}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: server, namespace: b}
spec:
  podSelector: {matchLabels: {app: server}}
  ingress: [{ports: [{port: 80}]}]`)
	if len(fs) != 1 {
		t.Fatalf("want 1 finding, got %d: %v", len(fs), fs)
	}
	// From a/client, b/worker and kube-system/dns on 80: only a/client is
	// denied by guard.
	want := "partly overridden: admin rules decide 1 of the 3 flows this rule matches, before NetworkPolicies are consulted: AdminNetworkPolicy guard rule deny-a (Deny, 1 flow); e.g. a/client -> b/server on 80/tcp"
	if fs[0].Message != want {
		t.Errorf("message:\n got %s\nwant %s", fs[0].Message, want)
	}
	if len(fs[0].Related) != 1 || fs[0].Related[0].String() != "AdminNetworkPolicy guard spec.ingress[0]" {
		t.Errorf("related: %v", fs[0].Related)
	}
}

func TestNoPods(t *testing.T) {
	fs := lintYAML(t, `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny, namespace: b}
spec: {podSelector: {}}`)
	if len(fs) != 1 || fs[0].Code != CodeNoPods || fs[0].Severity != Info {
		t.Errorf("got %v", fs)
	}
}

func TestInputWarningsBecomeFindings(t *testing.T) {
	fs := lintYAML(t, base, `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: server, namespace: b}
spec:
  podSelector: {matchLabels: {app: server}}
  policyTypes: [Ingress]
  ingress: [{}]
  egress: [{}]`)
	var got []string
	for _, f := range fs {
		got = append(got, short(f))
	}
	want := "warning exposed-to-all NetworkPolicy b/server spec.ingress[0]\nwarning input NetworkPolicy b/server spec.policyTypes"
	if strings.Join(got, "\n") != want {
		t.Errorf("got %v, want %s", got, want)
	}
}

// TestInputWarningAboutNoObject: a loading warning that names no object
// (the finished pods left out) is filed under "Input", as no-pods is.
func TestInputWarningAboutNoObject(t *testing.T) {
	fs := lintYAML(t, base, `
apiVersion: v1
kind: Pod
metadata: {name: done, namespace: b}
spec: {containers: [{name: c}]}
status: {phase: Succeeded}`)
	var got []string
	for _, f := range fs {
		got = append(got, short(f)+": "+f.Message)
	}
	want := "warning input Input  : 1 pod in phase Succeeded or Failed left out, as it holds no IP address: b/done"
	if strings.Join(got, "\n") != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// BenchmarkLint lints the synthetic clusters of the engine benchmarks
// (internal/synth): the time is lint.Run alone, after the engine is built.
// The 100k-pod cluster is skipped in -short mode.
func BenchmarkLint(b *testing.B) {
	for _, size := range []synth.Size{synth.Size1k, synth.Size10k, synth.Size100k} {
		b.Run(size.Name, func(b *testing.B) {
			if testing.Short() && size.Pods > 10000 {
				b.Skip("100k-pod cluster skipped in -short mode")
			}
			e, diags, err := pipeline.Build(synth.Cluster(size), nil, pipeline.Options{})
			if err != nil {
				b.Fatal(err)
			}
			var n int
			for b.Loop() {
				n = len(Run(e, diags, Options{}))
			}
			b.ReportMetric(float64(n), "findings")
		})
	}
}
