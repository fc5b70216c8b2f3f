package audit

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/dataplane/nflog"
	"github.com/netpol/netpol/internal/policy"
)

var (
	denyY = &compile.Audit{ID: "0a0a0a0a0a0a", Verdict: compile.VerdictDeny, Direction: "ingress", Tier: "Admin",
		Policy: &policy.Ref{Kind: "AdminNetworkPolicy", Name: "deny-y"}, Rule: "deny-from-y"}
	isolated = &compile.Audit{ID: "0b0b0b0b0b0b", Verdict: compile.VerdictDeny, Direction: "ingress", Tier: "NetworkPolicy",
		IsolatedBy: []policy.Ref{{Kind: "NetworkPolicy", Namespace: "x", Name: "only-80"}}}
	src = netip.MustParseAddr("198.18.0.2")
	dst = netip.MustParseAddr("198.18.1.3")
)

// clock is a fake clock that tests move by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func pkt(prefix string, port uint16) nflog.Packet {
	return nflog.Packet{Prefix: prefix, Src: src, Dst: dst, Proto: 6, SrcPort: 40000, DstPort: port}
}

func newTestLogger(opts Options) (*Logger, *bytes.Buffer, *clock) {
	var out bytes.Buffer
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	opts.Now = c.now
	l := New(&out, opts)
	l.Update(map[string]*compile.Audit{denyY.ID: denyY, isolated.ID: isolated}, func(ip netip.Addr) string {
		return map[netip.Addr]string{src: "y/client", dst: "x/server"}[ip]
	})
	return l, &out, c
}

func TestLine(t *testing.T) {
	l, out, _ := newTestLogger(Options{})
	for _, p := range []nflog.Packet{pkt("np:0a0a0a0a0a0a:", 80), pkt("np:0b0b0b0b0b0b:", 81),
		pkt("np:ffffffffffff:", 82), pkt("other", 83)} {
		if err := l.Log(p); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"time":"2026-01-02T03:04:05Z","verdict":"deny","direction":"ingress","src":{"pod":"y/client","ip":"198.18.0.2"},"dst":{"pod":"x/server","ip":"198.18.1.3"},"protocol":"TCP","port":80,"tier":"Admin","policy":{"kind":"AdminNetworkPolicy","name":"deny-y"},"rule":"deny-from-y"}
{"time":"2026-01-02T03:04:05Z","verdict":"deny","direction":"ingress","src":{"pod":"y/client","ip":"198.18.0.2"},"dst":{"pod":"x/server","ip":"198.18.1.3"},"protocol":"TCP","port":81,"tier":"NetworkPolicy","isolatedBy":[{"kind":"NetworkPolicy","namespace":"x","name":"only-80"}]}
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	if l.Unknown() != 2 {
		t.Errorf("unknown prefixes: got %d, want 2", l.Unknown())
	}
}

// TestDedupe: repeats of one attempt within the window are folded; the
// next line after the window counts them.
func TestDedupe(t *testing.T) {
	l, out, c := newTestLogger(Options{Window: 10 * time.Second})
	steps := []struct {
		after time.Duration
		port  uint16
	}{
		{0, 80},
		{time.Second, 80},     // repeat
		{time.Second, 80},     // repeat
		{time.Second, 81},     // another port: another attempt
		{8 * time.Second, 80}, // 11s after the first line: written, 2 repeats
		{time.Second, 80},     // repeat of the new line
	}
	for _, s := range steps {
		c.add(s.after)
		if err := l.Log(pkt("np:0a0a0a0a0a0a:", s.port)); err != nil {
			t.Fatal(err)
		}
	}
	got := summaries(out.String())
	want := []string{"80 +0", "81 +0", "80 +2"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("lines %v, want %v", got, want)
	}
}

// TestRateLimit: at most Rate lines a second; the next line written counts
// the ones dropped.
func TestRateLimit(t *testing.T) {
	l, out, c := newTestLogger(Options{Rate: 2})
	for port := uint16(1); port <= 5; port++ { // 5 attempts at once: 2 written
		if err := l.Log(pkt("np:0a0a0a0a0a0a:", port)); err != nil {
			t.Fatal(err)
		}
	}
	c.add(500 * time.Millisecond) // one token back
	if err := l.Log(pkt("np:0a0a0a0a0a0a:", 6)); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(summaries(out.String()), ",")
	if want := "1 +0,2 +0,6 +0 dropped 3"; got != want {
		t.Errorf("lines %q, want %q", got, want)
	}
}

// summaries reads "port +repeats [dropped N]" of each line.
func summaries(s string) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		var l Line
		if err := jsonUnmarshal(line, &l); err != nil {
			return []string{err.Error()}
		}
		sum := itoa(int(l.Port)) + " +" + itoa(l.Repeats)
		if l.RateLimited > 0 {
			sum += " dropped " + itoa(l.RateLimited)
		}
		out = append(out, sum)
	}
	return out
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
func itoa(n int) string                   { return strconv.Itoa(n) }

// TestLineNamesTheDomain: an egress line to an address that DNS answers
// taught names the domains it stood for; an ingress line, or an address
// no answer taught, names none.
func TestLineNamesTheDomain(t *testing.T) {
	allowNames := &compile.Audit{ID: "0c0c0c0c0c0c", Verdict: compile.VerdictAllow, Direction: "egress", Tier: "Admin",
		Policy: &policy.Ref{Kind: "AdminNetworkPolicy", Name: "allowlist"}, Rule: "names"}
	names := map[netip.Addr][]string{dst: {"api.allowed.test", "www.allowed.test"}}
	l, out, _ := newTestLogger(Options{NamesOf: func(a netip.Addr) []string { return names[a] }})
	l.Update(map[string]*compile.Audit{allowNames.ID: allowNames, denyY.ID: denyY}, func(netip.Addr) string { return "" })
	for _, p := range []nflog.Packet{pkt("np:0c0c0c0c0c0c:", 443), pkt("np:0a0a0a0a0a0a:", 80),
		{Prefix: "np:0c0c0c0c0c0c:", Src: src, Dst: netip.MustParseAddr("198.18.9.9"), Proto: 6, DstPort: 443}} {
		if err := l.Log(p); err != nil {
			t.Fatal(err)
		}
	}
	want := `{"time":"2026-01-02T03:04:05Z","verdict":"allow","direction":"egress","src":{"ip":"198.18.0.2"},"dst":{"ip":"198.18.1.3","names":["api.allowed.test","www.allowed.test"]},"protocol":"TCP","port":443,"tier":"Admin","policy":{"kind":"AdminNetworkPolicy","name":"allowlist"},"rule":"names"}
{"time":"2026-01-02T03:04:05Z","verdict":"deny","direction":"ingress","src":{"ip":"198.18.0.2"},"dst":{"ip":"198.18.1.3"},"protocol":"TCP","port":80,"tier":"Admin","policy":{"kind":"AdminNetworkPolicy","name":"deny-y"},"rule":"deny-from-y"}
{"time":"2026-01-02T03:04:05Z","verdict":"allow","direction":"egress","src":{"ip":"198.18.0.2"},"dst":{"ip":"198.18.9.9"},"protocol":"TCP","port":443,"tier":"Admin","policy":{"kind":"AdminNetworkPolicy","name":"allowlist"},"rule":"names"}
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
