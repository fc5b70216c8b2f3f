package lint

import (
	"strings"
	"testing"
)

// svcBase: b/web-0 and b/web-1 declare http=8080 behind Service b/web
// (port 80 -> targetPort http, cluster IP 10.96.0.80); Service b/api names
// a targetPort (grpc) that no pod declares; Service b/lb keeps its port
// (8443 -> 8443).
const svcBase = base + `
---
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: b, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.0.20}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: b, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.0.21}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: b}
spec: {clusterIP: 10.96.0.80, selector: {app: web}, ports: [{name: http, port: 80, targetPort: http}]}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: b}
spec: {clusterIP: 10.96.0.81, selector: {app: web}, ports: [{name: grpc, port: 9000, targetPort: grpc}, {name: http, port: 8080, targetPort: http}]}
---
apiVersion: v1
kind: Service
metadata: {name: lb, namespace: b}
spec: {type: LoadBalancer, clusterIP: 10.96.1.1, selector: {app: web}, ports: [{port: 8443}]}
`

// full is a finding with its message and hint.
func full(f Finding) string {
	return short(f) + ": " + f.Message + " | " + f.Hint
}

func TestServiceFindings(t *testing.T) {
	const target = "warning service-target-port-undeclared Service b/api spec.ports[0].targetPort: no pod the selector picks (b/web-0, b/web-1) declares a TCP container port named grpc: the port has no backends | they declare: http=8080/tcp; use one of those names or a port number"
	cases := []struct {
		name     string
		policies string
		want     []string
	}{{
		name: "ingress allows the Service port, the pods listen on the target port",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: b}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{namespaceSelector: {}}], ports: [{port: 80}]}]`,
		want: []string{
			"warning service-port-not-target NetworkPolicy b/web spec.ingress[0].ports[0].port: allows 80/tcp, the port of Service b/web, but policy applies after the Service translation: its backends (b/web-0, b/web-1) listen on 8080/tcp, which this rule does not allow | allow the target port instead of the Service port: port: 8080 (or its name, port: http)",
			target,
		},
	}, {
		name: "egress to the Service port",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: client, namespace: a}
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress: [{to: [{namespaceSelector: {matchLabels: {team: b}}, podSelector: {matchLabels: {app: web}}}], ports: [{port: 80}]}]`,
		want: []string{
			"warning service-port-not-target NetworkPolicy a/client spec.egress[0].ports[0].port: allows 80/tcp, the port of Service b/web, but policy applies after the Service translation: its backends (b/web-0, b/web-1) listen on 8080/tcp, which this rule does not allow | allow the target port instead of the Service port: port: 8080 (or its name, port: http)",
			target,
		},
	}, {
		// Allowing both ports, the target port by name, or a Service whose
		// target port is its port: nothing to say.
		name: "the target port is allowed too",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: b}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - ports: [{port: 80}, {port: http}]
  - ports: [{port: 8443}]`,
		want: []string{target},
	}, {
		// A range names the ports of several Services: one finding each,
		// in the order of the Services (b/alt before b/web) and of their
		// ports.
		name: "a port range over several Services",
		policies: `
apiVersion: v1
kind: Service
metadata: {name: alt, namespace: b}
spec: {clusterIP: 10.96.0.82, selector: {app: web}, ports: [{name: b, port: 82, targetPort: http}, {name: a, port: 81, targetPort: 8080}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: b}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{ports: [{port: 80, endPort: 82}]}]`,
		want: []string{
			"warning service-port-not-target NetworkPolicy b/web spec.ingress[0].ports[0].port: allows 82/tcp, the port of Service b/alt, but policy applies after the Service translation: its backends (b/web-0, b/web-1) listen on 8080/tcp, which this rule does not allow | allow the target port instead of the Service port: port: 8080 (or its name, port: http)",
			"warning service-port-not-target NetworkPolicy b/web spec.ingress[0].ports[0].port: allows 81/tcp, the port of Service b/alt, but policy applies after the Service translation: its backends (b/web-0, b/web-1) listen on 8080/tcp, which this rule does not allow | allow the target port instead of the Service port: port: 8080",
			"warning service-port-not-target NetworkPolicy b/web spec.ingress[0].ports[0].port: allows 80/tcp, the port of Service b/web, but policy applies after the Service translation: its backends (b/web-0, b/web-1) listen on 8080/tcp, which this rule does not allow | allow the target port instead of the Service port: port: 8080 (or its name, port: http)",
			target,
		},
	}, {
		name: "egress ipBlock covering a cluster IP",
		policies: `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: client, namespace: a}
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress: [{to: [{podSelector: {}}, {ipBlock: {cidr: 10.96.0.0/12}}]}]`,
		want: []string{
			"warning ipblock-cluster-ip NetworkPolicy a/client spec.egress[0].to[1].ipBlock: 10.96.0.0/12 covers the cluster IP 10.96.0.81 of Service b/api, b/lb and 1 more, but policy applies after the Service translation, to the backends' pod addresses: this peer never matches traffic to the Service | select the backends instead, with a podSelector and namespaceSelector that match the Service's pods",
			target,
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, f := range lintYAML(t, svcBase, c.policies) {
				if strings.HasPrefix(f.Code, "service-") || f.Code == CodeClusterIPBlock {
					got = append(got, full(f))
				}
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}

// TestServiceUnreachableFromUsers: a/client's egress policy points at the
// web pods on their target port (8080): it uses Service b/web. The web pods
// admit only b's own pods, so client reaches no backend: the Service is
// down for its one user (and so is b/api, whose port http leads there). Once the web pods admit a's pods, nothing is said;
// nor about Service b/lb, which no egress rule points at on its port.
func TestServiceUnreachableFromUsers(t *testing.T) {
	egress := `
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: client-egress, namespace: a}
spec:
  podSelector: {matchLabels: {app: client}}
  policyTypes: [Egress]
  egress: [{to: [{namespaceSelector: {matchLabels: {team: b}}, podSelector: {matchLabels: {app: web}}}], ports: [{port: 8080}]}]
`
	webIngress := func(team string) string {
		return `
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-ingress, namespace: b}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{namespaceSelector: {matchLabels: {team: ` + team + `}}}]}]
`
	}
	lines := func(docs ...string) []string {
		var out []string
		for _, f := range lintYAML(t, docs...) {
			if f.Code == CodeServiceUnreachable {
				out = append(out, short(f)+" | "+f.Message)
			}
		}
		return out
	}
	got := lines(svcBase, egress, webIngress("b"))
	// b/api's port http also leads to the web pods' 8080: it is used too.
	want := []string{"warning service-unreachable-from-users Service b/api spec.selector | " +
		"no pod whose egress policy points at this Service's backends (a/client) can reach any of them on a target port " +
		"(e.g. a/client -> b/web-0 8080/tcp: denied by the ingress of b/web-0): for its users the Service is down",
		"warning service-unreachable-from-users Service b/web spec.selector | " +
			"no pod whose egress policy points at this Service's backends (a/client) can reach any of them on a target port " +
			"(e.g. a/client -> b/web-0 8080/tcp: denied by the ingress of b/web-0): for its users the Service is down"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("findings\n%q\nwant\n%q", got, want)
	}
	if got := lines(svcBase, egress, webIngress("a")); len(got) != 0 {
		t.Errorf("with the web pods admitting a: %q, want none", got)
	}
	if got := lines(svcBase, webIngress("b")); len(got) != 0 {
		t.Errorf("with no egress rule pointing at the web pods: %q, want none", got)
	}
}
