package policy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
)

// Each policy under test is the second document of its file, after a
// namespace, so that the expected origin is {p.yaml, document 2}.
const (
	validateFile = "p.yaml"
	preamble     = "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n---\n"
)

func anpDoc(spec string) string {
	return "apiVersion: policy.networking.k8s.io/v1alpha1\nkind: AdminNetworkPolicy\nmetadata: {name: a}\nspec: " + spec + "\n"
}

func banpDoc(name, spec string) string {
	return "apiVersion: policy.networking.k8s.io/v1alpha1\nkind: BaselineAdminNetworkPolicy\nmetadata: {name: " + name + "}\nspec: " + spec + "\n"
}

func cnpDoc(spec string) string {
	return "apiVersion: policy.networking.k8s.io/v1alpha2\nkind: ClusterNetworkPolicy\nmetadata: {name: c}\nspec: " + spec + "\n"
}

func npDoc(spec string) string {
	return "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: np, namespace: x}\nspec: " + spec + "\n"
}

// rules writes n copies of rule as a YAML flow list.
func rules(n int, rule string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(rule, i)
	}
	return "[" + strings.Join(items, ", ") + "]"
}

// normalize runs decode and Normalize on doc; decode errors fail the test,
// since every case here must be well-formed YAML of a known shape.
func normalize(t *testing.T, doc string, opts source.Options) (*policy.Set, diag.List) {
	t.Helper()
	dec := &source.Decoder{Options: opts}
	objs := dec.Decode(validateFile, []byte(preamble+doc))
	if err := dec.Diags.Err(); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if len(objs) != 2 {
		t.Fatalf("decoded %d objects, want 2", len(objs))
	}
	return policy.Normalize(objs)
}

// TestValidation checks that invalid policies are refused with the field at
// fault; expectations are the API rules, written out.
func TestValidation(t *testing.T) {
	const subj = "priority: 1, subject: {namespaces: {}}"
	cases := []struct {
		name   string
		opts   source.Options
		doc    string
		object string // Diagnostic.Object
		field  string
		msg    string
	}{
		// Priority and list limits.
		{"ANP priority too high", source.Options{}, anpDoc("{priority: 1001, subject: {namespaces: {}}}"),
			"AdminNetworkPolicy a", "spec.priority", "must be between 0 and 1000, got 1001"},
		{"ANP priority negative", source.Options{}, anpDoc("{priority: -1, subject: {namespaces: {}}}"),
			"AdminNetworkPolicy a", "spec.priority", "must be between 0 and 1000, got -1"},
		{"CNP priority too high", source.Options{}, cnpDoc("{tier: Admin, priority: 1001, subject: {namespaces: {}}}"),
			"ClusterNetworkPolicy c", "spec.priority", "must be between 0 and 1000"},
		{"ANP 101 ingress rules", source.Options{},
			anpDoc("{" + subj + ", ingress: " + rules(101, "{name: r%d, action: Deny, from: [{namespaces: {}}]}") + "}"),
			"AdminNetworkPolicy a", "spec.ingress", "must have at most 100 items, got 101"},
		{"ANP 101 egress rules", source.Options{},
			anpDoc("{" + subj + ", egress: " + rules(101, "{name: r%d, action: Allow, to: [{networks: [198.18.0.0/16]}]}") + "}"),
			"AdminNetworkPolicy a", "spec.egress", "must have at most 100 items, got 101"},
		{"BANP 101 ingress rules", source.Options{},
			banpDoc("default", "{subject: {namespaces: {}}, ingress: "+rules(101, "{name: r%d, action: Deny, from: [{namespaces: {}}]}")+"}"),
			"BaselineAdminNetworkPolicy default", "spec.ingress", "must have at most 100 items, got 101"},
		{"CNP 26 ingress rules", source.Options{},
			cnpDoc("{tier: Admin, " + subj + ", ingress: " + rules(26, "{name: r%d, action: Deny, from: [{namespaces: {}}]}") + "}"),
			"ClusterNetworkPolicy c", "spec.ingress", "must have at most 25 items, got 26"},
		{"CNP 26 egress rules", source.Options{},
			cnpDoc("{tier: Baseline, " + subj + ", egress: " + rules(26, "{name: r%d, action: Accept, to: [{networks: [198.18.0.0/16]}]}") + "}"),
			"ClusterNetworkPolicy c", "spec.egress", "must have at most 25 items, got 26"},
		{"ANP rule name too long", source.Options{},
			anpDoc("{" + subj + ", ingress: [{name: " + strings.Repeat("r", 101) + ", action: Deny, from: [{namespaces: {}}]}]}"),
			"AdminNetworkPolicy a", "spec.ingress[0].name", "must be no more than 100 characters, got 101"},
		{"CNP rule name too long", source.Options{},
			cnpDoc("{tier: Admin, " + subj + ", egress: [{name: " + strings.Repeat("e", 120) + ", action: Deny, to: [{namespaces: {}}]}]}"),
			"ClusterNetworkPolicy c", "spec.egress[0].name", "must be no more than 100 characters, got 120"},

		// Subjects and peers.
		{"ANP subject with namespaces and pods", source.Options{},
			anpDoc("{priority: 1, subject: {namespaces: {}, pods: {namespaceSelector: {}, podSelector: {}}}}"),
			"AdminNetworkPolicy a", "spec.subject", "exactly one of namespaces or pods"},
		{"ANP subject empty", source.Options{}, anpDoc("{priority: 1, subject: {}}"),
			"AdminNetworkPolicy a", "spec.subject", "exactly one of namespaces or pods"},
		{"ANP peer with two fields", source.Options{},
			anpDoc("{" + subj + ", egress: [{action: Deny, to: [{namespaces: {}, networks: [198.18.0.0/16]}]}]}"),
			"AdminNetworkPolicy a", "spec.egress[0].to[0]", "exactly one peer field must be set, got 2"},
		{"ANP peer with no field", source.Options{},
			anpDoc("{" + subj + ", ingress: [{action: Deny, from: [{namespaces: {}}, {}]}]}"),
			"AdminNetworkPolicy a", "spec.ingress[0].from[1]", "exactly one peer field must be set"},
		{"ANP rule without peers", source.Options{},
			anpDoc("{" + subj + ", ingress: [{action: Deny, from: []}]}"),
			"AdminNetworkPolicy a", "spec.ingress[0].from", "at least one peer"},
		{"ANP bad action", source.Options{},
			anpDoc("{" + subj + ", ingress: [{action: Accept, from: [{namespaces: {}}]}]}"),
			"AdminNetworkPolicy a", "spec.ingress[0].action", `unsupported value "Accept"`},
		{"ANP egress namedPort with networks peer", source.Options{},
			anpDoc("{" + subj + ", egress: [{action: Deny, to: [{networks: [198.18.0.0/16]}], ports: [{namedPort: http}]}]}"),
			"AdminNetworkPolicy a", "spec.egress[0].to[0]", "cannot be set with named ports (http)"},
		{"ANP egress namedPort with nodes peer", source.Options{},
			anpDoc("{" + subj + ", egress: [{action: Allow, to: [{pods: {namespaceSelector: {}, podSelector: {}}}, {nodes: {}}], ports: [{namedPort: dns}]}]}"),
			"AdminNetworkPolicy a", "spec.egress[0].to[1]", "named ports"},
		{"CNP destinationNamedPort with networks peer", source.Options{},
			cnpDoc("{tier: Admin, " + subj + ", egress: [{action: Deny, to: [{networks: [198.18.0.0/16]}], protocols: [{destinationNamedPort: http}]}]}"),
			"ClusterNetworkPolicy c", "spec.egress[0].to[0]", "named ports"},
		{"ANP invalid network", source.Options{},
			anpDoc("{" + subj + ", egress: [{action: Deny, to: [{networks: [198.18.0.0/99]}]}]}"),
			"AdminNetworkPolicy a", "spec.egress[0].to[0].networks[0]", "invalid CIDR"},
		{"ANP port with two fields", source.Options{},
			anpDoc("{" + subj + ", ingress: [{action: Deny, from: [{namespaces: {}}], ports: [{portNumber: {port: 80}, namedPort: http}]}]}"),
			"AdminNetworkPolicy a", "spec.ingress[0].ports[0]", "exactly one of portNumber, namedPort or portRange"},
		{"ANP portRange reversed", source.Options{},
			anpDoc("{" + subj + ", ingress: [{action: Deny, from: [{namespaces: {}}], ports: [{portRange: {start: 90, end: 90}}]}]}"),
			"AdminNetworkPolicy a", "spec.ingress[0].ports[0].portRange", "start (90) must be less than end (90)"},

		// BaselineAdminNetworkPolicy.
		{"BANP not named default", source.Options{}, banpDoc("other", "{subject: {namespaces: {}}}"),
			"BaselineAdminNetworkPolicy other", "metadata.name", `metadata.name="default"`},
		{"BANP Pass action", source.Options{},
			banpDoc("default", "{subject: {namespaces: {}}, ingress: [{action: Pass, from: [{namespaces: {}}]}]}"),
			"BaselineAdminNetworkPolicy default", "spec.ingress[0].action", `unsupported value "Pass": supported values: "Allow", "Deny"`},

		// ClusterNetworkPolicy.
		{"CNP tier Middle", source.Options{}, cnpDoc("{tier: Middle, " + subj + "}"),
			"ClusterNetworkPolicy c", "spec.tier", `unsupported value "Middle"`},
		{"CNP Allow instead of Accept", source.Options{},
			cnpDoc("{tier: Admin, " + subj + ", ingress: [{action: Allow, from: [{namespaces: {}}]}]}"),
			"ClusterNetworkPolicy c", "spec.ingress[0].action", `unsupported value "Allow"`},
		{"CNP tcp without destinationPort", source.Options{},
			cnpDoc("{tier: Admin, " + subj + ", ingress: [{action: Deny, from: [{namespaces: {}}], protocols: [{tcp: {}}]}]}"),
			"ClusterNetworkPolicy c", "spec.ingress[0].protocols[0].tcp", "destinationPort"},
		{"CNP range start equals end", source.Options{},
			cnpDoc("{tier: Admin, " + subj + ", ingress: [{action: Deny, from: [{namespaces: {}}], protocols: [{tcp: {destinationPort: {range: {start: 80, end: 80}}}}]}]}"),
			"ClusterNetworkPolicy c", "spec.ingress[0].protocols[0].tcp.destinationPort.range", "start (80) must be less than end (80)"},
		{"CNP range start above end", source.Options{},
			cnpDoc("{tier: Baseline, " + subj + ", egress: [{action: Deny, to: [{namespaces: {}}], protocols: [{udp: {destinationPort: {range: {start: 90, end: 80}}}}]}]}"),
			"ClusterNetworkPolicy c", "spec.egress[0].protocols[0].udp.destinationPort.range", "start (90) must be less than end (80)"},
		{"CNP protocol with two fields", source.Options{},
			cnpDoc("{tier: Admin, " + subj + ", ingress: [{action: Deny, from: [{namespaces: {}}], protocols: [{tcp: {destinationPort: {number: 80}}, udp: {destinationPort: {number: 53}}}]}]}"),
			"ClusterNetworkPolicy c", "spec.ingress[0].protocols[0]", "exactly one of tcp, udp, sctp or destinationNamedPort"},

		// NetworkPolicy.
		{"NP endPort without port", source.Options{}, npDoc("{podSelector: {}, ingress: [{ports: [{endPort: 90}]}]}"),
			"NetworkPolicy x/np", "spec.ingress[0].ports[0].endPort", "may not be specified when port is not specified"},
		{"NP endPort below port", source.Options{}, npDoc("{podSelector: {}, egress: [{ports: [{port: 90, endPort: 80}]}]}"),
			"NetworkPolicy x/np", "spec.egress[0].ports[0].endPort", "must be greater than or equal to port (90), got 80"},
		{"NP named port with endPort", source.Options{}, npDoc("{podSelector: {}, ingress: [{ports: [{port: http, endPort: 80}]}]}"),
			"NetworkPolicy x/np", "spec.ingress[0].ports[0].endPort", `named port ("http")`},
		{"NP invalid CIDR", source.Options{}, npDoc("{podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 198.18.0.0/33}}]}]}"),
			"NetworkPolicy x/np", "spec.ingress[0].from[0].ipBlock.cidr", `invalid CIDR "198.18.0.0/33"`},
		{"NP CIDR not an address", source.Options{}, npDoc("{podSelector: {}, egress: [{to: [{ipBlock: {cidr: everywhere}}]}]}"),
			"NetworkPolicy x/np", "spec.egress[0].to[0].ipBlock.cidr", `invalid CIDR "everywhere"`},
		{"NP except outside cidr", source.Options{},
			npDoc("{podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 198.18.0.0/16, except: [198.19.0.0/24]}}]}]}"),
			"NetworkPolicy x/np", "spec.ingress[0].from[0].ipBlock.except[0]", "must be a strict subset of 198.18.0.0/16"},
		{"NP except equal to cidr", source.Options{},
			npDoc("{podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 198.18.0.0/16, except: [198.18.1.0/24, 198.18.0.0/16]}}]}]}"),
			"NetworkPolicy x/np", "spec.ingress[0].from[0].ipBlock.except[1]", "strict subset"},
		{"NP except of another family", source.Options{},
			npDoc("{podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 0.0.0.0/0, except: [\"fd00::/8\"]}}]}]}"),
			"NetworkPolicy x/np", "spec.ingress[0].from[0].ipBlock.except[0]", "strict subset"},
		{"NP ipBlock with podSelector", source.Options{},
			npDoc("{podSelector: {}, ingress: [{from: [{ipBlock: {cidr: 198.18.0.0/16}, podSelector: {}}]}]}"),
			"NetworkPolicy x/np", "spec.ingress[0].from[0]", "may not specify both ipBlock and another peer"},
		{"NP protocol ICMP", source.Options{}, npDoc("{podSelector: {}, ingress: [{ports: [{protocol: ICMP, port: 80}]}]}"),
			"NetworkPolicy x/np", "spec.ingress[0].ports[0].protocol", `unsupported value "ICMP"`},
		{"NP protocol lower case", source.Options{}, npDoc("{podSelector: {}, ingress: [{ports: [{protocol: tcp, port: 80}]}]}"),
			"NetworkPolicy x/np", "spec.ingress[0].ports[0].protocol", `unsupported value "tcp"`},
		{"ANP protocol ICMP", source.Options{},
			anpDoc("{" + subj + ", ingress: [{action: Deny, from: [{namespaces: {}}], ports: [{portNumber: {protocol: ICMP, port: 1}}]}]}"),
			"AdminNetworkPolicy a", "spec.ingress[0].ports[0].portNumber.protocol", `unsupported value "ICMP"`},
		{"NP port out of range", source.Options{}, npDoc("{podSelector: {}, ingress: [{ports: [{port: 70000}]}]}"),
			"NetworkPolicy x/np", "spec.ingress[0].ports[0].port", "must be between 1 and 65535, got 70000"},
		{"NP policyTypes Sideways", source.Options{}, npDoc("{podSelector: {}, policyTypes: [Ingress, Sideways]}"),
			"NetworkPolicy x/np", "spec.policyTypes[1]", `unsupported value "Sideways"`},
		{"NP invalid selector operator", source.Options{}, npDoc("{podSelector: {matchExpressions: [{key: a, operator: Near}]}}"),
			"NetworkPolicy x/np", "spec.podSelector", "invalid label selector"},
		{"NP In without values", source.Options{},
			npDoc("{podSelector: {}, ingress: [{from: [{namespaceSelector: {matchExpressions: [{key: a, operator: In}]}}]}]}"),
			"NetworkPolicy x/np", "spec.ingress[0].from[0].namespaceSelector", "invalid label selector"},
		{"ANP invalid selector operator in subject", source.Options{},
			anpDoc("{priority: 1, subject: {pods: {namespaceSelector: {}, podSelector: {matchExpressions: [{key: app, operator: Like, values: [a]}]}}}}"),
			"AdminNetworkPolicy a", "spec.subject.pods.podSelector", "invalid label selector"},

		// The KEP-2091 shape.
		{"KEP related Other", source.Options{},
			anpDoc("{" + subj + ", ingress: [{action: Deny, from: [{namespaces: {related: Other}}]}]}"),
			"AdminNetworkPolicy a", "spec.ingress[0].from[0].namespaces.related", `unsupported value "Other"`},
		{"KEP ingress rule with from and to", source.Options{},
			anpDoc("{" + subj + ", ingress: [{action: Deny, from: [{namespaces: {related: Self}}], to: [{namespaces: {related: Self}}]}]}"),
			"AdminNetworkPolicy a", "spec.ingress[0].to", "not allowed in an ingress rule"},
		{"KEP egress rule with from and to", source.Options{},
			anpDoc("{" + subj + ", egress: [{action: Allow, to: [{namespaces: {sameLabels: [t]}}], from: [{namespaces: {sameLabels: [t]}}]}]}"),
			"AdminNetworkPolicy a", "spec.egress[0].from", "not allowed in an egress rule"},
		{"KEP BANP rule with from and to", source.Options{},
			banpDoc("default", "{subject: {namespaces: {}}, ingress: [{action: Deny, from: [{namespaces: {notSameLabels: [t]}}], to: [{namespaces: {notSameLabels: [t]}}]}]}"),
			"BaselineAdminNetworkPolicy default", "spec.ingress[0].to", "not allowed in an ingress rule"},
		{"KEP namespaces with two fields", source.Options{},
			anpDoc("{" + subj + ", ingress: [{action: Deny, from: [{namespaces: {related: Self, sameLabels: [t]}}]}]}"),
			"AdminNetworkPolicy a", "spec.ingress[0].from[0].namespaces", "exactly one of namespaceSelector, sameLabels, notSameLabels or related must be set, got 2"},
		{"KEP empty namespaces (forced shape)", source.Options{ANPShape: source.ShapeKEP},
			anpDoc("{" + subj + ", ingress: [{action: Deny, from: [{namespaces: {}}]}]}"),
			"AdminNetworkPolicy a", "spec.ingress[0].from[0].namespaces", "exactly one of namespaceSelector, sameLabels, notSameLabels or related must be set"},
		{"KEP empty sameLabels", source.Options{ANPShape: source.ShapeKEP},
			anpDoc("{" + subj + ", ingress: [{action: Deny, from: [{pods: {namespaces: {sameLabels: []}, podSelector: {}}}]}]}"),
			"AdminNetworkPolicy a", "spec.ingress[0].from[0].pods.namespaces.sameLabels", "must have at least 1 item"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set, diags := normalize(t, c.doc, c.opts)
			errs := diags.Errors()
			var found *diag.Diagnostic
			for i, d := range errs {
				if d.Field == c.field && strings.Contains(d.Message, c.msg) {
					found = &errs[i]
					break
				}
			}
			if found == nil {
				t.Fatalf("want error at %s containing %q, got:\n%s", c.field, c.msg, listText(diags))
			}
			if want := (diag.Origin{File: validateFile, Doc: 2}); found.Origin != want {
				t.Errorf("origin %+v, want %+v", found.Origin, want)
			}
			if found.Object != c.object {
				t.Errorf("object %q, want %q", found.Object, c.object)
			}
			// An invalid NetworkPolicy is left out; an invalid admin
			// policy is kept in its fail-closed form (admin.go), marked.
			ps := set.Policies()
			if strings.HasPrefix(c.object, "NetworkPolicy ") {
				if len(ps) != 0 {
					t.Errorf("an invalid NetworkPolicy entered the set (%d policies)", len(ps))
				}
			} else if len(ps) != 1 || !ps[0].Invalid {
				t.Errorf("the set holds %d policies, want the invalid admin policy, marked Invalid", len(ps))
			}
		})
	}
}

// TestValidationAccepts checks that valid policies, at the limits, pass with
// no error and enter the set.
func TestValidationAccepts(t *testing.T) {
	const subj = "priority: 1, subject: {namespaces: {}}"
	cases := []struct {
		name, doc string
		opts      source.Options
		tier      policy.Tier
	}{
		{"NP with every peer and port form",
			npDoc("{podSelector: {matchLabels: {app: a}}, policyTypes: [Ingress, Egress], " +
				"ingress: [{from: [{podSelector: {}}, {namespaceSelector: {matchExpressions: [{key: t, operator: Exists}]}}, {ipBlock: {cidr: 198.18.0.0/15, except: [198.18.0.0/16]}}], " +
				"ports: [{port: 80}, {port: http, protocol: TCP}, {protocol: UDP, port: 53}, {port: 8000, endPort: 8000}, {port: 9000, endPort: 9100, protocol: SCTP}, {protocol: UDP}]}], " +
				"egress: [{to: [{ipBlock: {cidr: \"fd00::/8\", except: [\"fd00::/16\"]}}]}, {}]}"),
			source.Options{}, policy.TierNetworkPolicy},
		{"NP default deny", npDoc("{podSelector: {}, policyTypes: [Ingress, Egress]}"), source.Options{}, policy.TierNetworkPolicy},
		{"ANP at the limits",
			anpDoc("{priority: 1000, subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: a}}}}, " +
				"ingress: " + rules(100, "{name: r%d, action: Pass, from: [{namespaces: {matchLabels: {t: x}}}]}") + ", " +
				"egress: [{name: " + strings.Repeat("e", 100) + ", action: Allow, to: [{pods: {namespaceSelector: {}, podSelector: {}}}], ports: [{namedPort: http}, {portRange: {protocol: UDP, start: 1, end: 2}}]}, " +
				"{action: Deny, to: [{nodes: {matchLabels: {zone: a}}}, {networks: [198.18.0.0/15, \"fd00::/8\"]}], ports: [{portNumber: {protocol: SCTP, port: 9}}]}]}"),
			source.Options{}, policy.TierAdmin},
		{"ANP priority 0", anpDoc("{priority: 0, subject: {namespaces: {}}}"), source.Options{}, policy.TierAdmin},
		{"BANP default",
			banpDoc("default", "{subject: {namespaces: {}}, ingress: [{action: Deny, from: [{namespaces: {}}]}], egress: [{action: Allow, to: [{networks: [198.18.0.0/16]}]}]}"),
			source.Options{}, policy.TierBaseline},
		{"CNP Admin at the limits",
			cnpDoc("{tier: Admin, " + subj + ", ingress: " + rules(25, "{name: r%d, action: Accept, from: [{namespaces: {}}], protocols: [{tcp: {destinationPort: {number: 80}}}, {udp: {destinationPort: {range: {start: 1, end: 65535}}}}, {destinationNamedPort: dns}]}") + "}"),
			source.Options{}, policy.TierAdmin},
		{"CNP Baseline with Pass", cnpDoc("{tier: Baseline, " + subj + ", egress: [{action: Pass, to: [{networks: [198.18.0.0/15]}]}]}"),
			source.Options{}, policy.TierBaseline},
		{"KEP ANP",
			anpDoc("{" + subj + ", ingress: [{action: Allow, from: [{namespaces: {related: Self}}, {namespaces: {sameLabels: [t]}}, {pods: {namespaces: {notSameLabels: [t]}, podSelector: {}}}, {namespaces: {namespaceSelector: {}}}]}], " +
				"egress: [{action: Pass, to: [{namespaces: {related: NotSelf}}], ports: [{namedPort: http}]}]}"),
			source.Options{}, policy.TierAdmin},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			set, diags := normalize(t, c.doc, c.opts)
			if err := diags.Err(); err != nil {
				t.Fatalf("unexpected errors:\n%v", err)
			}
			ps := set.Policies()
			if len(ps) != 1 {
				t.Fatalf("set has %d policies, want 1", len(ps))
			}
			if ps[0].Tier != c.tier {
				t.Errorf("tier %v, want %v", ps[0].Tier, c.tier)
			}
			if want := (diag.Origin{File: validateFile, Doc: 2}); ps[0].Origin != want {
				t.Errorf("origin %+v, want %+v", ps[0].Origin, want)
			}
		})
	}
}

func listText(l diag.List) string {
	var b strings.Builder
	for _, d := range l {
		fmt.Fprintf(&b, "  %s [field %q]: %s\n", d.Severity, d.Field, d)
	}
	return b.String()
}
