package dnsproxy

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/dataplane"
)

// answer builds a DNS response to a query for name: each record is
// "A addr ttl", "AAAA addr ttl" or "CNAME owner target ttl"; addresses
// belong to the last CNAME's target, or to name.
func answer(t testing.TB, name string, records ...string) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, Response: true, Authoritative: true})
	b.EnableCompression()
	q := dnsmessage.MustNewName(name + ".")
	if err := b.StartQuestions(); err != nil {
		t.Fatal(err)
	}
	if err := b.Question(dnsmessage.Question{Name: q, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET}); err != nil {
		t.Fatal(err)
	}
	if err := b.StartAnswers(); err != nil {
		t.Fatal(err)
	}
	owner := q
	for _, r := range records {
		f := strings.Fields(r)
		var ttl uint32
		fmt.Sscan(f[len(f)-1], &ttl)
		h := dnsmessage.ResourceHeader{Name: owner, Class: dnsmessage.ClassINET, TTL: ttl}
		var err error
		switch f[0] {
		case "A":
			err = b.AResource(h, dnsmessage.AResource{A: netip.MustParseAddr(f[1]).As4()})
		case "AAAA":
			err = b.AAAAResource(h, dnsmessage.AAAAResource{AAAA: netip.MustParseAddr(f[1]).As16()})
		case "CNAME":
			h.Name, owner = dnsmessage.MustNewName(f[1]+"."), dnsmessage.MustNewName(f[2]+".")
			err = b.CNAMEResource(h, dnsmessage.CNAMEResource{CNAME: owner})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	msg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// recorder is a kernel stand-in: it keeps what the learner writes.
type recorder struct {
	writes [][]string
	fail   error
}

func (r *recorder) write(elems []dataplane.Element) error {
	if r.fail != nil {
		return r.fail
	}
	var w []string
	for _, e := range elems {
		w = append(w, fmt.Sprintf("%s %s %s", e.Set, e.Prefix.Addr(), e.Timeout))
	}
	r.writes = append(r.writes, w)
	return nil
}

var sets = []*compile.DomainSet{
	{Name: "d-api", Patterns: []string{"api.example.com"}},
	{Name: "d-wild", Patterns: []string{"*.allowed.test", "Other.Test."}},
}

func TestLearnerWritesTheAnswersAddressesIntoTheSetsThatNameThem(t *testing.T) {
	r := &recorder{}
	l := newLearner(Limits{MinTTL: 30 * time.Second, MaxTTL: time.Hour, MaxAddresses: 100}, r.write)
	l.setTargets(sets, nil)
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }

	steps := []struct {
		name string
		msg  []byte
		want []string // one write, or none
	}{
		{"exact name, both families, TTLs clamped to [30s, 1h]",
			answer(t, "api.example.com", "A 198.18.7.1 10", "AAAA fd00::7 7200"),
			[]string{"d-api-4 198.18.7.1 30s", "d-api-6 fd00::7 1h0m0s"}},
		{"a wildcard's subdomain, deeper too",
			answer(t, "a.b.allowed.test", "A 198.18.7.2 300"),
			[]string{"d-wild-4 198.18.7.2 5m0s"}},
		{"the wildcard's own name is not one of its subdomains",
			answer(t, "allowed.test", "A 198.18.7.3 300"), nil},
		{"a name no rule mentions teaches nothing",
			answer(t, "api.example.org", "A 198.18.7.4 300"), nil},
		{"case and the root's dot do not matter, on either side",
			answer(t, "OTHER.test", "A 198.18.7.5 60"),
			[]string{"d-wild-4 198.18.7.5 1m0s"}},
		{"through a CNAME chain the final addresses count for the asked name, with the chain's smallest TTL",
			answer(t, "x.allowed.test", "CNAME x.allowed.test edge.cdn.test 120", "CNAME edge.cdn.test pop.cdn.test 600", "A 198.18.7.6 900"),
			[]string{"d-wild-4 198.18.7.6 2m0s"}},
		{"an alias on the way is not the asked name",
			answer(t, "cdn.other.org", "CNAME cdn.other.org api.example.com 600", "A 198.18.7.7 600"), nil},
	}
	for _, s := range steps {
		before := len(r.writes)
		if _, _, err := l.learn(s.msg, asked); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		var got []string
		if len(r.writes) > before {
			got = r.writes[len(r.writes)-1]
		}
		if !slices.Equal(got, s.want) {
			t.Errorf("%s: wrote %q, want %q", s.name, got, s.want)
		}
	}
	if st := l.Stats(); st.Answers != 7 || st.Learned != 5 || st.Addresses != 5 || st.Unreadable != 0 || st.Names != 3 {
		t.Errorf("stats %+v, want 7 answers, 5 learned, 5 addresses, 3 names", st)
	}
	if got := l.NamesOf(netip.MustParseAddr("198.18.7.1")); !slices.Equal(got, []string{"api.example.com"}) {
		t.Errorf("names of 198.18.7.1: %q, want api.example.com", got)
	}
	if got := l.NamesOf(netip.MustParseAddr("198.18.7.6")); !slices.Equal(got, []string{"x.allowed.test"}) {
		t.Errorf("names of 198.18.7.6: %q, want x.allowed.test (the asked name, not the CNAMEs')", got)
	}
	// Time passes: the 30 s address expired (the kernel removed it), the
	// others have not.
	now = now.Add(45 * time.Second)
	if st := l.Stats(); st.Addresses != 4 || st.Expired != 1 {
		t.Errorf("after 45s: %+v, want 4 addresses, 1 expired", st)
	}
	if got := l.NamesOf(netip.MustParseAddr("198.18.7.1")); got != nil {
		t.Errorf("names of 198.18.7.1 after it expired: %q, want none", got)
	}
}

func TestLearnerCapsWhatItLearns(t *testing.T) {
	r := &recorder{}
	l := newLearner(Limits{MinTTL: time.Minute, MaxTTL: time.Hour, MaxAddresses: 3}, r.write)
	l.setTargets(sets, nil)
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	l.learn(answer(t, "a.allowed.test", "A 198.18.8.1 60", "A 198.18.8.2 60"), asked)
	// Two more addresses than the cap leaves room for; the known one is
	// refreshed all the same.
	l.learn(answer(t, "b.allowed.test", "A 198.18.8.2 600", "A 198.18.8.3 60", "A 198.18.8.4 60"), asked)
	want := [][]string{
		{"d-wild-4 198.18.8.1 1m0s", "d-wild-4 198.18.8.2 1m0s"},
		{"d-wild-4 198.18.8.2 10m0s", "d-wild-4 198.18.8.3 1m0s"},
	}
	if !slices.EqualFunc(r.writes, want, slices.Equal) {
		t.Errorf("writes %q, want %q", r.writes, want)
	}
	if st := l.Stats(); st.CapHits != 1 || st.Addresses != 3 {
		t.Errorf("stats %+v, want 1 cap hit, 3 addresses", st)
	}
	// Once two have expired there is room again.
	now = now.Add(2 * time.Minute)
	l.learn(answer(t, "c.allowed.test", "A 198.18.8.4 60"), asked)
	if got := r.writes[len(r.writes)-1]; !slices.Equal(got, []string{"d-wild-4 198.18.8.4 1m0s"}) {
		t.Errorf("after expiry wrote %q, want 198.18.8.4", got)
	}
}

func TestLearnerForgetsSetsThatAreGoneAndSurvivesBadAnswers(t *testing.T) {
	r := &recorder{}
	l := newLearner(Limits{MinTTL: time.Minute, MaxTTL: time.Hour, MaxAddresses: 10}, r.write)
	l.setTargets(sets, nil)
	l.learn(answer(t, "api.example.com", "A 198.18.9.1 60"), asked)
	l.setTargets(sets[1:], nil) // the rule naming api.example.com was deleted
	if st := l.Stats(); st.Addresses != 0 {
		t.Errorf("after its set went: %d addresses, want 0", st.Addresses)
	}
	if l.learn(answer(t, "api.example.com", "A 198.18.9.1 60"), asked); len(r.writes) != 1 {
		t.Errorf("writes %q: the name of a deleted rule taught again", r.writes)
	}
	if _, _, err := l.learn([]byte{0, 1, 2}, asked); err == nil {
		t.Error("3 bytes read as a response")
	}
	r.fail = errors.New("netlink: no such file or directory")
	l.learn(answer(t, "z.allowed.test", "A 198.18.9.2 60"), asked)
	if st := l.Stats(); st.Unreadable != 1 || st.Errors != 1 || st.Addresses != 0 {
		t.Errorf("stats %+v, want 1 unreadable, 1 error, nothing learned", st)
	}
}
