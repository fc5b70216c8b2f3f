package nft_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/render/nft"
)

// hostileTexts are names an admin or a tenant may write: every byte from 0
// to 127 and beyond (each alone, where nft's quoting or ours might break),
// a name that is nft syntax after a quote, one longer than an nft comment
// with a multi-byte character across the cut, and invalid UTF-8.
func hostileTexts() []string {
	var all strings.Builder
	for b := 0; b < 256; b++ {
		all.WriteByte(byte(b))
	}
	return []string{
		all.String(),
		`x" ; insert rule inet netpol forward accept ; #`,
		`allow "dns"`,
		"a\nb\r\tc\\\"",
		strings.Repeat("é", 200),
		strings.Repeat("a", 127) + "é",
		"\xff\xfe\x00",
		`%s %q $x @y {z} ; # -- "`,
	}
}

// taint writes text into every name-like field of the IR that reaches the
// kernel as text: the policy refs and rule names of every rule (comments),
// the refs that isolate a table, set keys and domain patterns.
func taint(ir *compile.IR, text string) {
	for _, t := range ir.Tables {
		for i := range t.Rules {
			f := &t.Rules[i].From
			f.Rule, f.Policy.Name, f.Policy.Namespace, f.Policy.Kind, f.Tier = text, text, text, text, text
		}
		for i := range t.IsolatedBy {
			t.IsolatedBy[i].Name, t.IsolatedBy[i].Namespace = text, text
		}
	}
	for _, s := range ir.Sets {
		s.Key = text
	}
	for _, s := range ir.EndpointSets {
		s.Key = text
	}
	for _, s := range ir.DomainSets {
		s.Patterns = []string{text, text}
	}
}

// TestLabAdversarialNamesNeverSyntax: whatever a name holds, the real
// kernel takes the table, the base chains are exactly those of benign
// names, and the rules are the same rules: user text reaches nft only as
// comment characters.
func TestLabAdversarialNamesNeverSyntax(t *testing.T) {
	inNewNetns(t, func(nf knftables.Interface) {
		ctx := context.Background()
		benign := compileYAML(t, cluster+domainPolicy)
		if _, err := nft.New(nf).Sync(ctx, benign); err != nil {
			t.Fatal(err)
		}
		want := withoutComments(listTable(t, nft.TableName))
		for _, text := range hostileTexts() {
			ir := compileYAML(t, cluster+domainPolicy)
			taint(ir, text)
			for _, viaNetlink := range []bool{false, true} {
				r := nft.New(nf)
				if viaNetlink {
					r.WriteElementsWith(dataplane.Elements{Family: unix.NFPROTO_INET, Table: nft.TableName})
				}
				if _, err := r.Sync(ctx, ir); err != nil {
					t.Fatalf("name %q (netlink %v): sync: %v", text, viaNetlink, err)
				}
				if got := withoutComments(listTable(t, nft.TableName)); !slices.Equal(got, want) {
					t.Fatalf("name %q (netlink %v): the kernel holds\n%s\nwant, as with benign names,\n%s", text, viaNetlink, strings.Join(got, "\n\n"), strings.Join(want, "\n\n"))
				}
			}
		}
	})
}

// withoutComments drops what nft lists as a comment, at the end of a rule
// or as an object's comment line.
func withoutComments(blocks []string) []string {
	out := make([]string, len(blocks))
	for i, b := range blocks {
		lines := strings.Split(b, "\n")
		var kept []string
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), "comment \"") {
				continue
			}
			if i := strings.Index(l, ` comment "`); i >= 0 {
				l = l[:i]
			}
			kept = append(kept, l)
		}
		out[i] = strings.Join(kept, "\n")
	}
	slices.Sort(out)
	return out
}

// TestAdversarialCommentsArePlainText: every comment the renderer writes is
// printable ASCII without a quote or a backslash, and fits nft's limit,
// whatever the names held.
func TestAdversarialCommentsArePlainText(t *testing.T) {
	for _, text := range hostileTexts() {
		ir := compileYAML(t, cluster+domainPolicy)
		taint(ir, text)
		fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
		if _, err := nft.New(fake).Sync(context.Background(), ir); err != nil {
			t.Fatalf("name %q: %v", text, err)
		}
		dump := fake.Dump()
		seen := 0
		for _, line := range strings.Split(dump, "\n") {
			i := strings.Index(line, ` comment "`)
			if i < 0 {
				continue
			}
			seen++
			quoted := strings.TrimSuffix(strings.TrimSuffix(line[i+len(` comment `):], " }"), " ;")
			body := strings.TrimSuffix(strings.TrimPrefix(quoted, `"`), `"`)
			if len(body) > knftables.CommentLengthMax {
				t.Errorf("name %q: comment of %d bytes: %s", text, len(body), line)
			}
			for _, c := range []byte(body) {
				if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
					t.Errorf("name %q: comment byte %#x in %s", text, c, line)
					break
				}
			}
		}
		if seen < 5 {
			t.Fatalf("name %q: %d comments in the dump, want the rules' and sets':\n%s", text, seen, dump)
		}
	}
}

// domainPolicy adds admin rules of every kind to cluster: an audited deny,
// a domain allow and a pass, for pod c.
const domainPolicy = auditedANP + `
---
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: names}
spec:
  priority: 20
  subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: c}}}}
  egress:
  - {name: apis, action: Allow, to: [{domainNames: ["*.example.org"]}], ports: [{portNumber: {port: 443, protocol: TCP}}]}
  - {name: onward, action: Pass, to: [{networks: [198.18.9.0/24]}]}
`
