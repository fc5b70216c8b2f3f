package lab_test

import (
	"encoding/binary"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/netpol/netpol/internal/lab"
)

// TestLabAdversarialSpoofIntoEstablishedFlow: the client (NET_RAW, egress
// denying everything) forges a datagram with the source of a live flow of
// another pod of its node, one the server has answered: conntrack calls
// the forged packet established, so a source check that runs after the
// "established" accept never sees it. It must not arrive. The other pod's
// own datagram on the same flow shows that the flow is live.
func TestLabAdversarialSpoofIntoEstablishedFlow(t *testing.T) {
	requireLab(t)
	l := upLab(t, labName("est"), packetLab+clientEgressDenied)
	client, other, server := labPod(t, l, "app/client"), labPod(t, l, "app/other"), labPod(t, l, "app/server")
	const sport, dport = 5353, 6000
	var srv, oth net.PacketConn
	if err := l.InPod(server, func() (err error) { srv, err = net.ListenPacket("udp4", ":"+strconv.Itoa(dport)); return err }); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := l.InPod(other, func() (err error) { oth, err = net.ListenPacket("udp4", ":"+strconv.Itoa(sport)); return err }); err != nil {
		t.Fatal(err)
	}
	defer oth.Close()
	to := &net.UDPAddr{IP: server.IP.AsSlice(), Port: dport}
	receive := func() string {
		buf := make([]byte, 64)
		_ = srv.SetReadDeadline(time.Now().Add(lab.ProbeTimeout))
		n, from, err := srv.ReadFrom(buf)
		if err != nil {
			return ""
		}
		if _, err := srv.WriteTo([]byte("reply"), from); err != nil { // the flow is established both ways
			t.Fatal(err)
		}
		return string(buf[:n])
	}
	if _, err := oth.WriteTo([]byte("hello"), to); err != nil {
		t.Fatal(err)
	}
	if got := receive(); got != "hello" {
		t.Fatalf("other's own datagram: got %q: the flow is not live, the probe is broken", got)
	}
	// The reply reached other: conntrack holds the flow as established.
	buf := make([]byte, 64)
	_ = oth.SetReadDeadline(time.Now().Add(lab.ProbeTimeout))
	if n, _, err := oth.ReadFrom(buf); err != nil || string(buf[:n]) != "reply" {
		t.Fatalf("other got no reply (%q, %v): the probe is broken", buf[:n], err)
	}
	sendUDPAs(t, l, client, other.IP, sport, server.IP, dport, []byte("forged"))
	if got := receive(); got == "forged" {
		t.Errorf("the client's datagram forged as %s:%d arrived at the server: an established flow skipped the source check", other.IP, sport)
	}
	if _, err := oth.WriteTo([]byte("again"), to); err != nil {
		t.Fatal(err)
	}
	if got := receive(); got != "again" {
		t.Errorf("other's own datagram after the forgery: got %q, want it delivered", got)
	}
}

// sendUDPAs sends one UDP datagram from pod from's namespace with the
// IPv4 source src:sport (raw, IP_HDRINCL).
func sendUDPAs(t *testing.T, l *lab.Lab, from lab.Pod, src netip.Addr, sport uint16, dst netip.Addr, dport uint16, payload []byte) {
	t.Helper()
	var tx net.PacketConn
	if err := l.InPod(from, func() (err error) { tx, err = net.ListenPacket("ip4:udp", "0.0.0.0"); return err }); err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	raw, err := ipv4.NewRawConn(tx)
	if err != nil {
		t.Fatal(err)
	}
	dgram := make([]byte, 8+len(payload))
	binary.BigEndian.PutUint16(dgram[0:], sport)
	binary.BigEndian.PutUint16(dgram[2:], dport)
	binary.BigEndian.PutUint16(dgram[4:], uint16(len(dgram)))
	copy(dgram[8:], payload)
	pseudo := append(append(append([]byte{}, src.AsSlice()...), dst.AsSlice()...), 0, 17, byte(len(dgram)>>8), byte(len(dgram)))
	binary.BigEndian.PutUint16(dgram[6:], checksum(append(pseudo, dgram...)))
	h := &ipv4.Header{Version: 4, Len: ipv4.HeaderLen, TotalLen: ipv4.HeaderLen + len(dgram), TTL: 64, Protocol: 17,
		Src: src.AsSlice(), Dst: dst.AsSlice()}
	if err := raw.WriteTo(h, dgram, nil); err != nil {
		t.Fatalf("sending a datagram from %s as %s: %v", from.Key, src, err)
	}
}
