package source_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/source"
)

// wantObj is what a test expects of one decoded object; Type is the Go type
// of Value as %T prints it.
type wantObj struct {
	Kind, Namespace, Name, Type string
	Origin                      diag.Origin
	Unknown                     []string
}

// wantDiag is one expected finding: its severity, field path and a part of
// its message.
type wantDiag struct {
	Severity diag.Severity
	Field    string
	Msg      string
}

func checkObjects(t *testing.T, got []source.Object, want []wantObj) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d objects, want %d:\n%s", len(got), len(want), objectsText(got))
		return
	}
	for i, w := range want {
		g := got[i]
		gotType := fmt.Sprintf("%T", g.Value)
		if g.Kind != w.Kind || g.Namespace != w.Namespace || g.Name != w.Name || gotType != w.Type || g.Origin != w.Origin {
			t.Errorf("object %d: got %s %q/%q %s %+v, want %s %q/%q %s %+v", i, g.Kind, g.Namespace, g.Name, gotType, g.Origin,
				w.Kind, w.Namespace, w.Name, w.Type, w.Origin)
		}
		if strings.Join(g.Unknown, ",") != strings.Join(w.Unknown, ",") {
			t.Errorf("object %d: Unknown = %q, want %q", i, g.Unknown, w.Unknown)
		}
	}
}

func objectsText(objs []source.Object) string {
	var b strings.Builder
	for _, o := range objs {
		fmt.Fprintf(&b, "  %s %T %+v unknown=%q\n", o.Ref(), o.Value, o.Origin, o.Unknown)
	}
	return b.String()
}

// checkDiags wants exactly the findings of want, in order.
func checkDiags(t *testing.T, got diag.List, want []wantDiag) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = got[i].Severity == want[i].Severity && got[i].Field == want[i].Field && strings.Contains(got[i].Message, want[i].Msg)
	}
	if !ok {
		var b strings.Builder
		for _, d := range got {
			fmt.Fprintf(&b, "  %s [field %q]: %s\n", d.Severity, d.Field, d.String())
		}
		t.Errorf("got findings:\n%swant %+v", b.String(), want)
	}
}

const (
	typePod       = "*v1.Pod"
	typeNamespace = "*v1.Namespace"
	typeNP        = "*v1.NetworkPolicy"
	typeDeploy    = "*v1.Deployment"
	typeANP       = "*v1alpha1.AdminNetworkPolicy"
	typeBANP      = "*v1alpha1.BaselineAdminNetworkPolicy"
	typeKEPANP    = "*kep.AdminNetworkPolicy"
	typeKEPBANP   = "*kep.BaselineAdminNetworkPolicy"
	typeCNP       = "*v1alpha2.ClusterNetworkPolicy"
)

func TestDecode(t *testing.T) {
	const file = "in.yaml"
	at := func(doc, item int) diag.Origin { return diag.Origin{File: file, Doc: doc, Item: item} }
	anp := func(spec string) string {
		return "apiVersion: policy.networking.k8s.io/v1alpha1\nkind: AdminNetworkPolicy\nmetadata: {name: a}\nspec: " + spec + "\n"
	}
	const (
		v017Peers  = "{priority: 1, subject: {namespaces: {}}, ingress: [{action: Allow, from: [{namespaces: {matchLabels: {t: x}}}]}]}"
		kepPeers   = "{priority: 1, subject: {namespaces: {}}, ingress: [{action: Allow, from: [{namespaces: {sameLabels: [tenant]}}]}]}"
		emptyPeers = "{priority: 1, subject: {namespaces: {}}, ingress: [{action: Allow, from: [{namespaces: {}}]}]}"
		// pods without namespaceSelector (v0.1.7) or namespaces (KEP): no field tells.
		podsOnly   = "{priority: 1, subject: {namespaces: {}}, ingress: [{action: Allow, from: [{pods: {podSelector: {}}}]}]}"
		mixedPeers = "{priority: 1, subject: {namespaces: {}}, ingress: [{action: Allow, from: [{namespaces: {matchLabels: {t: x}}}, {namespaces: {related: Self}}]}]}"
	)
	cases := []struct {
		name  string
		opts  source.Options
		in    string
		objs  []wantObj
		diags []wantDiag
	}{
		{
			name: "multi-document YAML",
			in: "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x}\nspec: {containers: [{name: c}]}\n---\n" +
				"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p, namespace: x}\nspec: {podSelector: {}}\n",
			objs: []wantObj{
				{Kind: "Namespace", Name: "x", Type: typeNamespace, Origin: at(1, 0)},
				{Kind: "Pod", Namespace: "x", Name: "a", Type: typePod, Origin: at(2, 0)},
				{Kind: "NetworkPolicy", Namespace: "x", Name: "p", Type: typeNP, Origin: at(3, 0)},
			},
		},
		{
			name: "single YAML document has no document number",
			in:   "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x}\n",
			objs: []wantObj{{Kind: "Pod", Namespace: "x", Name: "a", Type: typePod, Origin: at(0, 0)}},
		},
		{
			name: "JSON object",
			in:   `{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "x"}, "spec": {"replicas": 2, "selector": {}, "template": {"spec": {"containers": []}}}}`,
			objs: []wantObj{{Kind: "Deployment", Namespace: "x", Name: "d", Type: typeDeploy, Origin: at(0, 0)}},
		},
		{
			name: "JSON stream of several objects",
			in: `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}
{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "x"}}
  {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b", "namespace": "x"}}`,
			objs: []wantObj{
				{Kind: "Namespace", Name: "x", Type: typeNamespace, Origin: at(1, 0)},
				{Kind: "Pod", Namespace: "x", Name: "a", Type: typePod, Origin: at(2, 0)},
				{Kind: "Pod", Namespace: "x", Name: "b", Type: typePod, Origin: at(3, 0)},
			},
		},
		{
			name: "kind List",
			in: "apiVersion: v1\nkind: List\nitems:\n" +
				"- {apiVersion: v1, kind: Namespace, metadata: {name: x}}\n" +
				"- {apiVersion: v1, kind: Pod, metadata: {name: a, namespace: x}}\n" +
				"- {apiVersion: networking.k8s.io/v1, kind: NetworkPolicy, metadata: {name: p, namespace: x}, spec: {podSelector: {}}}\n",
			objs: []wantObj{
				{Kind: "Namespace", Name: "x", Type: typeNamespace, Origin: at(0, 1)},
				{Kind: "Pod", Namespace: "x", Name: "a", Type: typePod, Origin: at(0, 2)},
				{Kind: "NetworkPolicy", Namespace: "x", Name: "p", Type: typeNP, Origin: at(0, 3)},
			},
		},
		{
			// As the API server returns them (kubectl get pods -o yaml):
			// the items carry no apiVersion and kind.
			name: "typed lists: the items' kind and apiVersion come from the list",
			in: "apiVersion: v1\nkind: NamespaceList\nitems: [{metadata: {name: x}}]\n---\n" +
				"apiVersion: v1\nkind: PodList\nmetadata: {resourceVersion: \"7\"}\nitems:\n- {metadata: {name: a, namespace: x}}\n- {metadata: {name: b, namespace: x}}\n---\n" +
				"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicyList\nitems: [{metadata: {name: p, namespace: x}, spec: {podSelector: {}}}]\n---\n" +
				"apiVersion: apps/v1\nkind: DeploymentList\nitems: [{metadata: {name: d, namespace: x}, spec: {selector: {}, template: {spec: {containers: []}}}}]\n---\n" +
				"apiVersion: policy.networking.k8s.io/v1alpha1\nkind: AdminNetworkPolicyList\nitems: [{metadata: {name: a}, spec: " + v017Peers + "}]\n---\n" +
				"apiVersion: policy.networking.k8s.io/v1alpha1\nkind: BaselineAdminNetworkPolicyList\nitems: [{metadata: {name: default}, spec: {subject: {namespaces: {}}}}]\n---\n" +
				"apiVersion: policy.networking.k8s.io/v1alpha2\nkind: ClusterNetworkPolicyList\nitems: [{metadata: {name: c}, spec: {tier: Admin, priority: 3, subject: {namespaces: {}}}}]\n",
			objs: []wantObj{
				{Kind: "Namespace", Name: "x", Type: typeNamespace, Origin: at(1, 1)},
				{Kind: "Pod", Namespace: "x", Name: "a", Type: typePod, Origin: at(2, 1)},
				{Kind: "Pod", Namespace: "x", Name: "b", Type: typePod, Origin: at(2, 2)},
				{Kind: "NetworkPolicy", Namespace: "x", Name: "p", Type: typeNP, Origin: at(3, 1)},
				{Kind: "Deployment", Namespace: "x", Name: "d", Type: typeDeploy, Origin: at(4, 1)},
				{Kind: "AdminNetworkPolicy", Name: "a", Type: typeANP, Origin: at(5, 1)},
				{Kind: "BaselineAdminNetworkPolicy", Name: "default", Type: typeBANP, Origin: at(6, 1)},
				{Kind: "ClusterNetworkPolicy", Name: "c", Type: typeCNP, Origin: at(7, 1)},
			},
		},
		{
			// Destinations: a Service leads to backends, an EndpointSlice
			// names them; both as kubectl get svc,endpointslices -o yaml
			// returns them (typed lists) and one by one.
			name: "Service and EndpointSlice",
			in: "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: x}\nspec: {clusterIPs: [10.96.0.1, \"fd00:96::1\"], selector: {app: web}, ports: [{name: http, port: 80, targetPort: http}, {name: dns, port: 53, protocol: UDP, targetPort: 5353}]}\n---\n" +
				"apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: web-1, namespace: x, labels: {kubernetes.io/service-name: web}}\naddressType: IPv4\nports: [{name: http, port: 8080}]\nendpoints: [{addresses: [198.18.0.1], conditions: {ready: true}, targetRef: {kind: Pod, name: a}}]\n---\n" +
				"apiVersion: v1\nkind: ServiceList\nitems: [{metadata: {name: db, namespace: x}, spec: {clusterIP: None}}]\n---\n" +
				"apiVersion: discovery.k8s.io/v1\nkind: EndpointSliceList\nitems: [{metadata: {name: db-1, namespace: x}, addressType: IPv6, endpoints: []}]\n",
			objs: []wantObj{
				{Kind: "Service", Namespace: "x", Name: "web", Type: "*v1.Service", Origin: at(1, 0)},
				{Kind: "EndpointSlice", Namespace: "x", Name: "web-1", Type: "*v1.EndpointSlice", Origin: at(2, 0)},
				{Kind: "Service", Namespace: "x", Name: "db", Type: "*v1.Service", Origin: at(3, 1)},
				{Kind: "EndpointSlice", Namespace: "x", Name: "db-1", Type: "*v1.EndpointSlice", Origin: at(4, 1)},
			},
		},
		{
			name: "EndpointSlice of the retired v1beta1 API; a Service field of the wrong type",
			in: "apiVersion: discovery.k8s.io/v1beta1\nkind: EndpointSlice\nmetadata: {name: s, namespace: x}\naddressType: IPv4\nendpoints: []\n---\n" +
				"apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: x}\nspec: {ports: [{port: http}]}\n",
			diags: []wantDiag{
				{diag.Error, "apiVersion", `unsupported apiVersion "discovery.k8s.io/v1beta1" for kind EndpointSlice (want discovery.k8s.io/v1)`},
				{diag.Error, "spec.ports.port", "wrong type: got string, want int32"},
			},
		},
		{
			name: "typed list: an item's own kind and apiVersion win",
			in:   "apiVersion: v1\nkind: PodList\nitems: [{apiVersion: v1, kind: Namespace, metadata: {name: x}}, {metadata: {name: a, namespace: x}}]\n",
			objs: []wantObj{
				{Kind: "Namespace", Name: "x", Type: typeNamespace, Origin: at(0, 1)},
				{Kind: "Pod", Namespace: "x", Name: "a", Type: typePod, Origin: at(0, 2)},
			},
		},
		{
			name:  "kind List: items need their own kind",
			in:    "apiVersion: v1\nkind: List\nitems: [{metadata: {name: a, namespace: x}}]\n",
			diags: []wantDiag{{diag.Error, "", "apiVersion and kind are required"}},
		},
		{
			name: "List in a multi-document stream, bad item keeps its item number",
			in: "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\n" +
				"apiVersion: v1\nkind: PodList\nitems:\n" +
				"- {apiVersion: v1, kind: Pod, metadata: {name: a, namespace: x}}\n" +
				"- {apiVersion: v1, kind: Pod, metadata: {namespace: x}}\n",
			objs: []wantObj{
				{Kind: "Namespace", Name: "x", Type: typeNamespace, Origin: at(1, 0)},
				{Kind: "Pod", Namespace: "x", Name: "a", Type: typePod, Origin: at(2, 1)},
			},
			diags: []wantDiag{{diag.Error, "metadata.name", "Required value"}},
		},
		{
			name: "empty documents are skipped",
			in: "---\n# only a comment\n---\n\n---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x}\n---\nnull\n---\n",
			objs: []wantObj{{Kind: "Pod", Namespace: "x", Name: "a", Type: typePod, Origin: at(3, 0)}},
		},
		{
			name: "only empty documents",
			in:   "---\n---\n# nothing\n",
		},
		{
			// Issue 15: a dump holds thousands of objects netpol does not
			// read; they are counted in one finding, not one warning each.
			name: "unknown kinds are counted in one warning",
			in: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, namespace: x}\ndata: {a: b}\n---\n" +
				"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x}\n---\n" +
				`{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "json"}}` + "\n---\n" +
				"apiVersion: v1\nkind: ConfigMapList\nitems: [{metadata: {name: c1}}, {metadata: {name: c2}}]\n",
			objs: []wantObj{{Kind: "Pod", Namespace: "x", Name: "a", Type: typePod, Origin: at(3, 0)}},
			diags: []wantDiag{
				{diag.Warning, "", "ignored 5 objects of kinds netpol does not read: ConfigMap 4, Widget 1"},
			},
		},
		{
			name:  "one object of a kind netpol does not read",
			in:    "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n",
			diags: []wantDiag{{diag.Warning, "", "ignored 1 object of a kind netpol does not read: Secret"}},
		},
		{
			// Not decoded, so not judged: whatever an object of a kind
			// netpol does not read holds (no name, YAML the fast path
			// leaves to go-yaml), it is only counted.
			name: "objects of unknown kinds are not decoded",
			in: "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: x}\n---\n" +
				"apiVersion: v1\nkind: ConfigMap\nmetadata: &m {name: a}\nother: *m\ndata:\n  a: !!binary aGk=\n---\n" +
				`{"apiVersion": "v1", "kind": "Event"}`,
			diags: []wantDiag{{diag.Warning, "", "ignored 3 objects of kinds netpol does not read: ConfigMap 2, Event 1"}},
		},
		{
			name:  "known kind with a wrong apiVersion",
			in:    "apiVersion: networking.k8s.io/v1beta1\nkind: NetworkPolicy\nmetadata: {name: p, namespace: x}\nspec: {podSelector: {}}\n",
			diags: []wantDiag{{diag.Error, "apiVersion", `"networking.k8s.io/v1beta1"`}},
		},
		{
			name:  "ClusterNetworkPolicy in v1alpha1",
			in:    "apiVersion: policy.networking.k8s.io/v1alpha1\nkind: ClusterNetworkPolicy\nmetadata: {name: c}\nspec: {}\n",
			diags: []wantDiag{{diag.Error, "apiVersion", "policy.networking.k8s.io/v1alpha2"}},
		},
		{
			name:  "AdminNetworkPolicy in v1alpha2",
			in:    "apiVersion: policy.networking.k8s.io/v1alpha2\nkind: AdminNetworkPolicy\nmetadata: {name: a}\nspec: {}\n",
			diags: []wantDiag{{diag.Error, "apiVersion", "policy.networking.k8s.io/v1alpha1"}},
		},
		{
			name:  "missing kind",
			in:    "apiVersion: v1\nmetadata: {name: a, namespace: x}\n",
			diags: []wantDiag{{diag.Error, "", "kind"}},
		},
		{
			name:  "missing apiVersion",
			in:    "kind: Pod\nmetadata: {name: a, namespace: x}\n",
			diags: []wantDiag{{diag.Error, "", "apiVersion"}},
		},
		{
			name:  "missing name",
			in:    "apiVersion: v1\nkind: Pod\nmetadata: {namespace: x}\n",
			diags: []wantDiag{{diag.Error, "metadata.name", "Required value"}},
		},
		{
			// Issue 25: names reach file paths (the lab's per-node files),
			// nft comments and terminals; the API server would refuse these.
			name: "AdversarialNames: invalid names and namespaces, as the API server refuses them",
			in: "apiVersion: v1\nkind: Node\nmetadata: {name: ../../x}\n---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: {name: 'a\" ; accept', namespace: x}\n---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: X.y}\n---\n" +
				"apiVersion: v1\nkind: Namespace\nmetadata: {name: a.b}\n---\n" +
				"apiVersion: v1\nkind: Service\nmetadata: {name: 1web, namespace: x}\n---\n" +
				"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: \"p\\nq\", namespace: x}\nspec: {podSelector: {}}\n---\n" +
				"apiVersion: policy.networking.k8s.io/v1alpha1\nkind: AdminNetworkPolicy\nmetadata: {name: \"a\\u001b[2J\"}\nspec: " + v017Peers + "\n---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: {name: ok.a-1, namespace: x-1}\n---\n" +
				"apiVersion: v1\nkind: Pod\nmetadata: {name: l, namespace: x, labels: {app: \"a\\u001b[2J\"}}\n---\n" +
				"apiVersion: v1\nkind: Namespace\nmetadata: {name: z, labels: {\"bad key\": v}}\n",
			objs: []wantObj{{Kind: "Pod", Namespace: "x-1", Name: "ok.a-1", Type: typePod, Origin: at(8, 0)}},
			diags: []wantDiag{
				{diag.Error, "metadata.name", "a lowercase RFC 1123 subdomain"},
				{diag.Error, "metadata.name", "a lowercase RFC 1123 subdomain"},
				{diag.Error, "metadata.namespace", "a lowercase RFC 1123 label"},
				{diag.Error, "metadata.name", "must not contain dots"},
				{diag.Error, "metadata.name", "a DNS-1035 label"},
				{diag.Error, "metadata.name", "a lowercase RFC 1123 subdomain"},
				{diag.Error, "metadata.name", "a lowercase RFC 1123 subdomain"},
				{diag.Error, "metadata.labels", "a valid label must be an empty string or consist of alphanumeric characters"},
				{diag.Error, "metadata.labels", "name part must consist of alphanumeric characters"},
			},
		},
		{
			name:  "not an object",
			in:    "- a\n- b\n",
			diags: []wantDiag{{diag.Error, "", "not a Kubernetes object"}},
		},
		{
			name:  "invalid YAML",
			in:    "apiVersion: v1\nkind: Pod\nmetadata: {name: a\n",
			diags: []wantDiag{{diag.Error, "", "not valid YAML or JSON"}},
		},
		{
			name:  "unknown field in a NetworkPolicy is an error",
			in:    "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p, namespace: x}\nspec: {podSelector: {}, ingress: [{from: [{podSelectr: {}}]}]}\n",
			diags: []wantDiag{{diag.Error, "spec.ingress[0].from[0].podSelectr", "unknown field"}},
		},
		{
			name: "lenient: unknown field in a NetworkPolicy is a warning and recorded",
			opts: source.Options{Lenient: true},
			in:   "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p, namespace: x}\nspec: {podSelector: {}, ingress: [{from: [{podSelectr: {}}]}]}\n",
			objs: []wantObj{{Kind: "NetworkPolicy", Namespace: "x", Name: "p", Type: typeNP, Origin: at(0, 0),
				Unknown: []string{"spec.ingress[0].from[0].podSelectr"}}},
			diags: []wantDiag{{diag.Warning, "spec.ingress[0].from[0].podSelectr", "unknown field"}},
		},
		{
			name: "unknown field in a Pod is a warning (it matches nothing the policies read)",
			in:   "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: x}\nspec: {containers: [{name: c, colour: red}]}\n",
			objs: []wantObj{{Kind: "Pod", Namespace: "x", Name: "p", Type: typePod, Origin: at(0, 0),
				Unknown: []string{"spec.containers[0].colour"}}},
			diags: []wantDiag{{diag.Warning, "spec.containers[0].colour", "unknown field"}},
		},
		{
			// kubectl's strict field validation refuses them; read without
			// them, a misspelt field widens a rule (issue 15).
			name: "unknown fields in an admin policy are errors",
			in:   anp("{priority: 1, subject: {namespaces: {}}, colour: red, ingress: [{action: Allow, from: [{namespaces: {}, tenants: {}}]}]}"),
			diags: []wantDiag{
				{diag.Error, "spec.colour", "unknown field"},
				{diag.Error, "spec.ingress[0].from[0].tenants", "unknown field"},
			},
		},
		{
			name: "lenient: unknown fields in an admin policy are dropped with a warning, and recorded",
			opts: source.Options{Lenient: true},
			in:   anp("{priority: 1, subject: {namespaces: {}}, colour: red, ingress: [{action: Allow, from: [{namespaces: {}, tenants: {}}]}]}"),
			objs: []wantObj{{Kind: "AdminNetworkPolicy", Name: "a", Type: typeANP, Origin: at(0, 0),
				Unknown: []string{"spec.colour", "spec.ingress[0].from[0].tenants"}}},
			diags: []wantDiag{
				{diag.Warning, "spec.colour", "unknown field, ignored"},
				{diag.Warning, "spec.ingress[0].from[0].tenants", "unknown field, ignored"},
			},
		},
		{
			name: "lenient, ANP shape forced to KEP: a v0.1.7 field is dropped",
			opts: source.Options{ANPShape: source.ShapeKEP, Lenient: true},
			in:   anp(v017Peers),
			objs: []wantObj{{Kind: "AdminNetworkPolicy", Name: "a", Type: typeKEPANP, Origin: at(0, 0),
				Unknown: []string{"spec.ingress[0].from[0].namespaces.matchLabels"}}},
			diags: []wantDiag{{diag.Warning, "spec.ingress[0].from[0].namespaces.matchLabels", "unknown field, ignored"}},
		},
		{
			name:  "ANP: port instead of ports",
			in:    anp("{priority: 1, subject: {namespaces: {}}, egress: [{action: Allow, to: [{networks: [198.18.0.0/15]}], port: [{portNumber: {port: 53, protocol: UDP}}]}]}"),
			diags: []wantDiag{{diag.Error, "spec.egress[0].port", "unknown field"}},
		},
		{
			name: "BANP: port instead of ports",
			in: "apiVersion: policy.networking.k8s.io/v1alpha1\nkind: BaselineAdminNetworkPolicy\nmetadata: {name: default}\n" +
				"spec: {subject: {namespaces: {}}, ingress: [{action: Allow, from: [{namespaces: {}}], port: [{portNumber: {port: 80, protocol: TCP}}]}]}\n",
			diags: []wantDiag{{diag.Error, "spec.ingress[0].port", "unknown field"}},
		},
		{
			name: "CNP: protocol instead of protocols",
			in: "apiVersion: policy.networking.k8s.io/v1alpha2\nkind: ClusterNetworkPolicy\nmetadata: {name: c}\n" +
				"spec: {tier: Admin, priority: 3, subject: {namespaces: {}}, ingress: [{action: Accept, from: [{namespaces: {}}], protocol: [{tcp: {destinationPort: {number: 80}}}]}]}\n",
			diags: []wantDiag{{diag.Error, "spec.ingress[0].protocol", "unknown field"}},
		},
		{
			name: "an unknown field of an admin policy in a list names the item",
			in: "apiVersion: policy.networking.k8s.io/v1alpha1\nkind: AdminNetworkPolicyList\nitems:\n" +
				"- {metadata: {name: ok}, spec: {priority: 1, subject: {namespaces: {}}}}\n" +
				"- {metadata: {name: bad}, spec: {priority: 2, subject: {namespaces: {}}, egress: [{action: Allow, to: [{namespaces: {}}], port: []}]}}\n",
			objs:  []wantObj{{Kind: "AdminNetworkPolicy", Name: "ok", Type: typeANP, Origin: at(0, 1)}},
			diags: []wantDiag{{diag.Error, "spec.egress[0].port", "unknown field"}},
		},
		{
			name:  "type error names the field",
			in:    anp(`{priority: "high", subject: {namespaces: {}}}`),
			diags: []wantDiag{{diag.Error, "spec.priority", "wrong type: got string, want int32"}},
		},
		{
			name:  "type error deep in a list",
			in:    "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p, namespace: x}\nspec: {podSelector: {}, ingress: [{ports: [{endPort: eighty}]}]}\n",
			diags: []wantDiag{{diag.Error, "spec.ingress.ports.endPort", "wrong type: got string, want int32"}},
		},
		{
			name:  "YAML boolean: unquoted namespace y",
			in:    "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: y}\n",
			diags: []wantDiag{{diag.Error, "metadata.namespace", "quote the value"}},
		},
		{
			name:  "YAML boolean: unquoted label value on",
			in:    "apiVersion: v1\nkind: Namespace\nmetadata: {name: x, labels: {enabled: on}}\n",
			diags: []wantDiag{{diag.Error, "metadata.labels", "quote the value"}},
		},
		{
			name: "quoted y is a string",
			in:   "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: \"y\"}\n",
			objs: []wantObj{{Kind: "Pod", Namespace: "y", Name: "a", Type: typePod, Origin: at(0, 0)}},
		},
		{
			name: "ANP v0.1.7 shape",
			in:   anp(v017Peers),
			objs: []wantObj{{Kind: "AdminNetworkPolicy", Name: "a", Type: typeANP, Origin: at(0, 0)}},
		},
		{
			name: "ANP KEP shape",
			in:   anp(kepPeers),
			objs: []wantObj{{Kind: "AdminNetworkPolicy", Name: "a", Type: typeKEPANP, Origin: at(0, 0)}},
		},
		{
			name: "ANP KEP shape through pods.namespaces",
			in:   anp("{priority: 1, subject: {namespaces: {}}, egress: [{action: Deny, to: [{pods: {namespaces: {related: NotSelf}, podSelector: {}}}]}]}"),
			objs: []wantObj{{Kind: "AdminNetworkPolicy", Name: "a", Type: typeKEPANP, Origin: at(0, 0)}},
		},
		{
			// Since 58953da an empty namespaces peer counts as the released
			// shape: it is invalid in the KEP shape (exactly one field).
			name: "ANP with only an empty namespaces peer is v0.1.7",
			in:   anp(emptyPeers),
			objs: []wantObj{{Kind: "AdminNetworkPolicy", Name: "a", Type: typeANP, Origin: at(0, 0)}},
		},
		{
			name:  "ANP ambiguous shape reads as v0.1.7 with a warning",
			in:    anp(podsOnly),
			objs:  []wantObj{{Kind: "AdminNetworkPolicy", Name: "a", Type: typeANP, Origin: at(0, 0)}},
			diags: []wantDiag{{diag.Warning, "spec", "v0.1.7"}},
		},
		{
			name: "ANP ambiguous shape forced to KEP",
			opts: source.Options{ANPShape: source.ShapeKEP},
			in:   anp(podsOnly),
			objs: []wantObj{{Kind: "AdminNetworkPolicy", Name: "a", Type: typeKEPANP, Origin: at(0, 0)}},
		},
		{
			name:  "ANP empty namespaces peer next to a KEP peer is mixed",
			in:    anp("{priority: 1, subject: {namespaces: {}}, egress: [{action: Deny, to: [{namespaces: {related: Self}}, {namespaces: {}}]}]}"),
			diags: []wantDiag{{diag.Error, "spec.egress[0].to[1]", "mixes"}},
		},
		{
			name: "ANP without peers is not ambiguous",
			in:   anp("{priority: 1, subject: {namespaces: {}}}"),
			objs: []wantObj{{Kind: "AdminNetworkPolicy", Name: "a", Type: typeANP, Origin: at(0, 0)}},
		},
		{
			name:  "ANP mixed shapes",
			in:    anp(mixedPeers),
			diags: []wantDiag{{diag.Error, "spec.ingress[0].from[1]", "mixes"}},
		},
		{
			name: "ANP shape forced to KEP",
			opts: source.Options{ANPShape: source.ShapeKEP},
			in:   anp(emptyPeers),
			objs: []wantObj{{Kind: "AdminNetworkPolicy", Name: "a", Type: typeKEPANP, Origin: at(0, 0)}},
		},
		{
			name:  "ANP shape forced to KEP: a v0.1.7 field is unknown",
			opts:  source.Options{ANPShape: source.ShapeKEP},
			in:    anp(v017Peers),
			diags: []wantDiag{{diag.Error, "spec.ingress[0].from[0].namespaces.matchLabels", "unknown field"}},
		},
		{
			name:  "ANP shape forced to v0.1.7: a KEP field is unknown",
			opts:  source.Options{ANPShape: source.ShapeV017},
			in:    anp(kepPeers),
			diags: []wantDiag{{diag.Error, "spec.ingress[0].from[0].namespaces.sameLabels", "unknown field"}},
		},
		{
			name: "BANP in both shapes",
			in: "apiVersion: policy.networking.k8s.io/v1alpha1\nkind: BaselineAdminNetworkPolicy\nmetadata: {name: default}\n" +
				"spec: {subject: {namespaces: {}}, egress: [{action: Deny, to: [{networks: [198.18.0.0/15]}]}]}\n---\n" +
				"apiVersion: policy.networking.k8s.io/v1alpha1\nkind: BaselineAdminNetworkPolicy\nmetadata: {name: default}\n" +
				"spec: {subject: {namespaces: {}}, ingress: [{action: Deny, from: [{namespaces: {notSameLabels: [tenant]}}]}]}\n",
			objs: []wantObj{
				{Kind: "BaselineAdminNetworkPolicy", Name: "default", Type: typeBANP, Origin: at(1, 0)},
				{Kind: "BaselineAdminNetworkPolicy", Name: "default", Type: typeKEPBANP, Origin: at(2, 0)},
			},
		},
		{
			name: "ClusterNetworkPolicy",
			in: "apiVersion: policy.networking.k8s.io/v1alpha2\nkind: ClusterNetworkPolicy\nmetadata: {name: c}\n" +
				"spec: {tier: Admin, priority: 3, subject: {namespaces: {}}, ingress: [{action: Accept, from: [{namespaces: {}}], protocols: [{tcp: {destinationPort: {number: 80}}}]}]}\n",
			objs: []wantObj{{Kind: "ClusterNetworkPolicy", Name: "c", Type: typeCNP, Origin: at(0, 0)}},
		},
		{
			name: "ReplicationController",
			in:   "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: rc, namespace: x}\nspec: {replicas: 2, selector: {app: rc}, template: {metadata: {labels: {app: rc}}, spec: {containers: []}}}\n",
			objs: []wantObj{{Kind: "ReplicationController", Namespace: "x", Name: "rc", Type: "*v1.ReplicationController", Origin: at(0, 0)}},
		},
		{
			name: "extensions/v1beta1 NetworkPolicy",
			in:   "apiVersion: extensions/v1beta1\nkind: NetworkPolicy\nmetadata: {name: p, namespace: x}\nspec: {podSelector: {}, ingress: [{from: []}]}\n",
			objs: []wantObj{{Kind: "NetworkPolicy", Namespace: "x", Name: "p", Type: typeNP, Origin: at(0, 0)}},
		},
		{
			name:  "duplicate field is a warning",
			in:    "{\"apiVersion\": \"v1\", \"kind\": \"Pod\", \"metadata\": {\"name\": \"a\", \"namespace\": \"x\"}, \"spec\": {\"nodeName\": \"n1\", \"nodeName\": \"n2\"}}",
			objs:  []wantObj{{Kind: "Pod", Namespace: "x", Name: "a", Type: typePod, Origin: at(0, 0)}},
			diags: []wantDiag{{diag.Warning, "spec.nodeName", "duplicate field"}},
		},
		{
			name:  "duplicate YAML key is a warning",
			in:    "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x}\nspec:\n  nodeName: n1\n  nodeName: n2\n",
			objs:  []wantObj{{Kind: "Pod", Namespace: "x", Name: "a", Type: typePod, Origin: at(0, 0)}},
			diags: []wantDiag{{diag.Warning, "", `duplicate field: the last value wins (line 6: key "nodeName" already set in map)`}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dec := &source.Decoder{Options: c.opts}
			objs := dec.Decode(file, []byte(c.in))
			checkObjects(t, objs, c.objs)
			checkDiags(t, dec.Diags, c.diags)
			for _, d := range dec.Diags {
				if d.Origin.File != file {
					t.Errorf("finding %q: origin file %q, want %q", d, d.Origin.File, file)
				}
			}
		})
	}
}

// TestDecodeOrigins checks that findings point at the document and item they
// came from.
func TestDecodeOrigins(t *testing.T) {
	in := "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x}\n---\n" +
		"apiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: x}\nspec: {priority: high}\n---\n" +
		"apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: c, namespace: x}}\n- {apiVersion: v1, kind: Pod, metadata: {name: d, namespace: x}, spec: {nodeNme: n}}\n"
	dec := &source.Decoder{}
	objs := dec.Decode("o.yaml", []byte(in))
	checkObjects(t, objs, []wantObj{
		{Kind: "Pod", Namespace: "x", Name: "a", Type: typePod, Origin: diag.Origin{File: "o.yaml", Doc: 1}},
		{Kind: "Pod", Namespace: "x", Name: "c", Type: typePod, Origin: diag.Origin{File: "o.yaml", Doc: 3, Item: 1}},
		{Kind: "Pod", Namespace: "x", Name: "d", Type: typePod, Origin: diag.Origin{File: "o.yaml", Doc: 3, Item: 2}, Unknown: []string{"spec.nodeNme"}},
	})
	want := []struct {
		sev    diag.Severity
		origin diag.Origin
		object string
		field  string
	}{
		{diag.Error, diag.Origin{File: "o.yaml", Doc: 2}, "Pod x/b", "spec.priority"},
		{diag.Warning, diag.Origin{File: "o.yaml", Doc: 3, Item: 2}, "Pod x/d", "spec.nodeNme"},
	}
	if len(dec.Diags) != len(want) {
		t.Fatalf("got findings %v, want %d", dec.Diags, len(want))
	}
	for i, w := range want {
		d := dec.Diags[i]
		if d.Severity != w.sev || d.Origin != w.origin || d.Object != w.object || d.Field != w.field {
			t.Errorf("finding %d: got %s %+v %q %q, want %s %+v %q %q", i, d.Severity, d.Origin, d.Object, d.Field, w.sev, w.origin, w.object, w.field)
		}
	}
	if got, want := dec.Diags[0].String(), "o.yaml (document 2): Pod x/b: spec.priority: "; !strings.HasPrefix(got, want) {
		t.Errorf("String() = %q, want prefix %q", got, want)
	}
}

// TestDecodeListItemErrors: a finding about a list item names the item, as
// items[i] (its path in the document), also when the file holds one
// document.
func TestDecodeListItemErrors(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string // Diagnostic.String() of every finding
	}{
		{
			name: "PodList from the API server, one document",
			in: "apiVersion: v1\nkind: PodList\nitems:\n" +
				"- {metadata: {name: a, namespace: x}}\n- {metadata: {name: b, namespace: x}}\n- {metadata: {name: c, namespace: x}}\n" +
				"- {metadata: {name: d, namespace: x}, spec: {priority: high}}\n",
			want: []string{"l.yaml (items[3]): Pod x/d: spec.priority: wrong type: got string, want int32"},
		},
		{
			name: "NetworkPolicyList in the second document",
			in: "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\n" +
				"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicyList\nitems: [{metadata: {name: p, namespace: x}, spec: {podSelector: {}, ingress: [{ports: [{endPort: eighty}]}]}}]\n",
			want: []string{"l.yaml (document 2, items[0]): NetworkPolicy x/p: spec.ingress.ports.endPort: wrong type: got string, want int32"},
		},
		{
			name: "kind List without item kinds",
			in:   "apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Namespace, metadata: {name: x}}, {metadata: {name: a, namespace: x}}]\n",
			want: []string{"l.yaml (items[1]): not a Kubernetes object: apiVersion and kind are required"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dec := &source.Decoder{}
			dec.Decode("l.yaml", []byte(c.in))
			var got []string
			for _, d := range dec.Diags {
				got = append(got, d.String())
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("got findings\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(c.want, "\n  "))
			}
		})
	}
}

func TestParseANPShape(t *testing.T) {
	cases := []struct {
		in   string
		want source.ANPShape
		err  bool
	}{
		{"", source.ShapeAuto, false},
		{"auto", source.ShapeAuto, false},
		{"v0.1.7", source.ShapeV017, false},
		{"kep", source.ShapeKEP, false},
		{"KEP", "", true},
		{"v0.2.0", "", true},
	}
	for _, c := range cases {
		got, err := source.ParseANPShape(c.in)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("ParseANPShape(%q) = %q, %v; want %q, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"b.yaml":               "apiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: x}\n",
		"a.yml":                "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: a2, namespace: x}\n",
		"sub/deeper/c.json":    `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "c", "namespace": "x"}}`,
		"sub/d.YAML":           "apiVersion: v1\nkind: Pod\nmetadata: {name: d, namespace: x}\n",
		"sub/notes.txt":        "apiVersion: v1\nkind: Pod\nmetadata: {name: txt, namespace: x}\n",
		"sub/README.md":        "# not a manifest\n",
		"sub/e.yaml.bak":       "apiVersion: v1\nkind: Pod\nmetadata: {name: bak, namespace: x}\n",
		".hidden/f.yaml":       "apiVersion: v1\nkind: Pod\nmetadata: {name: hidden, namespace: x}\n",
		"sub/.git/config.yaml": "apiVersion: v1\nkind: Pod\nmetadata: {name: git, namespace: x}\n",
		"z.yaml":               "apiVersion: v1\nkind: Pod\nmetadata: {namespace: x}\n", // an error, not an I/O failure
	}
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in := func(name string, doc int) diag.Origin {
		return diag.Origin{File: filepath.Join(dir, filepath.FromSlash(name)), Doc: doc}
	}
	pod := func(name string, origin diag.Origin) wantObj {
		return wantObj{Kind: "Pod", Namespace: "x", Name: name, Type: typePod, Origin: origin}
	}

	t.Run("directory tree", func(t *testing.T) {
		dec := &source.Decoder{}
		objs, err := dec.Load([]string{dir}, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkObjects(t, objs, []wantObj{
			pod("a", in("a.yml", 1)),
			pod("a2", in("a.yml", 2)),
			pod("b", in("b.yaml", 0)),
			pod("d", in("sub/d.YAML", 0)), // lexical: "d." sorts before "deeper/"
			pod("c", in("sub/deeper/c.json", 0)),
		})
		checkDiags(t, dec.Diags, []wantDiag{{diag.Error, "metadata.name", "Required value"}})
		if len(dec.Diags) == 1 && dec.Diags[0].Origin != in("z.yaml", 0) {
			t.Errorf("error origin %+v, want %+v", dec.Diags[0].Origin, in("z.yaml", 0))
		}
	})

	t.Run("files, directories and stdin in argument order", func(t *testing.T) {
		dec := &source.Decoder{}
		stdin := strings.NewReader("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: s, namespace: x}\n")
		objs, err := dec.Load([]string{filepath.Join(dir, "b.yaml"), "-", filepath.Join(dir, "sub", "deeper")}, stdin)
		if err != nil {
			t.Fatal(err)
		}
		checkObjects(t, objs, []wantObj{
			pod("b", in("b.yaml", 0)),
			{Kind: "Namespace", Name: "x", Type: typeNamespace, Origin: diag.Origin{File: "-", Doc: 1}},
			pod("s", diag.Origin{File: "-", Doc: 2}),
			pod("c", in("sub/deeper/c.json", 0)),
		})
		checkDiags(t, dec.Diags, nil)
	})

	t.Run("a file named explicitly is read whatever its extension", func(t *testing.T) {
		dec := &source.Decoder{}
		objs, err := dec.Load([]string{filepath.Join(dir, "sub", "notes.txt")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkObjects(t, objs, []wantObj{pod("txt", in("sub/notes.txt", 0))})
	})

	t.Run("missing path is an I/O error", func(t *testing.T) {
		dec := &source.Decoder{}
		_, err := dec.Load([]string{filepath.Join(dir, "nope.yaml")}, nil)
		if err == nil || !strings.Contains(err.Error(), "nope.yaml") {
			t.Errorf("got error %v, want one naming nope.yaml", err)
		}
	})

	t.Run("stdin read failure", func(t *testing.T) {
		dec := &source.Decoder{}
		_, err := dec.Load([]string{"-"}, failingReader{})
		if err == nil || !strings.Contains(err.Error(), "stdin") {
			t.Errorf("got error %v, want one naming stdin", err)
		}
	})
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, fmt.Errorf("device gone") }

// TestLoadIgnoredKindsOneFinding: over every file of a run, the objects of
// kinds netpol does not read make one finding, counted by kind, most
// frequent first.
func TestLoadIgnoredKindsOneFinding(t *testing.T) {
	dir := t.TempDir()
	cm := strings.Repeat("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: x}\ndata:\n  config: |\n    a: b\n---\n", 1001)
	files := map[string]string{
		"a.yaml": cm + "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x}\n",
		"b.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: x}\n---\napiVersion: v1\nkind: Event\nmetadata: {name: e, namespace: x}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dec := &source.Decoder{}
	objs, err := dec.Load([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkObjects(t, objs, []wantObj{{Kind: "Pod", Namespace: "x", Name: "a", Type: typePod, Origin: diag.Origin{File: filepath.Join(dir, "a.yaml"), Doc: 1002}}})
	if len(dec.Diags) != 1 || dec.Diags[0].String() != "ignored 1,003 objects of kinds netpol does not read: ConfigMap 1,001, Event 1, Secret 1" {
		t.Errorf("%d findings, the first %v; want one", len(dec.Diags), dec.Diags[:min(len(dec.Diags), 1)])
	}
}

// TestLoadManyFiles: the files of a directory are decoded several at a
// time, their objects and findings kept in the order of the files; a file
// that cannot be read is the error.
func TestLoadManyFiles(t *testing.T) {
	dir := t.TempDir()
	for i := range 40 {
		text := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: p%02d, namespace: x}\n", i)
		switch i % 5 {
		case 1:
			text += "spec: {colour: red}\n" // a warning
		case 2:
			text += "---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"
		case 3:
			text += "---\napiVersion: v1\nkind: Pod\nmetadata: {namespace: x}\n" // an error
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.yaml", i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	load := func(procs int) ([]source.Object, diag.List) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		dec := &source.Decoder{}
		objs, err := dec.Load([]string{dir}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := dec.Documents.Load(); got != 56 {
			t.Errorf("%d documents counted, want 56", got)
		}
		return objs, dec.Diags
	}
	one, oneDiags := load(1)
	four, fourDiags := load(4)
	if len(one) != 40 || one[0].Name != "p00" || one[39].Name != "p39" {
		t.Fatalf("objects %s", objectsText(one))
	}
	if !reflect.DeepEqual(one, four) || !reflect.DeepEqual(oneDiags, fourDiags) {
		t.Errorf("one goroutine:\n%s%v\nfour:\n%s%v", objectsText(one), oneDiags, objectsText(four), fourDiags)
	}
	if n := len(oneDiags); n != 17 || oneDiags[n-1].String() != "ignored 8 objects of a kind netpol does not read: Secret 8" {
		t.Errorf("%d findings, the last %v", n, oneDiags[n-1])
	}

	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "f20a.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := (&source.Decoder{}).Load([]string{dir}, nil); err == nil || !strings.Contains(err.Error(), "f20a.yaml") {
		t.Errorf("Load = %v, want the error of f20a.yaml", err)
	}
}
