package cli

import (
	"os"
	"path/filepath"
	"strconv"
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

// scanCluster: web and db, and a pod whose address a record names from
// before it was a pod's.
const scanCluster = `
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: x, labels: {app: web}}
spec: {containers: [{name: c}]}
status: {podIP: 198.18.0.1}
---
apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: x, labels: {app: db}}
spec: {containers: [{name: c, ports: [{containerPort: 5432}]}]}
status: {podIP: 198.18.0.2}
---
apiVersion: v1
kind: Pod
metadata: {name: late-0, namespace: x, labels: {app: late}}
spec: {containers: [{name: c}]}
status: {podIP: 198.18.0.3}
`

// TestAdversarialSuggestFanOut: a record where one source scanned many
// ports of a destination, and an address that was no pod's when it was
// recorded but is one now. suggest writes web -> db on 5432 only: the
// scan is reported and left out, and the address is not credited to the
// pod that has it now.
func TestAdversarialSuggestFanOut(t *testing.T) {
	var rec strings.Builder
	line := func(from, to, port string) {
		rec.WriteString(`{"from":"` + from + `","to":"` + to + `","port":"` + port + `","verdict":"allow","count":1,"first":"2026-11-25T01:00:00Z","last":"2026-11-25T01:00:00Z"}` + "\n")
	}
	line("x/web-0", "x/db-0", "5432/tcp")
	for p := 1; p <= 100; p++ {
		line("x/db-0", "x/web-0", strconv.Itoa(p)+"/tcp")
	}
	line("198.18.0.3", "x/db-0", "5432/tcp")
	flows := filepath.Join(t.TempDir(), "record.jsonl")
	if err := os.WriteFile(flows, []byte(rec.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, scanCluster, "suggest", "-f", "-", "--flows", flows, "--enforce")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"warning: x/db-0 -> x/web-0: 100 ports (more than --fan-out-ports 16): a scan, not an application's traffic; left out (--keep-fan-out keeps it)",
		"warning: 198.18.0.3 -> x/db-0 5432/tcp: recorded when 198.18.0.3 was no pod's, now pod x/late-0's; left out",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(out, "port: 1\n") || strings.Contains(out, "port: 99\n") || strings.Contains(out, "app: late") {
		t.Errorf("the suggestion allows the scan or the late pod:\n%s", out)
	}
	if !strings.Contains(out, "port: 5432") {
		t.Errorf("the suggestion lacks web -> db 5432:\n%s", out)
	}
	code, out, stderr = run(t, scanCluster, "suggest", "-f", "-", "--flows", flows, "--enforce", "--keep-fan-out")
	if code != 0 || !strings.Contains(out, "port: 99\n") {
		t.Errorf("--keep-fan-out: exit %d, the scan's ports not allowed:\n%s\n%s", code, out, stderr)
	}
}
