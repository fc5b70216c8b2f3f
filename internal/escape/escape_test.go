package escape

import "testing"

func TestAdversarialControls(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"deny-all allow-dns", "deny-all allow-dns"},
		{"héllo 世界", "héllo 世界"},
		{"a\nb\r\tc", `a\nb\r\tc`},
		{"\x1b[2J\x07\x7f", `\x1b[2J\a\x7f`},
		{"\u0085\u009b", `\u0085\u009b`},
		{"evil\u202egnp.exe", `evil\u202egnp.exe`},
		{"a\u200bb\u2028c", `a\u200bb\u2028c`},
		{"\xff\xfeok", `\xff\xfeok`},
	} {
		if got := Controls(c.in); got != c.want {
			t.Errorf("Controls(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestAdversarialMarkdown(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"blue-web/frontend-0 80/tcp", "blue-web/frontend-0 80/tcp"},
		{"x\n<!-- hidden", `x\\n&lt;!-- hidden`}, // renders as x\n<!-- hidden
		{"a|b", `a\|b`},
		{"**bold** _it_ `code` [l](u) ~s~", `\*\*bold\*\* \_it\_ \` + "`" + `code\` + "`" + ` \[l\](u) \~s\~`},
		{"@org/team fixes #12 & more", "&#64;org/team fixes &#35;12 &amp; more"},
		{`back\slash`, `back\\slash`},
		{"<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;"},
	} {
		if got := Markdown(c.in); got != c.want {
			t.Errorf("Markdown(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
