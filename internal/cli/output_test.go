package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestJSONIsNotHTMLEscaped: JSON answers are read by people and jq, not
// pasted into HTML, so "->" stays "->" rather than "-\u003e" (encoding/json's
// default escapes <, > and &). Each command below wrote \u003e on the
// examples before.
func TestJSONIsNotHTMLEscaped(t *testing.T) {
	for _, args := range [][]string{
		{"lint", "-f", "../../examples/lint", "-o", "json"},
		{"suggest", "-f", "../../examples/tenants", "--flows", "../../examples/suggest/flows.csv", "-o", "json"},
	} {
		code, out, stderr := run(t, "", args...)
		if code > 1 { // lint exits 1 on findings
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if !json.Valid([]byte(out)) {
			t.Errorf("%v: not JSON:\n%s", args, out)
		}
		for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
			if strings.Contains(out, esc) {
				t.Errorf("%v writes %s", args, esc)
			}
		}
		if !strings.Contains(out, " -> ") {
			t.Errorf("%v: no flow spelt with ->, so the check says nothing", args)
		}
	}
}
