package kube_test

import (
	"encoding/json"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/kubetest"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/source/kube"
)

// refusedCore is the cluster of TestKubeAdversarialRefusedAdminValues:
// batch and frontend in shop, intruder in untrusted, every pod serving
// 8080. The namespaces carry the name label the API server adds, so that
// the file path decides as the cluster path does.
const refusedCore = `
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {kubernetes.io/metadata.name: shop}}
---
apiVersion: v1
kind: Namespace
metadata: {name: untrusted, labels: {kubernetes.io/metadata.name: untrusted}}
---
apiVersion: v1
kind: Pod
metadata: {name: batch, namespace: shop, labels: {app: batch}}
spec: {nodeName: node-1, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.3}
---
apiVersion: v1
kind: Pod
metadata: {name: frontend, namespace: shop, labels: {app: frontend}}
spec: {nodeName: node-1, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.2}
---
apiVersion: v1
kind: Pod
metadata: {name: intruder, namespace: untrusted, labels: {app: intruder}}
spec: {nodeName: node-1, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.2.1}
`

// Where a refused value goes, and what the policy around it means. Every
// template's intent denies untrusted/intruder -> shop/batch on 8080/tcp
// and leaves shop/frontend -> shop/batch allowed; the verdicts of its
// fail-closed form are in the table rows (see verdicts).
const (
	untrustedNS = `{namespaces: {matchLabels: {kubernetes.io/metadata.name: untrusted}}}`
	port8080    = `{portNumber: {protocol: TCP, port: 8080}}`
)

// anpDeny: an ANP whose one ingress rule denies untrusted; PEER and PORT
// are replaced.
func anpDeny(peer, port string) string {
	return `apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: guard}
spec:
  priority: 20
  subject: {namespaces: {}}
  ingress: [{name: untrusted, action: Deny, from: [` + peer + `], ports: [` + port + `]}]
`
}

// anpAllowFirst: an ANP that allows shop on 8080, then denies everyone:
// untrusted is denied by the second rule.
func anpAllowFirst(port string) string {
	return `apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: guard}
spec:
  priority: 20
  subject: {namespaces: {matchLabels: {kubernetes.io/metadata.name: shop}}}
  ingress:
  - {name: shop, action: Allow, from: [{namespaces: {matchLabels: {kubernetes.io/metadata.name: shop}}}], ports: [` + port + `]}
  - {name: rest, action: Deny, from: [{namespaces: {}}]}
`
}

// anpEgress: untrusted's pods may not reach anyone through PEER (egress).
func anpEgress(peer string) string {
	return `apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: guard}
spec:
  priority: 20
  subject: {namespaces: {matchLabels: {kubernetes.io/metadata.name: untrusted}}}
  egress: [{name: out, action: Deny, to: [` + peer + `]}]
`
}

// anpSubject: SUBJECT (shop, as written) denies ingress from untrusted.
func anpSubject(subject string) string {
	return `apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: guard}
spec:
  priority: 20
  subject: ` + subject + `
  ingress: [{name: untrusted, action: Deny, from: [` + untrustedNS + `]}]
`
}

// banpDeny is anpDeny as the BaselineAdminNetworkPolicy.
func banpDeny(peer, port string) string {
	return `apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata: {name: default}
spec:
  subject: {namespaces: {}}
  ingress: [{name: untrusted, action: Deny, from: [` + peer + `], ports: [` + port + `]}]
`
}

func banpSubject(subject string) string {
	return `apiVersion: policy.networking.k8s.io/v1alpha1
kind: BaselineAdminNetworkPolicy
metadata: {name: default}
spec:
  subject: ` + subject + `
  ingress: [{name: untrusted, action: Deny, from: [` + untrustedNS + `]}]
`
}

// cnp: a ClusterNetworkPolicy of the Admin tier whose rule ACTION
// matches untrusted on PROTOCOLS.
func cnp(action, peer, protocols string) string {
	return `apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: guard}
spec:
  tier: Admin
  priority: 20
  subject: {namespaces: {}}
  ingress: [{name: untrusted, action: ` + action + `, from: [` + peer + `], protocols: [` + protocols + `]}]
`
}

func cnpSubject(subject string) string {
	return `apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: guard}
spec:
  tier: Admin
  priority: 20
  subject: ` + subject + `
  ingress: [{name: untrusted, action: Deny, from: [` + untrustedNS + `]}]
`
}

// verdicts of the two flows every row checks, on 8080/tcp.
type verdicts struct{ intruderToBatch, frontendToBatch bool }

var (
	// A rule that fails closed denies every peer on every port (Deny and
	// Pass), or an Allow rule matches nothing and the next rule denies:
	// frontend is denied too.
	ruleDenies = verdicts{intruderToBatch: false, frontendToBatch: false}
	// A subject that fails closed selects every pod; the policy's valid
	// Deny rule denies untrusted only, so frontend is still allowed.
	// An egress rule of untrusted's pods that fails closed leaves
	// frontend's traffic alone too.
	othersAllowed = verdicts{intruderToBatch: false, frontendToBatch: true}
)

// Label selectors that the CRDs store (their schema types matchLabels and
// matchExpressions, nothing more) and that no label selector can be:
// LabelSelectorAsSelector refuses them, and so does netpol.
var badSelectors = []struct{ name, sel string }{
	{"key with a space", `{matchLabels: {"bad key": x}}`},
	{"key with an invalid prefix", `{matchLabels: {"-x.io/app": x}}`},
	{"key name of 64 characters", `{matchLabels: {` + strings.Repeat("k", 64) + `: x}}`},
	{"value with a space", `{matchLabels: {app: "a b"}}`},
	{"value of 64 characters", `{matchLabels: {app: ` + strings.Repeat("v", 64) + `}}`},
	{"unknown operator Equals", `{matchExpressions: [{key: app, operator: Equals, values: [x]}]}`},
	{"operator Gt (node affinity only)", `{matchExpressions: [{key: app, operator: Gt, values: ["1"]}]}`},
	{"In without values", `{matchExpressions: [{key: app, operator: In}]}`},
	{"NotIn with an empty list", `{matchExpressions: [{key: app, operator: NotIn, values: []}]}`},
	{"Exists with values", `{matchExpressions: [{key: app, operator: Exists, values: [x]}]}`},
	{"DoesNotExist with values", `{matchExpressions: [{key: app, operator: DoesNotExist, values: [x]}]}`},
	{"expression with an empty key", `{matchExpressions: [{key: "", operator: Exists}]}`},
}

// refusedRow is one value the CRDs in deploy/ store and netpol refuses.
type refusedRow struct {
	name     string
	resource string // kube.ANP, kube.BANP or kube.CNP's Resource
	doc      string
	field    string // the finding's field
	message  string // the start of its message
	want     verdicts
}

// refusedValues is the table: derived by reading the CRD schemas in
// deploy/crds (types, enums, bounds, patterns, CEL rules) against
// internal/policy's checks. The CRDs bound priorities, list sizes, port
// numbers, CIDRs (isCIDR), domain names (the same pattern), actions and
// tiers, and ClusterNetworkPolicy ranges (start < end), as netpol does;
// what they leave open is below.
func refusedValues() []refusedRow {
	rows := []refusedRow{
		// Protocols: the CRD types them as free strings (default TCP).
		{"ANP portNumber protocol udp", "adminnetworkpolicies", anpDeny(untrustedNS, `{portNumber: {protocol: udp, port: 8080}}`),
			"spec.ingress[0].ports[0].portNumber.protocol", `unsupported value "udp": supported values: "TCP", "UDP", "SCTP"`, ruleDenies},
		{"ANP portNumber protocol ICMP", "adminnetworkpolicies", anpDeny(untrustedNS, `{portNumber: {protocol: ICMP, port: 8080}}`),
			"spec.ingress[0].ports[0].portNumber.protocol", `unsupported value "ICMP": supported values: "TCP", "UDP", "SCTP"`, ruleDenies},
		{"ANP portRange protocol tcp", "adminnetworkpolicies", anpDeny(untrustedNS, `{portRange: {protocol: tcp, start: 8000, end: 9000}}`),
			"spec.ingress[0].ports[0].portRange.protocol", `unsupported value "tcp": supported values: "TCP", "UDP", "SCTP"`, ruleDenies},
		{"ANP Allow rule protocol Udp", "adminnetworkpolicies", anpAllowFirst(`{portNumber: {protocol: Udp, port: 8080}}`),
			"spec.ingress[0].ports[0].portNumber.protocol", `unsupported value "Udp": supported values: "TCP", "UDP", "SCTP"`, ruleDenies},
		{"BANP portNumber protocol udp", "baselineadminnetworkpolicies", banpDeny(untrustedNS, `{portNumber: {protocol: udp, port: 8080}}`),
			"spec.ingress[0].ports[0].portNumber.protocol", `unsupported value "udp": supported values: "TCP", "UDP", "SCTP"`, ruleDenies},
		// Port ranges: no CEL rule in the v1alpha1 CRDs.
		{"ANP portRange start > end", "adminnetworkpolicies", anpDeny(untrustedNS, `{portRange: {protocol: TCP, start: 9000, end: 8000}}`),
			"spec.ingress[0].ports[0].portRange", "start (9000) must be less than end (8000)", ruleDenies},
		{"ANP portRange start = end", "adminnetworkpolicies", anpDeny(untrustedNS, `{portRange: {protocol: TCP, start: 8080, end: 8080}}`),
			"spec.ingress[0].ports[0].portRange", "start (8080) must be less than end (8080)", ruleDenies},
		{"ANP Allow rule portRange start > end", "adminnetworkpolicies", anpAllowFirst(`{portRange: {protocol: TCP, start: 9000, end: 8000}}`),
			"spec.ingress[0].ports[0].portRange", "start (9000) must be less than end (8000)", ruleDenies},
		{"BANP portRange start > end", "baselineadminnetworkpolicies", banpDeny(untrustedNS, `{portRange: {protocol: TCP, start: 9000, end: 8000}}`),
			"spec.ingress[0].ports[0].portRange", "start (9000) must be less than end (8000)", ruleDenies},
		// Named ports: a free string in the CRDs, an IANA service name
		// (validation.IsValidPortName) for a pod's container port.
		{"ANP namedPort upper case", "adminnetworkpolicies", anpDeny(untrustedNS, `{namedPort: HTTP}`),
			"spec.ingress[0].ports[0].namedPort", `invalid port name "HTTP"`, ruleDenies},
		{"ANP namedPort empty", "adminnetworkpolicies", anpDeny(untrustedNS, `{namedPort: ""}`),
			"spec.ingress[0].ports[0].namedPort", `invalid port name ""`, ruleDenies},
		{"ANP namedPort of 16 characters", "adminnetworkpolicies", anpDeny(untrustedNS, `{namedPort: sixteen-letters-x}`),
			"spec.ingress[0].ports[0].namedPort", `invalid port name "sixteen-letters-x"`, ruleDenies},
		{"ANP namedPort without a letter", "adminnetworkpolicies", anpDeny(untrustedNS, `{namedPort: "8080"}`),
			"spec.ingress[0].ports[0].namedPort", `invalid port name "8080"`, ruleDenies},
		{"ANP namedPort starting with a hyphen", "adminnetworkpolicies", anpDeny(untrustedNS, `{namedPort: -http}`),
			"spec.ingress[0].ports[0].namedPort", `invalid port name "-http"`, ruleDenies},
		{"ANP namedPort with two hyphens in a row", "adminnetworkpolicies", anpDeny(untrustedNS, `{namedPort: ht--tp}`),
			"spec.ingress[0].ports[0].namedPort", `invalid port name "ht--tp"`, ruleDenies},
		{"ANP namedPort with an underscore", "adminnetworkpolicies", anpDeny(untrustedNS, `{namedPort: ht_tp}`),
			"spec.ingress[0].ports[0].namedPort", `invalid port name "ht_tp"`, ruleDenies},
		{"ANP Allow rule namedPort upper case", "adminnetworkpolicies", anpAllowFirst(`{namedPort: HTTP}`),
			"spec.ingress[0].ports[0].namedPort", `invalid port name "HTTP"`, ruleDenies},
		{"BANP namedPort upper case", "baselineadminnetworkpolicies", banpDeny(untrustedNS, `{namedPort: HTTP}`),
			"spec.ingress[0].ports[0].namedPort", `invalid port name "HTTP"`, ruleDenies},
		{"CNP destinationNamedPort upper case", "clusternetworkpolicies", cnp("Deny", untrustedNS, `{destinationNamedPort: HTTP}`),
			"spec.ingress[0].protocols[0].destinationNamedPort", `invalid port name "HTTP"`, ruleDenies},
		// An empty string is one property for the CRD (minProperties 1),
		// and no field at all for the Go type.
		{"CNP destinationNamedPort empty", "clusternetworkpolicies", cnp("Deny", untrustedNS, `{destinationNamedPort: ""}`),
			"spec.ingress[0].protocols[0]", "exactly one of tcp, udp, sctp or destinationNamedPort must be set", ruleDenies},
		{"CNP Pass rule destinationNamedPort upper case", "clusternetworkpolicies", cnp("Pass", untrustedNS, `{destinationNamedPort: HTTP}`),
			"spec.ingress[0].protocols[0].destinationNamedPort", `invalid port name "HTTP"`, ruleDenies},
	}
	// Every label selector field of every kind, with one bad selector,
	// and every bad selector in one field.
	bad := badSelectors[0].sel
	for _, f := range []struct {
		name, resource, doc, field string
		want                       verdicts
	}{
		{"ANP subject namespaces", "adminnetworkpolicies", anpSubject(`{namespaces: ` + bad + `}`), "spec.subject.namespaces", othersAllowed},
		{"ANP subject pods namespaceSelector", "adminnetworkpolicies", anpSubject(`{pods: {namespaceSelector: ` + bad + `, podSelector: {}}}`), "spec.subject.pods.namespaceSelector", othersAllowed},
		{"ANP subject pods podSelector", "adminnetworkpolicies", anpSubject(`{pods: {namespaceSelector: {}, podSelector: ` + bad + `}}`), "spec.subject.pods.podSelector", othersAllowed},
		{"ANP ingress namespaces", "adminnetworkpolicies", anpDeny(`{namespaces: `+bad+`}`, port8080), "spec.ingress[0].from[0].namespaces", ruleDenies},
		{"ANP ingress pods namespaceSelector", "adminnetworkpolicies", anpDeny(`{pods: {namespaceSelector: `+bad+`, podSelector: {}}}`, port8080), "spec.ingress[0].from[0].pods.namespaceSelector", ruleDenies},
		{"ANP ingress pods podSelector", "adminnetworkpolicies", anpDeny(`{pods: {namespaceSelector: {}, podSelector: `+bad+`}}`, port8080), "spec.ingress[0].from[0].pods.podSelector", ruleDenies},
		{"ANP egress namespaces", "adminnetworkpolicies", anpEgress(`{namespaces: ` + bad + `}`), "spec.egress[0].to[0].namespaces", othersAllowed},
		{"ANP egress pods podSelector", "adminnetworkpolicies", anpEgress(`{pods: {namespaceSelector: {}, podSelector: ` + bad + `}}`), "spec.egress[0].to[0].pods.podSelector", othersAllowed},
		{"ANP egress nodes", "adminnetworkpolicies", anpEgress(`{nodes: ` + bad + `}`), "spec.egress[0].to[0].nodes", othersAllowed},
		{"BANP subject namespaces", "baselineadminnetworkpolicies", banpSubject(`{namespaces: ` + bad + `}`), "spec.subject.namespaces", othersAllowed},
		{"BANP ingress pods podSelector", "baselineadminnetworkpolicies", banpDeny(`{pods: {namespaceSelector: {}, podSelector: `+bad+`}}`, port8080), "spec.ingress[0].from[0].pods.podSelector", ruleDenies},
		{"CNP subject namespaces", "clusternetworkpolicies", cnpSubject(`{namespaces: ` + bad + `}`), "spec.subject.namespaces", othersAllowed},
		{"CNP subject pods podSelector", "clusternetworkpolicies", cnpSubject(`{pods: {podSelector: ` + bad + `}}`), "spec.subject.pods.podSelector", othersAllowed},
		{"CNP ingress namespaces", "clusternetworkpolicies", cnp("Deny", `{namespaces: `+bad+`}`, `{tcp: {destinationPort: {number: 8080}}}`), "spec.ingress[0].from[0].namespaces", ruleDenies},
		{"CNP Pass rule ingress pods namespaceSelector", "clusternetworkpolicies", cnp("Pass", `{pods: {namespaceSelector: `+bad+`, podSelector: {}}}`, `{tcp: {destinationPort: {number: 8080}}}`), "spec.ingress[0].from[0].pods.namespaceSelector", ruleDenies},
	} {
		rows = append(rows, refusedRow{"selector in " + f.name, f.resource, f.doc, f.field, "invalid label selector: ", f.want})
	}
	for _, s := range badSelectors[1:] {
		rows = append(rows, refusedRow{"ANP ingress namespaces, " + s.name, "adminnetworkpolicies", anpDeny(`{namespaces: `+s.sel+`}`, port8080),
			"spec.ingress[0].from[0].namespaces", "invalid label selector: ", ruleDenies})
	}
	return rows
}

// TestKubeAdversarialRefusedAdminValues: every value of the table is
// stored by a real API server with the CRDs of deploy/ (the create
// succeeds), and netpol refuses it (an error naming the object and the
// field) from the cluster and from a file alike. The policy is then not
// left out, which would lift its denies: it is enforced failed closed
// (the row's verdicts), and an analysis of the file fails with the error.
func TestKubeAdversarialRefusedAdminValues(t *testing.T) {
	c := kubetest.Start(t)
	ctx := t.Context()
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	dec := &source.Decoder{}
	core := dec.Decode("core.yaml", []byte(refusedCore))
	if err := dec.Diags.Err(); err != nil {
		t.Fatal(err)
	}
	for _, row := range refusedValues() {
		t.Run(row.name, func(t *testing.T) {
			objs, err := kubetest.Manifests(row.doc)
			if err != nil || len(objs) != 1 {
				t.Fatalf("the row's document: %d objects, %v", len(objs), err)
			}
			gvr := kube.ANP
			switch row.resource {
			case kube.BANP.Resource:
				gvr = kube.BANP
			case kube.CNP.Resource:
				gvr = kube.CNP
			}
			stored, err := dyn.Resource(gvr).Create(ctx, objs[0], metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("the API server refuses the value (the row does not belong in the table): %v", err)
			}
			t.Cleanup(func() { _ = dyn.Resource(gvr).Delete(ctx, stored.GetName(), metav1.DeleteOptions{}) })
			data, err := json.Marshal(stored.Object)
			if err != nil {
				t.Fatal(err)
			}
			ref := stored.GetKind() + " " + stored.GetName()
			for _, in := range []struct{ file, data string }{{"cluster", string(data)}, {"policy.yaml", row.doc}} {
				d := &source.Decoder{}
				objs := append(d.Decode(in.file, []byte(in.data)), core...)
				// The agent's build: invalid objects are left out or
				// failed closed, the rest enforced.
				e, diags, err := pipeline.Build(objs, d.Diags, pipeline.Options{SkipInvalid: true})
				if err != nil {
					t.Fatalf("%s: the agent's build fails: %v", in.file, err)
				}
				checkRefused(t, in.file, diags, ref, row)
				for _, f := range []struct {
					from, to string
					want     bool
				}{{"untrusted/intruder", "shop/batch", row.want.intruderToBatch}, {"shop/frontend", "shop/batch", row.want.frontendToBatch}} {
					if got := allowed(t, e, f.from, f.to); got != f.want {
						t.Errorf("%s: %s -> %s 8080/tcp allowed %v, want %v", in.file, f.from, f.to, got, f.want)
					}
				}
				// An analysis (netpol explain, matrix, lint: no
				// SkipInvalid) refuses the input, naming file, object
				// and field.
				_, _, err = pipeline.Build(objs, d.Diags, pipeline.Options{})
				if want := in.file + ": " + ref + ": " + row.field + ": " + row.message; err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("%s: analysis: %v, want an error containing %q", in.file, err, want)
				}
			}
		})
	}
}

// checkRefused finds the row's error among diags.
func checkRefused(t *testing.T, file string, diags diag.List, ref string, row refusedRow) {
	t.Helper()
	for _, d := range diags.Errors() {
		if d.Origin.File == file && d.Object == ref && d.Field == row.field && strings.HasPrefix(d.Message, row.message) {
			return
		}
	}
	t.Errorf("%s: no error %s: %s: %s...; errors: %v", file, ref, row.field, row.message, diags.Errors())
}
