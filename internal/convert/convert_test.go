package convert

import (
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/manifest"
	"github.com/netpol/netpol/internal/source"
)

func decode(t *testing.T, docs string, shape source.ANPShape) []source.Object {
	t.Helper()
	dec := &source.Decoder{Options: source.Options{ANPShape: shape}}
	objs := dec.Decode("in.yaml", []byte(docs))
	if err := dec.Diags.Err(); err != nil {
		t.Fatal(err)
	}
	return objs
}

// TestConvertReleasedShape: every field of the v1alpha1 shape, and the
// ClusterNetworkPolicy the v0.2.0 API documents for it, written by hand:
// Allow is Accept, a port number, name or range is a protocols entry of
// its protocol (TCP when the port says none), the Baseline policy is
// tier Baseline at priority 1000.
func TestConvertReleasedShape(t *testing.T) {
	objs := decode(t, `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata:
  name: guard
  labels: {team: platform}
  annotations:
    netpol.io/audit: deny
    kubectl.kubernetes.io/last-applied-configuration: '{"kind":"AdminNetworkPolicy"}'
spec:
  priority: 7
  subject:
    pods:
      namespaceSelector: {matchLabels: {env: prod}}
      podSelector: {matchExpressions: [{key: app, operator: In, values: [db]}]}
  ingress:
  - name: monitoring
    action: Allow
    from:
    - namespaces: {matchLabels: {kubernetes.io/metadata.name: monitoring}}
    - pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: scraper}}}
    ports:
    - portNumber: {port: 9100}
    - portNumber: {protocol: UDP, port: 53}
    - namedPort: metrics
    - portRange: {protocol: SCTP, start: 9000, end: 9010}
  - action: Pass
    from: [{namespaces: {}}]
  egress:
  - name: outside
    action: Deny
    to:
    - networks: [198.18.0.0/15, "fd00::/8"]
    - nodes: {matchLabels: {role: infra}}
  - name: names
    action: Allow
    to: [{domainNames: ["*.example.com"]}]
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata: {name: default}
spec:
  subject: {namespaces: {}}
  ingress:
  - {name: deny-rest, action: Deny, from: [{namespaces: {}}]}
  egress:
  - {action: Allow, to: [{networks: [198.18.9.0/24]}], ports: [{portRange: {start: 80, end: 90}}]}
`, "")
	r := ToClusterNetworkPolicies(objs)
	if len(r.Problems) > 0 {
		t.Fatalf("problems: %v", r.Problems)
	}
	got, err := manifest.YAML(r.Policies)
	if err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata:
  annotations:
    netpol.io/audit: deny
    netpol.io/converted-from: AdminNetworkPolicy/guard
  labels:
    team: platform
  name: guard
spec:
  egress:
  - action: Deny
    name: outside
    to:
    - networks:
      - 198.18.0.0/15
      - fd00::/8
    - nodes:
        matchLabels:
          role: infra
  - action: Accept
    name: names
    to:
    - domainNames:
      - '*.example.com'
  ingress:
  - action: Accept
    from:
    - namespaces:
        matchLabels:
          kubernetes.io/metadata.name: monitoring
    - pods:
        namespaceSelector: {}
        podSelector:
          matchLabels:
            app: scraper
    name: monitoring
    protocols:
    - tcp:
        destinationPort:
          number: 9100
    - udp:
        destinationPort:
          number: 53
    - destinationNamedPort: metrics
    - sctp:
        destinationPort:
          range:
            end: 9010
            start: 9000
  - action: Pass
    from:
    - namespaces: {}
  priority: 7
  subject:
    pods:
      namespaceSelector:
        matchLabels:
          env: prod
      podSelector:
        matchExpressions:
        - key: app
          operator: In
          values:
          - db
  tier: Admin
---
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata:
  annotations:
    netpol.io/converted-from: BaselineAdminNetworkPolicy/default
  name: default
spec:
  egress:
  - action: Accept
    protocols:
    - tcp:
        destinationPort:
          range:
            end: 90
            start: 80
    to:
    - networks:
      - 198.18.9.0/24
  ingress:
  - action: Deny
    from:
    - namespaces: {}
    name: deny-rest
  priority: 1000
  subject:
    namespaces: {}
  tier: Baseline
`
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if len(r.Replaced) != 2 || r.Replaced[0].Name != "guard" || r.Replaced[1].Kind != "BaselineAdminNetworkPolicy" {
		t.Errorf("replaced %v, want the two policies in order", r.Replaced)
	}
}

// TestConvertKEPShape: the KEP-2091 shape converts where its peers are
// namespace selectors; sameLabels, notSameLabels and related are reported
// at their fields, for none of them has a ClusterNetworkPolicy spelling.
func TestConvertKEPShape(t *testing.T) {
	objs := decode(t, `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: tenants}
spec:
  priority: 5
  subject: {namespaces: {matchExpressions: [{key: tenant, operator: Exists}]}}
  ingress:
  - action: Allow
    from:
    - namespaces: {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}}
    - pods: {namespaces: {namespaceSelector: {}}, podSelector: {matchLabels: {app: gw}}}
  - action: Allow
    from: [{namespaces: {sameLabels: [tenant]}}]
  - action: Deny
    from: [{pods: {namespaces: {related: NotSelf}, podSelector: {}}}]
  egress:
  - action: Deny
    to: [{namespaces: {notSameLabels: [tenant]}}]
`, source.ShapeKEP)
	r := ToClusterNetworkPolicies(objs)
	var got []string
	for _, p := range r.Problems {
		got = append(got, p.String())
	}
	want := []string{
		"in.yaml: AdminNetworkPolicy tenants: spec.ingress[1].from[0].namespaces.sameLabels: a ClusterNetworkPolicy cannot match namespaces that share the subject namespace's labels; write one policy per value of the labels",
		"in.yaml: AdminNetworkPolicy tenants: spec.ingress[2].from[0].pods.namespaces.related: NotSelf: a ClusterNetworkPolicy cannot select namespaces relative to the subject's own; write one policy per namespace with a namespaceSelector on kubernetes.io/metadata.name",
		"in.yaml: AdminNetworkPolicy tenants: spec.egress[0].to[0].namespaces.notSameLabels: a ClusterNetworkPolicy cannot match namespaces that differ from the subject namespace's labels; write one policy per value of the labels",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	ing := r.Policies[0].Spec.Ingress[0]
	if len(ing.From) != 2 || ing.From[0].Namespaces.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" ||
		ing.From[1].Pods == nil || ing.From[1].Pods.PodSelector.MatchLabels["app"] != "gw" || ing.Action != "Accept" {
		t.Errorf("the selector peers: %+v", ing.From)
	}
}

// TestConvertRefusesWhatMoves: a name a ClusterNetworkPolicy has, more
// rules or peers than a ClusterNetworkPolicy takes, and an order among
// equal priorities that the change of kind would change.
func TestConvertRefusesWhatMoves(t *testing.T) {
	var rules, peers strings.Builder
	for range 26 {
		rules.WriteString("  - {action: Deny, from: [{namespaces: {}}]}\n")
		peers.WriteString("    - namespaces: {}\n")
	}
	objs := decode(t, `
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: taken}
spec: {tier: Admin, priority: 1, subject: {namespaces: {}}}
---
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: a-first}
spec: {tier: Admin, priority: 3, subject: {namespaces: {}}}
---
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: zz-last}
spec: {tier: Baseline, priority: 1000, subject: {namespaces: {}}}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: taken}
spec: {priority: 2, subject: {namespaces: {}}}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: b-second}
spec: {priority: 3, subject: {namespaces: {}}}
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: many}
spec:
  priority: 4
  subject: {namespaces: {}}
  ingress:
`+rules.String()+`  egress:
  - action: Deny
    to:
`+peers.String()+`---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata: {name: default}
spec: {subject: {namespaces: {}}}
`, "")
	r := ToClusterNetworkPolicies(objs)
	var got []string
	for _, p := range r.Problems {
		got = append(got, p.Object+": "+p.Field+": "+p.Message)
	}
	want := []string{
		"AdminNetworkPolicy taken: metadata.name: a ClusterNetworkPolicy taken exists already (in.yaml (document 1)): rename one of them first",
		"AdminNetworkPolicy many: spec.egress[0].to: 26 peers: a ClusterNetworkPolicy rule takes at most 25; split the rule (the next keeps its place)",
		"AdminNetworkPolicy many: spec.ingress: 26 rules: a ClusterNetworkPolicy takes at most 25 per direction; split the policy across priorities",
		"AdminNetworkPolicy b-second: spec.priority: converted to priority 3, it would come after ClusterNetworkPolicy a-first of the same priority (by name), not where it stands today; give one of them a priority of its own first",
		"BaselineAdminNetworkPolicy default: spec.priority: converted to priority 1000, it would come before ClusterNetworkPolicy zz-last of the same priority (by name), not where it stands today; give one of them a priority of its own first",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestProveNamesTheFirstDifference: a ClusterNetworkPolicy that says
// something else than its original (a port moved) is not proven, and the
// problem shows the first line that differs; as converted, it is.
func TestProveNamesTheFirstDifference(t *testing.T) {
	objs := decode(t, `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: web}
spec:
  priority: 3
  subject: {namespaces: {}}
  ingress: [{name: http, action: Allow, from: [{namespaces: {}}], ports: [{portNumber: {port: 80}}]}]
`, "")
	r := ToClusterNetworkPolicies(objs)
	data, err := manifest.YAML(r.Policies)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"as converted": string(data), "a port moved": strings.Replace(string(data), "number: 80", "number: 81", 1)} {
		dec := &source.Decoder{}
		problems := Prove(r, dec.Decode("cnp.yaml", []byte(text)))
		var got []string
		for _, p := range problems {
			got = append(got, p.String())
		}
		want := ""
		if name == "a port moved" {
			want = `in.yaml: AdminNetworkPolicy web: its ClusterNetworkPolicy reads otherwise: port 81/tcp, where it has port 80/tcp`
		}
		if strings.Join(got, "\n") != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}
