package policy_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
)

// TestMemoRedoesOnlyChangedObjects: a Memo hands back the very policy it
// made for an object it has seen (same value), normalises a new value of the
// object afresh, keeps the findings of reused objects, and still finds
// duplicates among them.
func TestMemoRedoesOnlyChangedObjects(t *testing.T) {
	dec := &source.Decoder{}
	objs := dec.Decode("p.yaml", []byte(preamble+
		npDoc("{podSelector: {}, ingress: [{ports: [{port: 80}]}]}")+"---\n"+
		anpDoc("{priority: 5, subject: {namespaces: {}}, egress: [{name: r, action: Deny, to: [{networks: [198.18.0.1/24]}]}]}")))
	if err := dec.Diags.Err(); err != nil {
		t.Fatal(err)
	}
	var m policy.Memo
	first, diags := m.Normalize(objs)
	if len(first.NetworkPolicies) != 1 || len(first.Admin) != 1 {
		t.Fatalf("first pass: %d NetworkPolicies, %d admin policies; want 1 and 1", len(first.NetworkPolicies), len(first.Admin))
	}
	firstDiags := lines(diags)
	if want := `p.yaml (document 3): AdminNetworkPolicy a: spec.egress[0].to[0].networks[0]: 198.18.0.1/24 has host bits set; it means 198.18.0.0/24`; firstDiags != want {
		t.Fatalf("first pass findings:\n%s\nwant %q", firstDiags, want)
	}

	again, diags := m.Normalize(objs)
	if again.NetworkPolicies[0] != first.NetworkPolicies[0] || again.Admin[0] != first.Admin[0] {
		t.Error("unchanged objects were normalised again: want the same *Policy values")
	}
	if lines(diags) != firstDiags {
		t.Errorf("findings of reused objects: got %q, want %q", lines(diags), firstDiags)
	}

	// A new value for the NetworkPolicy (as a source decodes a changed
	// object) is normalised again; the admin policy is still reused.
	changed := append([]source.Object(nil), objs...)
	redecoded := (&source.Decoder{}).Decode("p.yaml", []byte(preamble+npDoc("{podSelector: {}, ingress: [{ports: [{port: 8080}]}]}")))
	changed[1] = redecoded[1]
	next, _ := m.Normalize(changed)
	if next.NetworkPolicies[0] == first.NetworkPolicies[0] {
		t.Error("a changed NetworkPolicy kept its old normalisation")
	}
	if got := next.NetworkPolicies[0].Rules[policy.Ingress][0].Ports[0].Range.First; got != 8080 {
		t.Errorf("changed NetworkPolicy: port %d, want 8080", got)
	}
	if next.Admin[0] != first.Admin[0] {
		t.Error("the unchanged admin policy was normalised again")
	}

	// The same object twice is still a duplicate, although both copies
	// come from the memo.
	_, diags = m.Normalize(append(changed, changed[2]))
	if want := `p.yaml (document 3): AdminNetworkPolicy a: metadata.name: declared twice (first at p.yaml (document 3))`; !containsLine(lines(diags), want) {
		t.Errorf("duplicate not reported; findings:\n%s\nwant a line %q", lines(diags), want)
	}
}

func lines(l diag.List) string {
	var out []string
	for _, d := range l {
		out = append(out, d.String())
	}
	return strings.Join(out, "\n")
}

func containsLine(text, line string) bool { return slices.Contains(strings.Split(text, "\n"), line) }

// TestMemoKeepsTheOrder: a policy changed in place takes the old one's
// place; a changed priority moves it, as normalising afresh would.
func TestMemoKeepsTheOrder(t *testing.T) {
	doc := func(name string, priority int, action string) string {
		return "apiVersion: policy.networking.k8s.io/v1alpha1\nkind: AdminNetworkPolicy\nmetadata: {name: " + name + "}\n" +
			"spec: {priority: " + strconv.Itoa(priority) + ", subject: {namespaces: {}}, ingress: [{name: r, action: " + action + ", from: [{namespaces: {}}]}]}\n"
	}
	decode := func(docs ...string) []source.Object {
		dec := &source.Decoder{}
		objs := dec.Decode("p.yaml", []byte(strings.Join(docs, "---\n")))
		if err := dec.Diags.Err(); err != nil {
			t.Fatal(err)
		}
		return objs
	}
	names := func(s *policy.Set) string {
		var out []string
		for _, p := range s.Admin {
			out = append(out, p.Name+":"+fmt.Sprint(p.Rules[policy.Ingress][0].Action))
		}
		return strings.Join(out, " ")
	}
	objs := decode(doc("a", 1, "Allow"), doc("b", 2, "Deny"), doc("c", 3, "Pass"))
	var m policy.Memo
	if got, _ := m.Normalize(objs); names(got) != "a:Allow b:Deny c:Pass" {
		t.Fatalf("first: %s", names(got))
	}
	objs[1] = decode(doc("b", 2, "Allow"))[0]
	if got, _ := m.Normalize(objs); names(got) != "a:Allow b:Allow c:Pass" {
		t.Errorf("b's action changed: %s, want a:Allow b:Allow c:Pass", names(got))
	}
	objs[0] = decode(doc("a", 9, "Allow"))[0]
	if got, _ := m.Normalize(objs); names(got) != "b:Allow c:Pass a:Allow" {
		t.Errorf("a's priority raised to 9: %s, want b:Allow c:Pass a:Allow", names(got))
	}
	objs[2] = decode(doc("c", 3, "Deny"))[0]
	if got, _ := m.Normalize(objs); names(got) != "b:Allow c:Deny a:Allow" {
		t.Errorf("c's action changed after the reorder: %s, want b:Allow c:Deny a:Allow", names(got))
	}
}
