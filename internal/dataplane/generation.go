package dataplane

import (
	"encoding/binary"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const (
	nftMsgNewGen = 15
	nftMsgGetGen = 16
	nftaGenID    = 1
)

// Generation returns the nftables generation of the calling thread's
// network namespace: the kernel counts every committed nf_tables
// transaction, whoever sends it, so a generation that moved past the one
// seen after our own last write means that someone else changed the
// ruleset (a firewall reload, `nft flush ruleset`, kube-proxy), and that
// netpol's table is worth a look. Asking costs one netlink round trip,
// where listing the table through nft costs a process and a dump.
// (No Go module this project uses speaks nf_tables' GETGEN; the message
// is one header and one attribute.)
func Generation() (uint32, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return 0, fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, fmt.Errorf("netlink bind: %w", err)
	}
	tv := unix.NsecToTimeval(time.Second.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return 0, fmt.Errorf("netlink receive timeout: %w", err)
	}
	var b batch
	b.message(nfnlSubsysNftables<<8|nftMsgGetGen, unix.NLM_F_REQUEST, unix.AF_UNSPEC, 0, nil)
	if err := unix.Sendto(fd, b.buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, fmt.Errorf("netlink send: %w", err)
	}
	buf := make([]byte, 1<<12)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, fmt.Errorf("netlink receive: %w", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return 0, fmt.Errorf("netlink answer: %w", err)
	}
	for _, m := range msgs {
		switch {
		case m.Header.Type == unix.NLMSG_ERROR && len(m.Data) >= 4:
			return 0, fmt.Errorf("nftables generation: %w", syscall.Errno(-int32(binary.NativeEndian.Uint32(m.Data))))
		case m.Header.Type == nfnlSubsysNftables<<8|nftMsgNewGen && len(m.Data) >= 4:
			if id, ok := genID(m.Data[4:]); ok { // after the nfgenmsg header
				return id, nil
			}
		}
	}
	return 0, fmt.Errorf("nftables generation: no NFTA_GEN_ID in the answer")
}

// genID finds NFTA_GEN_ID (a big-endian u32) among netlink attributes.
func genID(attrs []byte) (uint32, bool) {
	for len(attrs) >= 4 {
		l := int(binary.NativeEndian.Uint16(attrs))
		typ := binary.NativeEndian.Uint16(attrs[2:]) &^ (nlaFNested | 0x4000)
		if l < 4 || l > len(attrs) {
			return 0, false
		}
		if typ == nftaGenID && l >= 8 {
			return binary.BigEndian.Uint32(attrs[4:8]), true
		}
		next := (l + 3) &^ 3 // attributes are 4-byte aligned
		if next >= len(attrs) {
			return 0, false
		}
		attrs = attrs[next:]
	}
	return 0, false
}
