package diag

import "testing"

func TestAdversarialDiagnosticShowsControls(t *testing.T) {
	d := Diagnostic{Severity: Error, Origin: Origin{File: "a\x1b]0;x\a.yaml"}, Object: "AdminNetworkPolicy a\x1b[2J", Field: "spec.egress[0].name", Message: "bad\nline"}
	want := `a\x1b]0;x\a.yaml: AdminNetworkPolicy a\x1b[2J: spec.egress[0].name: bad\nline`
	if got := d.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
