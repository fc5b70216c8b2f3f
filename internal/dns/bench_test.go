package dns

import (
	"net/netip"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// BenchmarkParseResponse: an answer through a CNAME to four A and two
// AAAA records, compressed, as CoreDNS writes it. (Session 8's
// hand-written parser took 1.1 µs for it, dnsmessage with the same CNAME
// walk 1.5 µs: BENCHMARKS.md, "Libraries of the field".)
//
//	go test -run '^$' -bench ParseResponse -benchmem ./internal/dns
func BenchmarkParseResponse(b *testing.B) {
	msg := peerAnswer(b)
	for range b.N {
		a, err := ParseResponse(msg)
		if err != nil || len(a.Addrs) != 6 || a.Name != "www.example.org" {
			b.Fatalf("%+v %v", a, err)
		}
	}
}

func peerAnswer(b *testing.B) []byte {
	q := dnsmessage.MustNewName("www.Example.ORG.")
	edge := dnsmessage.MustNewName("edge.cdn.example.")
	bl := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 1, Response: true, RecursionDesired: true, RecursionAvailable: true})
	bl.EnableCompression()
	_ = bl.StartQuestions()
	_ = bl.Question(dnsmessage.Question{Name: q, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
	_ = bl.StartAnswers()
	_ = bl.CNAMEResource(dnsmessage.ResourceHeader{Name: q, Class: dnsmessage.ClassINET, TTL: 300}, dnsmessage.CNAMEResource{CNAME: edge})
	for i := range 4 {
		_ = bl.AResource(dnsmessage.ResourceHeader{Name: edge, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: [4]byte{203, 0, 113, byte(i)}})
	}
	for i := range 2 {
		_ = bl.AAAAResource(dnsmessage.ResourceHeader{Name: edge, Class: dnsmessage.ClassINET, TTL: 60},
			dnsmessage.AAAAResource{AAAA: netip.MustParseAddr("2001:db8::" + string(rune('1'+i))).As16()})
	}
	msg, err := bl.Finish()
	if err != nil {
		b.Fatal(err)
	}
	return msg
}
