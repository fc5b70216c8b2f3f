package dns

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
)

// Record types the hand-written messages use.
const (
	typeA     = 1
	typeCNAME = 5
	typeAAAA  = 28
	maxName   = 255 // octets of a name on the wire (RFC 1035 2.3.4)
)

// message writes DNS messages for the tests, by hand, byte by byte.
type message struct{ b []byte }

func newResponse(id uint16, answers int) *message {
	m := &message{}
	m.b = binary.BigEndian.AppendUint16(m.b, id)
	m.b = binary.BigEndian.AppendUint16(m.b, 0x8180) // response, recursion desired and available, no error
	m.b = binary.BigEndian.AppendUint16(m.b, 1)      // one question
	m.b = binary.BigEndian.AppendUint16(m.b, uint16(answers))
	m.b = append(m.b, 0, 0, 0, 0) // no authority, no additional
	return m
}

// name writes a name label by label; a label "@N" is a pointer to offset N.
func (m *message) name(labels ...string) *message {
	for _, l := range labels {
		if strings.HasPrefix(l, "@") {
			var off int
			for _, c := range l[1:] {
				off = off*10 + int(c-'0')
			}
			m.b = binary.BigEndian.AppendUint16(m.b, 0xc000|uint16(off))
			return m
		}
		m.b = append(m.b, byte(len(l)))
		m.b = append(m.b, l...)
	}
	m.b = append(m.b, 0)
	return m
}

func (m *message) question(typ uint16) *message {
	m.b = binary.BigEndian.AppendUint16(m.b, typ)
	m.b = binary.BigEndian.AppendUint16(m.b, 1)
	return m
}

// rr writes the fixed part of a record whose owner was just written, and
// its data.
func (m *message) rr(typ uint16, ttl uint32, data []byte) *message {
	m.b = binary.BigEndian.AppendUint16(m.b, typ)
	m.b = binary.BigEndian.AppendUint16(m.b, 1)
	m.b = binary.BigEndian.AppendUint32(m.b, ttl)
	m.b = binary.BigEndian.AppendUint16(m.b, uint16(len(data)))
	m.b = append(m.b, data...)
	return m
}

func labels(s ...string) []byte {
	var b []byte
	for _, l := range s {
		b = append(b, byte(len(l)))
		b = append(b, l...)
	}
	return append(b, 0)
}

// TestParseResponseFollowsCNAME: www.Example.ORG is a CNAME of
// edge.cdn.example, which has an A and an AAAA record; the addresses count
// for the question's name, each for the smaller of its TTL and the
// CNAME's. An unrelated record counts for nothing.
func TestParseResponseFollowsCNAME(t *testing.T) {
	m := newResponse(0xbeef, 4)
	m.name("www", "Example", "ORG").question(typeA) // the question's name is at offset 12
	m.name("@12").rr(typeCNAME, 300, labels("edge", "cdn", "example"))
	edge := len(m.b) - len(labels("edge", "cdn", "example"))
	m.name("@"+itoa(edge)).rr(typeA, 60, []byte{203, 0, 113, 9})
	m.name("@"+itoa(edge)).rr(typeAAAA, 600, netip.MustParseAddr("2001:db8::9").AsSlice())
	m.name("other", "example").rr(typeA, 60, []byte{203, 0, 113, 99})
	a, err := ParseResponse(m.b)
	if err != nil {
		t.Fatal(err)
	}
	want := []Address{{netip.MustParseAddr("203.0.113.9"), 60}, {netip.MustParseAddr("2001:db8::9"), 300}}
	if a.ID != 0xbeef || a.Name != "www.example.org" || !slices.Equal(a.Addrs, want) || a.RCode != 0 {
		t.Errorf("got %+v, want id 0xbeef, www.example.org, %v", a, want)
	}
}

func itoa(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// TestParseResponseRefusesHostileMessages: each malformed message is an
// error, never a panic or a loop.
func TestParseResponseRefusesHostileMessages(t *testing.T) {
	selfPointer := newResponse(1, 0)
	selfPointer.b = append(selfPointer.b, 0xc0, 12) // the question's name points at itself
	forward := newResponse(1, 0)
	forward.b = append(forward.b, 0xc0, 40)
	long := newResponse(1, 0)
	for range 5 {
		long.b = append(long.b, 63)
		long.b = append(long.b, strings.Repeat("a", 63)...)
	}
	long.b = append(long.b, 0, 0, 1, 0, 1)
	overrun := newResponse(1, 1)
	overrun.name("a", "example").question(typeA).name("@12").rr(typeA, 1, []byte{1, 2, 3, 4})
	overrun.b[len(overrun.b)-5] = 200 // rdlength past the end
	query := newResponse(1, 0)
	query.b[2] = 0x01 // a query, not a response
	query.name("a", "example").question(typeA)
	cases := []struct {
		name string
		msg  []byte
		want string
	}{
		{"empty", nil, "header: unpacking header: id: insufficient data for base length type"},
		{"pointer to itself", selfPointer.b, "question: unpacking Question.Name: too many pointers (>10)"},
		{"pointer forward", forward.b, "question: unpacking Question.Name: insufficient data for base length type"},
		{"name too long", long.b, "question: unpacking Question.Name: name too long"},
		{"a query", query.b, ErrNotResponse.Error()},
	}
	for _, c := range cases {
		_, err := ParseResponse(c.msg)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	// A record whose length runs past the end: dnsmessage reads the
	// address, whose four bytes are there, and ignores the length. What
	// is learned is what the message holds, as from a well-formed one.
	if a, err := ParseResponse(overrun.b); err != nil || len(a.Addrs) != 1 || a.Addrs[0].IP != netip.MustParseAddr("1.2.3.4") {
		t.Errorf("data past the end: %+v %v, want the one address", a, err)
	}
	if _, err := ParseResponse(query.b); !errors.Is(err, ErrNotResponse) {
		t.Errorf("a query: %v, want ErrNotResponse", err)
	}
}

// TestParseResponseCNAMELoop: a CNAME chain that loops ends where it meets
// itself, with the addresses found on the way, once each.
func TestParseResponseCNAMELoop(t *testing.T) {
	m := newResponse(7, 3)
	m.name("a", "example").question(typeA)
	m.name("@12").rr(typeCNAME, 30, labels("b", "example"))
	b := len(m.b) - len(labels("b", "example"))
	m.name("@"+itoa(b)).rr(typeCNAME, 30, labels("a", "example"))
	m.name("@12").rr(typeA, 10, []byte{198, 51, 100, 1})
	a, err := ParseResponse(m.b)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Address{{netip.MustParseAddr("198.51.100.1"), 10}}; !slices.Equal(a.Addrs, want) {
		t.Errorf("addresses %v, want %v", a.Addrs, want)
	}
}

// FuzzParseResponse: any bytes give an answer or an error, bounded by the
// message: never a panic, never more addresses than records.
func FuzzParseResponse(f *testing.F) {
	m := newResponse(1, 2)
	m.name("www", "example", "org").question(typeA)
	m.name("@12").rr(typeCNAME, 300, labels("edge", "example"))
	m.name("edge", "example").rr(typeA, 60, []byte{203, 0, 113, 9})
	f.Add(m.b)
	f.Add([]byte{0, 1, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0, 0xc0, 12})
	f.Fuzz(func(t *testing.T, msg []byte) {
		a, err := ParseResponse(msg)
		if err != nil {
			return
		}
		if len(a.Addrs) > maxRecords*(maxChain+1) || len(a.Name) > 4*maxName {
			t.Fatalf("answer out of bounds: %d addresses, name of %d", len(a.Addrs), len(a.Name))
		}
	})
}

// TestTruncatedAndQueryAgain: a truncated answer says so, and QueryAgain
// asks its question again (the resolver's TCP retry), with the new id.
func TestTruncatedAndQueryAgain(t *testing.T) {
	m := newResponse(9, 0)
	m.b[2] |= 0x02 // TC
	m.name("big", "Example", "org").question(typeAAAA)
	a, err := ParseResponse(m.b)
	if err != nil || !a.Truncated || a.Name != "big.example.org" || len(a.Addrs) != 0 {
		t.Fatalf("%+v %v, want a truncated answer for big.example.org with no address", a, err)
	}
	q, err := QueryAgain(m.b, 0x1234)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0, // id, RD, one question
		3, 'b', 'i', 'g', 7, 'E', 'x', 'a', 'm', 'p', 'l', 'e', 3, 'o', 'r', 'g', 0, 0, 28, 0, 1}
	if !slices.Equal(q, want) {
		t.Errorf("query\n%v\nwant\n%v", q, want)
	}
}

// TestTCPFraming: a message written as DNS over TCP frames it reads back
// whole; a frame cut short is an error.
func TestTCPFraming(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTCP(&b, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if got := b.Bytes(); !slices.Equal(got, []byte{0, 3, 1, 2, 3}) {
		t.Errorf("frame %v, want 0 3 1 2 3", got)
	}
	if msg, err := ReadTCP(&b); err != nil || !slices.Equal(msg, []byte{1, 2, 3}) {
		t.Errorf("read %v %v", msg, err)
	}
	if _, err := ReadTCP(bytes.NewReader([]byte{0, 5, 1})); err == nil {
		t.Error("a frame cut short read without an error")
	}
}
