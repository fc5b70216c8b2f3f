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

	"github.com/netpol/netpol/internal/dataplane/nflog"
	"github.com/netpol/netpol/internal/dns"
)

// asked stands for an answer the proxy tied to a question.
func asked(dns.Answer) bool { return true }

// TestAdversarialLearnerNeverLearnsClusterOrSpecialAddresses: a name under
// an allowed wildcard may resolve to anything its owner likes; no answer
// teaches a node's, a pod's or a Service's address, nor one of no host.
func TestAdversarialLearnerNeverLearnsClusterOrSpecialAddresses(t *testing.T) {
	r := &recorder{}
	l := newLearner(DefaultLimits, r.write)
	cluster := map[netip.Addr]bool{netip.MustParseAddr("198.19.255.2"): true, netip.MustParseAddr("198.18.1.2"): true,
		netip.MustParseAddr("fd00:198:18:1::2"): true}
	l.setTargets(sets, func(a netip.Addr) bool { return cluster[a] })
	l.learn(answer(t, "x.allowed.test", "A 198.19.255.2 60", "A 198.18.1.2 60", "A 169.254.169.254 60", "A 127.0.0.1 60",
		"A 224.0.0.1 60", "A 0.0.0.0 60", "A 0.1.2.3 60", "A 255.255.255.255 60", "A 240.0.0.1 60", "A 198.18.3.1 60"), asked)
	l.learn(answer(t, "y.allowed.test", "AAAA fd00:198:18:1::2 60", "AAAA fe80::1 60", "AAAA ::1 60", "AAAA ff02::1 60",
		"AAAA :: 60", "AAAA ff01::1 60", "AAAA fd00:198:18:3::1 60"), asked)
	want := [][]string{{"d-wild-4 198.18.3.1 1m0s"}, {"d-wild-6 fd00:198:18:3::1 1m0s"}}
	if !slices.EqualFunc(r.writes, want, slices.Equal) {
		t.Errorf("writes %q, want %q", r.writes, want)
	}
	if st := l.Stats(); st.Never != 15 {
		t.Errorf("stats %+v, want 15 addresses never learned", st)
	}
}

// TestAdversarialLearnerBoundsNamesPerAddress: 100,000 names on one
// address keep MaxNamesPerAddress of them (the audit line's), and names
// past an address's first count toward the node's cap.
func TestAdversarialLearnerBoundsNamesPerAddress(t *testing.T) {
	r := &recorder{}
	l := newLearner(Limits{MinTTL: time.Minute, MaxTTL: time.Hour, MaxAddresses: 100_000, MaxNamesPerAddress: 16}, r.write)
	l.setTargets(sets, nil)
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	for i := range 100_000 {
		l.learn(answer(t, fmt.Sprintf("n%d.allowed.test", i), "A 198.18.3.1 60"), asked)
	}
	if got := l.NamesOf(netip.MustParseAddr("198.18.3.1")); len(got) != 16 {
		t.Errorf("198.18.3.1 has %d names after 100,000 answers, want 16", len(got))
	}
	// A later name, which outlives the kept ones, takes a place.
	now = now.Add(time.Second)
	l.learn(answer(t, "late.allowed.test", "A 198.18.3.1 60"), asked)
	if got := l.NamesOf(netip.MustParseAddr("198.18.3.1")); len(got) != 16 || !slices.Contains(got, "late.allowed.test") {
		t.Errorf("names after a later answer: %d %q, want 16 with late.allowed.test", len(got), got)
	}
	// The cap counts names past the first: with room for 3, one address
	// with two names and one more address fill it.
	r2 := &recorder{}
	small := newLearner(Limits{MinTTL: time.Minute, MaxTTL: time.Hour, MaxAddresses: 3, MaxNamesPerAddress: 16}, r2.write)
	small.setTargets(sets, nil)
	small.learn(answer(t, "a.allowed.test", "A 198.18.8.1 60"), asked)
	small.learn(answer(t, "b.allowed.test", "A 198.18.8.1 60"), asked)
	small.learn(answer(t, "c.allowed.test", "A 198.18.8.2 60"), asked)
	small.learn(answer(t, "d.allowed.test", "A 198.18.8.3 60"), asked)
	if st := small.Stats(); st.Addresses != 2 || st.CapHits != 1 {
		t.Errorf("stats %+v, want 2 addresses and 1 cap hit", st)
	}
}

// queryPacket is the log's packet of a query from client to server.
func queryPacket(t *testing.T, client, server string, id uint16, name string, typ dnsmessage.Type) nflog.Packet {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, RecursionDesired: true})
	_ = b.StartQuestions()
	if err := b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET}); err != nil {
		t.Fatal(err)
	}
	msg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	c := netip.MustParseAddrPort(client)
	return nflog.Packet{Src: c.Addr(), Dst: netip.MustParseAddr(server), Proto: 17, SrcPort: c.Port(), DstPort: 53, Payload: string(msg)}
}

// fakeLog is a query log: what it holds is read by ReadNow, as the
// kernel's socket holds what was logged and not read yet.
type fakeLog struct{ queued []nflog.Packet }

func (f *fakeLog) ReadNow() ([]nflog.Packet, error) {
	ps := f.queued
	f.queued = nil
	return ps, nil
}
func (f *fakeLog) Wait() error { return errors.New("closed") }

// TestAdversarialAnswersMustAnswerAQuery: an answer teaches only when it
// answers a query the pod sent (its address and port, the server, the
// ID, the name and the type) within the window, once; a query still in
// the log socket when its answer comes is read then.
func TestAdversarialAnswersMustAnswerAQuery(t *testing.T) {
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	log := &fakeLog{}
	q := newQueries(log, func() time.Time { return now })
	log.queued = append(log.queued, queryPacket(t, "198.18.1.1:40000", "198.18.0.10", 0x1234, "www.allowed.test.", dnsmessage.TypeA))
	client, server := netip.MustParseAddrPort("198.18.1.1:40000"), netip.MustParseAddr("198.18.0.10")
	ans := func(id uint16, name string, typ uint16) dns.Answer { return dns.Answer{ID: id, Name: name, Type: typ} }
	for _, c := range []struct {
		what   string
		client netip.AddrPort
		server netip.Addr
		a      dns.Answer
	}{
		{"another ID", client, server, ans(0x1235, "www.allowed.test", 1)},
		{"another name", client, server, ans(0x1234, "evil.allowed.test", 1)},
		{"another type", client, server, ans(0x1234, "www.allowed.test", 28)},
		{"another port", netip.MustParseAddrPort("198.18.1.1:40001"), server, ans(0x1234, "www.allowed.test", 1)},
		{"another pod", netip.MustParseAddrPort("198.18.1.2:40000"), server, ans(0x1234, "www.allowed.test", 1)},
		{"another server", client, netip.MustParseAddr("198.18.0.11"), ans(0x1234, "www.allowed.test", 1)},
	} {
		if q.answered(c.client, c.server, c.a) {
			t.Errorf("%s: answered", c.what)
		}
	}
	if !q.answered(client, server, ans(0x1234, "www.allowed.test", 1)) {
		t.Error("the answer to the query: not answered")
	}
	if q.answered(client, server, ans(0x1234, "www.allowed.test", 1)) {
		t.Error("a second answer to the same query: answered")
	}
	log.queued = append(log.queued, queryPacket(t, "198.18.1.1:40002", "198.18.0.10", 7, "late.allowed.test.", dnsmessage.TypeA))
	q.drain()
	now = now.Add(queryWindow + time.Second)
	if q.answered(netip.MustParseAddrPort("198.18.1.1:40002"), server, ans(7, "late.allowed.test", 1)) {
		t.Error("an answer after the window: answered")
	}
	// One pod's flood fills its share, not the node's.
	for i := range maxQueriesPerClient + 10 {
		log.queued = append(log.queued, queryPacket(t, fmt.Sprintf("198.18.1.9:%d", 1024+i), "198.18.0.10", 1, "flood.allowed.test.", dnsmessage.TypeA))
	}
	log.queued = append(log.queued, queryPacket(t, "198.18.1.1:40003", "198.18.0.10", 8, "mine.allowed.test.", dnsmessage.TypeA))
	q.drain()
	if got := q.byClient[netip.MustParseAddr("198.18.1.9")]; got != maxQueriesPerClient {
		t.Errorf("the flooding pod has %d queries kept, want %d", got, maxQueriesPerClient)
	}
	if !q.answered(netip.MustParseAddrPort("198.18.1.1:40003"), server, ans(8, "mine.allowed.test", 1)) {
		t.Error("another pod's query during the flood: not answered")
	}
	if strings.Contains(fmt.Sprint(q.pending), "late.allowed.test") {
		t.Error("the expired query is still kept")
	}
}
