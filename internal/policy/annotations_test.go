package policy_test

import (
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
)

func TestAnnotations(t *testing.T) {
	withAnn := func(doc, ann string) string {
		// Every helper's metadata is a one-line flow mapping ending in "}".
		return strings.Replace(doc, "}\nspec:", ", annotations: {"+ann+"}}\nspec:", 1)
	}
	tests := []struct {
		name       string
		doc        string
		wantAudit  policy.Audit
		wantStaged bool
		wantWarn   string // field of the expected warning
	}{
		{"ANP audit all", withAnn(anpDoc("{priority: 1, subject: {namespaces: {}}}"), `netpol.io/audit: all`), policy.AuditAll, false, ""},
		{"ANP audit true", withAnn(anpDoc("{priority: 1, subject: {namespaces: {}}}"), `netpol.io/audit: "true"`), policy.AuditAll, false, ""},
		{"NP audit deny, staged", withAnn(npDoc("{podSelector: {}}"), `netpol.io/audit: deny, netpol.io/staged: "true"`), policy.AuditDeny, true, ""},
		{"BANP audit allow", withAnn(banpDoc("default", "{subject: {namespaces: {}}}"), `netpol.io/audit: allow`), policy.AuditAllow, false, ""},
		{"CNP staged", withAnn(cnpDoc("{tier: Admin, priority: 1, subject: {namespaces: {}}}"), `netpol.io/staged: "true"`), 0, true, ""},
		{"staged false", withAnn(npDoc("{podSelector: {}}"), `netpol.io/staged: "false"`), 0, false, ""},
		{"unknown audit value", withAnn(npDoc("{podSelector: {}}"), `netpol.io/audit: denied`), 0, false, "metadata.annotations[netpol.io/audit]"},
		{"unknown staged value: enforced", withAnn(npDoc("{podSelector: {}}"), `netpol.io/staged: "yes"`), 0, false, "metadata.annotations[netpol.io/staged]"},
		{"no annotations", npDoc("{podSelector: {}}"), 0, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, diags := normalize(t, tt.doc, source.Options{})
			ps := set.Policies()
			if len(ps) != 1 {
				t.Fatalf("got %d policies (%v), want 1", len(ps), diags)
			}
			if ps[0].Audit != tt.wantAudit || ps[0].Staged != tt.wantStaged {
				t.Errorf("audit %v staged %v, want %v %v", ps[0].Audit, ps[0].Staged, tt.wantAudit, tt.wantStaged)
			}
			var warned string
			for _, d := range diags {
				warned = d.Field
			}
			if len(diags) > 1 || warned != tt.wantWarn {
				t.Errorf("findings %v, want one warning at %q", diags, tt.wantWarn)
			}
			if got := set.HasStaged(); got != tt.wantStaged {
				t.Errorf("HasStaged %v, want %v", got, tt.wantStaged)
			}
			if enforced := len(set.Enforced().Policies()); tt.wantStaged != (enforced == 0) {
				t.Errorf("Enforced holds %d policies, staged %v", enforced, tt.wantStaged)
			}
		})
	}
}

func TestAuditLogs(t *testing.T) {
	tests := []struct {
		a    policy.Audit
		act  policy.Action
		want bool
	}{
		{policy.AuditAll, policy.Allow, true},
		{policy.AuditAll, policy.Deny, true},
		{policy.AuditAll, policy.Pass, false},
		{policy.AuditDeny, policy.Allow, false},
		{policy.AuditDeny, policy.Deny, true},
		{policy.AuditAllow, policy.Allow, true},
		{0, policy.Deny, false},
	}
	for _, tt := range tests {
		if got := tt.a.Logs(tt.act); got != tt.want {
			t.Errorf("Audit(%d).Logs(%v) = %v, want %v", tt.a, tt.act, got, tt.want)
		}
	}
}
