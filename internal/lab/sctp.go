package lab

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net"
	"net/netip"
	"time"
)

// This kernel has no SCTP sockets, but SCTP is only an IP protocol number
// to nftables and conntrack: a raw IP socket can send an SCTP INIT and
// another can see whether it arrived. That is all a reachability probe
// needs, so SCTP flows are tested with real packets like TCP and UDP.

const protoSCTP = 132

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sctpInit builds an SCTP packet holding one INIT chunk (RFC 9260 3.3.2)
// with the CRC32c checksum conntrack verifies.
func sctpInit(srcPort, dstPort uint16, tag uint32) []byte {
	p := make([]byte, 12+20)
	binary.BigEndian.PutUint16(p[0:], srcPort)
	binary.BigEndian.PutUint16(p[2:], dstPort)
	// verification tag 0 (INIT), checksum at 8..12 filled last
	c := p[12:]
	c[0] = 1                              // INIT
	binary.BigEndian.PutUint16(c[2:], 20) // chunk length
	binary.BigEndian.PutUint32(c[4:], tag)
	binary.BigEndian.PutUint32(c[8:], 65535) // a_rwnd
	binary.BigEndian.PutUint16(c[12:], 1)    // outbound streams
	binary.BigEndian.PutUint16(c[14:], 1)    // inbound streams
	binary.BigEndian.PutUint32(c[16:], tag)  // initial TSN
	binary.LittleEndian.PutUint32(p[8:], crc32.Checksum(p, castagnoli))
	return p
}

// probeSCTP sends an INIT from src to dst:port and reports whether it
// reached the destination pod's namespace before ProbeTimeout.
func (l *Lab) probeSCTP(src Pod, dst netip.Addr, port uint16) (bool, error) {
	var dstPod *Pod
	for i := range l.Pods {
		if l.Pods[i].IP == dst || l.Pods[i].IP6 == dst {
			dstPod = &l.Pods[i]
		}
	}
	if dstPod == nil {
		return false, fmt.Errorf("SCTP probes go to lab pods only; %s is none", dst)
	}
	srcIP, ok := src.Addr(dst)
	if !ok {
		return false, fmt.Errorf("pod %s has no address of the family of %s", src.Key, dst)
	}
	network := fmt.Sprintf("ip4:%d", protoSCTP)
	if dst.Is6() {
		network = fmt.Sprintf("ip6:%d", protoSCTP)
	}
	var rx, tx *net.IPConn
	err := inNamespace(dstPod.Namespace, func() (err error) {
		rx, err = net.ListenIP(network, &net.IPAddr{IP: dst.AsSlice()})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("SCTP receiver in %s: %w", dstPod.Key, err)
	}
	defer rx.Close()
	err = inNamespace(src.Namespace, func() (err error) {
		tx, err = net.DialIP(network, &net.IPAddr{IP: srcIP.AsSlice()}, &net.IPAddr{IP: dst.AsSlice()})
		return err
	})
	if err != nil {
		return false, fmt.Errorf("SCTP sender in %s: %w", src.Key, err)
	}
	defer tx.Close()

	tag := rand.Uint32() | 1 // never 0: an INIT with tag 0 is invalid
	srcPort := uint16(32768 + rand.IntN(28000))
	if _, err := tx.Write(sctpInit(srcPort, port, tag)); err != nil {
		return false, err
	}
	deadline := time.Now().Add(ProbeTimeout)
	_ = rx.SetReadDeadline(deadline)
	buf := make([]byte, 1500)
	for {
		n, _, err := rx.ReadFrom(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return false, nil
			}
			return false, err
		}
		// Other probes' INITs arrive here too: ours carries our tag.
		if n >= 32 && binary.BigEndian.Uint16(buf[2:]) == port && buf[12] == 1 && binary.BigEndian.Uint32(buf[16:]) == tag {
			return true, nil
		}
	}
}
