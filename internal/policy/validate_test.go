package policy_test

import (
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
)

// TestValidation checks that invalid policies are refused with the field at
// fault; expectations are the API rules, written out.
func TestValidation(t *testing.T) {
	anp := func(spec string) string {
		return "apiVersion: policy.networking.k8s.io/v1alpha1\nkind: AdminNetworkPolicy\nmetadata: {name: a}\nspec: " + spec
	}
	cnp := func(spec string) string {
		return "apiVersion: policy.networking.k8s.io/v1alpha2\nkind: ClusterNetworkPolicy\nmetadata: {name: c}\nspec: " + spec
	}
	np := func(spec string) string {
		return "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: np, namespace: x}\nspec: " + spec
	}
	cases := []struct{ name, doc, field, msg string }{
		{"priority too high", anp("{priority: 1001, subject: {namespaces: {}}}"), "spec.priority", "between 0 and 1000"},
		{"priority negative", anp("{priority: -1, subject: {namespaces: {}}}"), "spec.priority", "between 0 and 1000"},
		{"subject with two fields", anp("{priority: 1, subject: {namespaces: {}, pods: {namespaceSelector: {}, podSelector: {}}}}"), "spec.subject", "exactly one"},
		{"peer with two fields", anp("{priority: 1, subject: {namespaces: {}}, egress: [{action: Deny, to: [{namespaces: {}, networks: [198.18.0.0/16]}]}]}"), "spec.egress[0].to[0]", "exactly one peer field"},
		{"bad action", anp("{priority: 1, subject: {namespaces: {}}, ingress: [{action: Accept, from: [{namespaces: {}}]}]}"), "spec.ingress[0].action", `unsupported value "Accept"`},
		{"named port with networks", anp("{priority: 1, subject: {namespaces: {}}, egress: [{action: Deny, to: [{networks: [198.18.0.0/16]}], ports: [{namedPort: http}]}]}"), "spec.egress[0].to[0]", "named ports"},
		{"rule name too long", anp("{priority: 1, subject: {namespaces: {}}, ingress: [{name: " + strings.Repeat("r", 101) + ", action: Deny, from: [{namespaces: {}}]}]}"), "spec.ingress[0].name", "100 characters"},
		{"BANP not default", "apiVersion: policy.networking.k8s.io/v1alpha1\nkind: BaselineAdminNetworkPolicy\nmetadata: {name: other}\nspec: {subject: {namespaces: {}}}", "metadata.name", "default"},
		{"BANP pass", "apiVersion: policy.networking.k8s.io/v1alpha1\nkind: BaselineAdminNetworkPolicy\nmetadata: {name: default}\nspec: {subject: {namespaces: {}}, ingress: [{action: Pass, from: [{namespaces: {}}]}]}", "spec.ingress[0].action", `unsupported value "Pass"`},
		{"CNP tier", cnp("{tier: Middle, priority: 1, subject: {namespaces: {}}}"), "spec.tier", `"Middle"`},
		{"CNP tcp without port", cnp("{tier: Admin, priority: 1, subject: {namespaces: {}}, ingress: [{action: Deny, from: [{namespaces: {}}], protocols: [{tcp: {}}]}]}"), "spec.ingress[0].protocols[0].tcp", "destinationPort"},
		{"CNP range reversed", cnp("{tier: Admin, priority: 1, subject: {namespaces: {}}, ingress: [{action: Deny, from: [{namespaces: {}}], protocols: [{udp: {destinationPort: {range: {start: 90, end: 80}}}}]}]}"), "spec.ingress[0].protocols[0].udp.destinationPort.range", "less than end"},
		{"endPort without port", np("{podSelector: {}, ingress: [{ports: [{endPort: 90}]}]}"), "spec.ingress[0].ports[0].endPort", "port is not specified"},
		{"endPort below port", np("{podSelector: {}, ingress: [{ports: [{port: 90, endPort: 80}]}]}"), "spec.ingress[0].ports[0].endPort", "greater than or equal"},
		{"endPort with named port", np("{podSelector: {}, ingress: [{ports: [{port: http, endPort: 80}]}]}"), "spec.ingress[0].ports[0].endPort", "named port"},
		{"bad CIDR", np("{podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 198.18.0.0/33}}]}]}"), "spec.ingress[0].from[0].ipBlock.cidr", "invalid CIDR"},
		{"except outside", np("{podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 198.18.0.0/16, except: [198.19.0.0/24]}}]}]}"), "spec.ingress[0].from[0].ipBlock.except[0]", "strict subset"},
		{"bad protocol", np("{podSelector: {}, ingress: [{ports: [{protocol: ICMP}]}]}"), "spec.ingress[0].ports[0].protocol", `"ICMP"`},
		{"bad policyType", np("{podSelector: {}, policyTypes: [Sideways]}"), "spec.policyTypes[0]", `"Sideways"`},
		{"bad selector operator", np("{podSelector: {matchExpressions: [{key: a, operator: Near}]}}"), "spec.podSelector", "invalid label selector"},
		{"KEP related", anp("{priority: 1, subject: {namespaces: {}}, ingress: [{action: Deny, from: [{namespaces: {related: Other}}]}]}"), "spec.ingress[0].from[0].namespaces.related", `"Other"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dec := &source.Decoder{}
			objs := dec.Decode("p.yaml", []byte(c.doc))
			if err := dec.Diags.Err(); err != nil {
				t.Fatalf("decode: %v", err)
			}
			set, diags := policy.Normalize(objs)
			errs := diags.Errors()
			for _, d := range errs {
				if d.Field == c.field && strings.Contains(d.Message, c.msg) {
					if d.Origin.File != "p.yaml" {
						t.Errorf("origin %+v", d.Origin)
					}
					if n := len(set.Policies()); n != 0 {
						t.Errorf("an invalid policy entered the set (%d policies)", n)
					}
					return
				}
			}
			t.Errorf("want error at %s containing %q, got %v", c.field, c.msg, errs)
		})
	}
}
