package nflog

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"
)

// nla builds one netlink attribute by hand (header in host byte order, as
// the kernel sends it), padded to 4 bytes.
func nla(typ uint16, v ...byte) []byte {
	b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(v)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// A TCP SYN 198.18.0.2:40000 -> 198.18.1.3:80 and a UDP datagram
// fd00::2:53000 -> fd00::3:53, as the kernel copies them.
var (
	ipv4TCP = []byte{
		0x45, 0, 0, 60, 0, 1, 0x40, 0, 64, 6, 0, 0, // version/IHL 5, DF, TTL 64, TCP
		198, 18, 0, 2, 198, 18, 1, 3,
		0x9c, 0x40, 0, 80, 0, 0, 0, 1, // ports 40000 -> 80, sequence
	}
	ipv6UDP = []byte{
		0x60, 0, 0, 0, 0, 8, 17, 64, // version 6, payload length 8, UDP, hop limit 64
		0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
		0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3,
		0xcf, 0x08, 0, 53, 0, 8, 0, 0, // ports 53000 -> 53
	}
	// TCP fd00::2:40000 -> fd00::3:443 behind a hop-by-hop header, an
	// authentication header (its length counts 4-byte words), destination
	// options and the first fragment's header: a packet can put these in
	// front of its ports, and the kernel's th dport follows them.
	ipv6Extensions = cat(
		[]byte{0x60, 0, 0, 0, 0, 56, 0, 64}, // payload length 56, next: hop-by-hop
		[]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2},
		[]byte{0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3},
		[]byte{51, 0, 1, 4, 0, 0, 0, 0},             // hop-by-hop, 8 bytes, next: AH
		[]byte{60, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}, // AH, (1+2)*4 = 12 bytes, next: destination options
		[]byte{44, 0, 1, 4, 0, 0, 0, 0},             // destination options, 8 bytes, next: fragment
		[]byte{6, 0, 0, 1, 0, 0, 0, 9},              // fragment offset 0, more fragments, next: TCP
		[]byte{0x9c, 0x40, 0x01, 0xbb, 0, 0, 0, 1},  // ports 40000 -> 443
	)
	// The same behind a later fragment's header: no ports in it.
	ipv6LaterFragment = cat([]byte{0x60, 0, 0, 0, 0, 16, 44, 64}, ipv6Extensions[8:40], // next: fragment
		[]byte{6, 0, 0x05, 0xc9, 0, 0, 0, 9}, // offset 185, next: TCP
		[]byte{1, 2, 3, 4, 5, 6, 7, 8})
	// A second fragment of a UDP datagram: no ports in it.
	ipv4Fragment = []byte{
		0x45, 0, 0, 28, 0, 1, 0, 0xb9, 64, 17, 0, 0, // fragment offset 185
		198, 18, 0, 2, 198, 18, 1, 3,
		1, 2, 3, 4, 5, 6, 7, 8,
	}
)

func TestParse(t *testing.T) {
	ts := cat(binary.BigEndian.AppendUint64(nil, 1767225600), binary.BigEndian.AppendUint64(nil, 250000))
	tests := []struct {
		name string
		body []byte
		want Packet
		err  bool
	}{
		{
			name: "IPv4 TCP with prefix and timestamp",
			body: cat([]byte{2, 0, 0, 7},
				nla(attrPacketHdr, 0x08, 0x00, 1, 0),
				nla(attrPrefix, []byte("np:0a1b2c3d4e5f:\x00")...),
				nla(attrTimestamp, ts...),
				nla(attrPayload, ipv4TCP...)),
			want: Packet{Prefix: "np:0a1b2c3d4e5f:", Time: time.Unix(1767225600, 250000000),
				Src: netip.MustParseAddr("198.18.0.2"), Dst: netip.MustParseAddr("198.18.1.3"), Proto: 6, SrcPort: 40000, DstPort: 80},
		},
		{
			name: "IPv6 UDP from an inet table (family byte of the packet)",
			body: cat([]byte{10, 0, 0, 7}, nla(attrPayload, ipv6UDP...), nla(attrPrefix, []byte("np:x:\x00")...)),
			want: Packet{Prefix: "np:x:", Src: netip.MustParseAddr("fd00::2"), Dst: netip.MustParseAddr("fd00::3"), Proto: 17, SrcPort: 53000, DstPort: 53},
		},
		{
			name: "unknown attributes are skipped; flag bits of the type ignored",
			body: cat([]byte{2, 0, 0, 7}, nla(99, 1, 2, 3), nla(attrPrefix|0x4000, 'a', 0), nla(attrPayload, ipv4TCP...)),
			want: Packet{Prefix: "a", Src: netip.MustParseAddr("198.18.0.2"), Dst: netip.MustParseAddr("198.18.1.3"), Proto: 6, SrcPort: 40000, DstPort: 80},
		},
		{
			name: "a later fragment has no ports",
			body: cat([]byte{2, 0, 0, 7}, nla(attrPayload, ipv4Fragment...)),
			want: Packet{Src: netip.MustParseAddr("198.18.0.2"), Dst: netip.MustParseAddr("198.18.1.3"), Proto: 17},
		},
		{
			name: "AdversarialIPv6ExtensionHeaders: followed to the ports",
			body: cat([]byte{10, 0, 0, 7}, nla(attrPayload, ipv6Extensions...)),
			want: Packet{Src: netip.MustParseAddr("fd00::2"), Dst: netip.MustParseAddr("fd00::3"), Proto: 6, SrcPort: 40000, DstPort: 443},
		},
		{
			name: "AdversarialIPv6ExtensionHeaders: a later fragment has no ports",
			body: cat([]byte{10, 0, 0, 7}, nla(attrPayload, ipv6LaterFragment...)),
			want: Packet{Src: netip.MustParseAddr("fd00::2"), Dst: netip.MustParseAddr("fd00::3"), Proto: 6},
		},
		{
			name: "AdversarialIPv6ExtensionHeaders: a chain cut short has no ports",
			body: cat([]byte{10, 0, 0, 7}, nla(attrPayload, ipv6Extensions[:60]...)),
			want: Packet{Src: netip.MustParseAddr("fd00::2"), Dst: netip.MustParseAddr("fd00::3"), Proto: 60},
		},
		{name: "no nfgenmsg", body: []byte{2, 0}, err: true},
		{name: "no payload", body: cat([]byte{2, 0, 0, 7}, nla(attrPrefix, 'a', 0)), err: true},
		{name: "attribute longer than the message", body: cat([]byte{2, 0, 0, 7}, []byte{200, 0, 9, 0, 1, 2}), err: true},
		{name: "truncated IPv4 header", body: cat([]byte{2, 0, 0, 7}, nla(attrPayload, ipv4TCP[:12]...)), err: true},
		{name: "truncated IPv6 header", body: cat([]byte{10, 0, 0, 7}, nla(attrPayload, ipv6UDP[:30]...)), err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.body)
			if tt.err {
				if err == nil {
					t.Fatalf("want an error, got %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Time.Equal(tt.want.Time) {
				t.Errorf("time %v, want %v", got.Time, tt.want.Time)
			}
			got.Time, tt.want.Time = time.Time{}, time.Time{}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestSplit(t *testing.T) {
	hdr := func(length uint32, typ uint16) []byte {
		b := binary.NativeEndian.AppendUint32(nil, length)
		b = binary.NativeEndian.AppendUint16(b, typ)
		return append(b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) // flags, seq, pid
	}
	two := cat(hdr(20, 0x400), []byte{1, 2, 3, 4}, hdr(17, 0x400), []byte{5}, []byte{0, 0, 0})
	msgs, err := split(two)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || string(msgs[0].body) != "\x01\x02\x03\x04" || string(msgs[1].body) != "\x05" {
		t.Errorf("got %+v", msgs)
	}
	// NLMSG_ERROR with errno -EBUSY (16).
	e := cat(hdr(20, 2), binary.NativeEndian.AppendUint32(nil, uint32(0xfffffff0)))
	if _, err := split(e); err == nil || err.Error() != "device or resource busy" {
		t.Errorf("error message: got %v", err)
	}
	if _, err := split(cat(hdr(99, 0x400), []byte{1, 2, 3, 4})); err == nil {
		t.Error("a length past the datagram: want an error")
	}
}

// TestParsePayload: a reader of payloads gets what follows the UDP
// header, up to the datagram's own length (not what the kernel copied
// past it).
func TestParsePayload(t *testing.T) {
	udp := append(append([]byte(nil), ipv6UDP...), 'd', 'n', 's', 0, 0) // two bytes past the datagram
	udp[5], udp[45] = 11, 11                                            // payload length and UDP length: 8 + "dns"
	p, err := parse(cat([]byte{10, 0, 0, 7}, nla(attrPayload, udp...)), true)
	if err != nil || p.Payload != "dns" {
		t.Errorf("payload %q, %v; want \"dns\"", p.Payload, err)
	}
	if p, _ := Parse(cat([]byte{10, 0, 0, 7}, nla(attrPayload, udp...))); p.Payload != "" {
		t.Errorf("Parse gave a payload %q, want none", p.Payload)
	}
}
