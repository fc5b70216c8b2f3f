package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostileRuleName is an admin rule name the API server stores (the CRDs
// bound only its length): a line break, an HTML comment that would hide
// the rest of a pull-request comment, an escape sequence that clears a
// terminal, and a mention.
const hostileRuleName = "x\n<!-- \x1b[2J\u202e @org/team | *"

// TestAdversarialOutputNames: a rule name reaches diff's Markdown and text
// outputs and explain's text only as the characters it is: nothing that a
// terminal acts on, no raw line break, no HTML.
func TestAdversarialOutputNames(t *testing.T) {
	dir := t.TempDir()
	newDir := filepath.Join(dir, "new")
	if err := os.MkdirAll(newDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"cluster.yaml", "policies.yaml"} {
		b, err := os.ReadFile(filepath.Join("../../examples/diff/new", f))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(string(b), "name: deny-all-ingress", "name: "+yamlQuote(hostileRuleName), 1)
		if err := os.WriteFile(filepath.Join(newDir, f), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{
		{"diff", "../../examples/diff/old", newDir, "--explain", "-o", "md"},
		{"diff", "../../examples/diff/old", newDir, "--explain"},
		{"explain", "-f", newDir, "--from", "shop/web-0", "--to", "monitoring/prometheus-0", "--port", "9090"},
	} {
		code, out, stderr := run(t, "", args...)
		if code > 1 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if !strings.Contains(out, "org/team") {
			t.Fatalf("%v: the output does not name the rule:\n%s", args, out)
		}
		for _, bad := range []string{"\x1b", "\u202e", "x\n"} {
			if strings.Contains(out, bad) {
				t.Errorf("%v: output holds %q:\n%s", args, bad, out)
			}
		}
		if args[len(args)-1] == "md" {
			for _, bad := range []string{"<!--", "@org", " | * "} {
				if strings.Contains(out, bad) {
					t.Errorf("%v: Markdown holds %q:\n%s", args, bad, out)
				}
			}
			if want := `x\\n&lt;!-- \\x1b\[2J\\u202e &#64;org/team \| \*`; !strings.Contains(out, want) {
				t.Errorf("%v: Markdown lacks the escaped name %s:\n%s", args, want, out)
			}
		}
	}
}

func yamlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e':
			b.WriteString(`\u` + hex4(r))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func hex4(r rune) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[r>>12&15], digits[r>>8&15], digits[r>>4&15], digits[r&15]})
}
