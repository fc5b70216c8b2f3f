// Package escape makes user text safe for one output each: free text that
// an admin or a tenant wrote (an admin policy's rule names; the API server
// stores any characters there) reaches terminals, Markdown pull-request
// comments and logs, and there it must read as the characters it is, never
// move the cursor, clear a screen, forge a line of output, or open an HTML
// comment that hides the rest of a page. It imports nothing of netpol's.
//
// JSON, CSV and XML outputs have encoders of their own (encoding/json,
// encoding/csv, encoding/xml); nft comments have theirs in render/nft.
package escape

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Controls returns s with every character that steers a display instead
// of showing written as a visible Go escape: C0 and C1 controls (line
// breaks and ESC included), DEL, invalid UTF-8, and the format characters
// that reorder or hide text (bidirectional overrides, zero-width joiners).
// Text without them is returned as it is, without allocating.
func Controls(s string) string {
	i := strings.IndexFunc(s, steers)
	if i < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[0])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[0])&15, 16))
		case steers(r):
			q := strconv.QuoteRuneToASCII(r) // 'x' with x escaped
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// steers: characters a terminal or a renderer acts on rather than shows.
func steers(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// Markdown returns s as Markdown text (GitHub's flavour included) that
// renders as the characters of s and stays inside one table cell or list
// item: control characters are escaped as Controls does; '<', '>' and '&'
// become entities, so no HTML and no comment hides what follows; '@' and
// '#' too, so a name mentions nobody and links no issue; and the marks of
// inline Markdown ('\', '`', '*', '_', '[', ']', '~', '|') are
// backslash-escaped. Names as Kubernetes allows them (letters, digits,
// '-', '.', '/') come out unchanged.
func Markdown(s string) string {
	s = Controls(s)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '@':
			b.WriteString("&#64;")
		case '#':
			b.WriteString("&#35;")
		case '\\', '`', '*', '_', '[', ']', '~', '|':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
