// Package nflog reads packets that nftables `log group N` statements send to
// user space over netlink (NETLINK_NETFILTER, subsystem ULOG): the kernel
// half of the agent's audit log. It knows the wire format and nothing of
// policies: a Packet is the log prefix and the addresses and ports of the
// packet's headers. It imports only the standard library and x/sys/unix.
//
// It speaks nfnetlink_log by hand, for a measured reason
// (BenchmarkNFLOGPeers, BENCHMARKS.md "Libraries of the field"): against
// github.com/florianl/go-nflog/v2 on the same packets, this reader takes
// 5.4-5.5 µs a packet, 206 bytes and 6 allocations, go-nflog 7.7-9.6 µs,
// 5.7 KB and 44 (its callback gets every attribute decoded, this reader
// reads the four it needs); and go-nflog, left to its defaults, holds
// packets up to a second (the kernel's batching) and stops reading at the
// first ENOBUFS, where an audit log must go on and count what it lost.
package nflog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Netlink constants of nfnetlink_log (linux/netfilter/nfnetlink_log.h); x/sys
// does not carry them.
const (
	subsysULOG = 4 // NFNL_SUBSYS_ULOG

	msgPacket = 0 // NFULNL_MSG_PACKET
	msgConfig = 1 // NFULNL_MSG_CONFIG

	attrPacketHdr = 1  // NFULA_PACKET_HDR
	attrTimestamp = 3  // NFULA_TIMESTAMP
	attrPayload   = 9  // NFULA_PAYLOAD
	attrPrefix    = 10 // NFULA_PREFIX

	cfgCmd     = 1 // NFULA_CFG_CMD
	cfgMode    = 2 // NFULA_CFG_MODE
	cfgQThresh = 5 // NFULA_CFG_QTHRESH

	cmdBind   = 1 // NFULNL_CFG_CMD_BIND
	cmdUnbind = 2 // NFULNL_CFG_CMD_UNBIND

	copyPacket = 2 // NFULNL_COPY_PACKET

	// copyRange is how much of each packet the kernel copies: the IPv6
	// header (40 bytes), extension headers as a packet may carry them in
	// front of its transport header, and the ports. A packet that pads its
	// options further is logged without ports (the kernel still judges
	// its ports: the rules follow the chain whatever its length).
	copyRange = 512

	nlaTypeMask = 0x3fff // without NLA_F_NESTED and NLA_F_NET_BYTEORDER
)

// Packet is one logged packet.
type Packet struct {
	Prefix string
	// Time is the kernel's timestamp when it sent one, else zero.
	Time     time.Time
	Src, Dst netip.Addr
	Proto    uint8 // IP protocol number (6 TCP, 17 UDP, 132 SCTP, ...)
	// SrcPort and DstPort are zero for protocols without ports.
	SrcPort, DstPort uint16
	// Payload is what follows a UDP header, as far as the kernel copied
	// it: only from a Reader opened with OpenPayload. (A string: a copy,
	// and Packet stays comparable.)
	Payload string
}

// Reader receives the packets of one log group in the network namespace
// where it was opened. Read from one goroutine; Close from any.
type Reader struct {
	f       *os.File
	group   uint16
	buf     []byte
	payload bool // Packet.Payload is filled in
}

// Open binds a netlink socket to log group. Only one socket per namespace
// can bind a group: a second Open of the same group fails with EBUSY.
func Open(group uint16) (*Reader, error) { return open(group, copyRange, false) }

// OpenPayload is Open for readers of what UDP packets carry (the DNS
// proxy reads the questions of the queries it holds answers for): the
// kernel copies up to copy bytes of each packet, and Packet.Payload holds
// what follows its UDP header.
func OpenPayload(group uint16, copy int) (*Reader, error) { return open(group, copy, true) }

func open(group uint16, copyRange int, payload bool) (*Reader, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("nflog: netlink socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("nflog: bind: %w", err)
	}
	// Bursts of new connections must not overflow the socket while the
	// reader is busy; the kernel reports an overflow as ENOBUFS.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 1<<20)
	// A group left bound by a crashed agent would make BIND fail: unbind
	// first (the kernel answers ENODEV when nothing was bound).
	_ = request(fd, group, cmdUnbind, nil)
	if err := request(fd, group, cmdBind, nil); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("nflog: bind group %d: %w", group, err)
	}
	mode := make([]byte, 8) // struct nfulnl_msg_config_mode, padded
	binary.BigEndian.PutUint32(mode, uint32(copyRange))
	mode[4] = copyPacket
	// The kernel batches up to 100 packets or one second by default; an
	// audit line should not wait for company.
	qthresh := binary.BigEndian.AppendUint32(nil, 1)
	if err := request(fd, group, 0, append(attr(cfgMode, mode[:6]), attr(cfgQThresh, qthresh)...)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("nflog: copy mode of group %d: %w", group, err)
	}
	// Non-blocking under the runtime's poller, so that Close ends a Read.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("nflog: %w", err)
	}
	return &Reader{f: os.NewFile(uintptr(fd), "nflog"), group: group, buf: make([]byte, 1<<16), payload: payload}, nil
}

// Errors of Read after which reading can go on: the kernel dropped log
// messages because the socket's buffer was full, or some messages did not
// parse (the others are returned).
var (
	ErrLost      = errors.New("nflog: messages lost (socket buffer full)")
	ErrMalformed = errors.New("nflog: malformed messages skipped")
)

// Read blocks until the kernel sends log messages and returns their packets.
// Messages that do not parse are skipped; the error counts them.
func (r *Reader) Read() ([]Packet, error) {
	n, err := r.f.Read(r.buf)
	if errors.Is(err, unix.ENOBUFS) {
		return nil, ErrLost
	}
	if err != nil {
		return nil, err
	}
	return r.packets(r.buf[:n])
}

// ReadNow is Read without the wait: no packets and no error when the
// kernel has sent nothing that is not read yet. A caller that saw a packet
// leave after the kernel logged another one gets that one from ReadNow
// (the kernel queues a message as it logs, with a queue threshold of 1).
func (r *Reader) ReadNow() ([]Packet, error) {
	rc, err := r.f.SyscallConn()
	if err != nil {
		return nil, err
	}
	n := 0
	var rerr error
	// Control, not Read: Read takes the file's read lock, which a Wait in
	// another goroutine holds while it waits, and a ReadNow behind it
	// would wait for the next message after all.
	if err := rc.Control(func(fd uintptr) {
		n, _, rerr = unix.Recvfrom(int(fd), r.buf, unix.MSG_DONTWAIT)
	}); err != nil {
		return nil, err
	}
	switch {
	case errors.Is(rerr, unix.EAGAIN):
		return nil, nil
	case errors.Is(rerr, unix.ENOBUFS):
		return nil, ErrLost
	case rerr != nil:
		return nil, rerr
	}
	return r.packets(r.buf[:n])
}

// Wait blocks until the kernel has sent something to read (or the reader
// is closed), and reads nothing.
func (r *Reader) Wait() error {
	rc, err := r.f.SyscallConn()
	if err != nil {
		return err
	}
	var perr error
	var one [1]byte // not r.buf: ReadNow may be reading into it
	err = rc.Read(func(fd uintptr) bool {
		_, _, perr = unix.Recvfrom(int(fd), one[:], unix.MSG_DONTWAIT|unix.MSG_PEEK)
		return !errors.Is(perr, unix.EAGAIN) // nothing yet: the poller waits
	})
	if err != nil {
		return err
	}
	if errors.Is(perr, unix.ENOBUFS) {
		return nil // the next read says so
	}
	return perr
}

// packets parses one datagram of messages.
func (r *Reader) packets(b []byte) ([]Packet, error) {
	msgs, err := split(b)
	if err != nil {
		return nil, err
	}
	var out []Packet
	bad := 0
	for _, m := range msgs {
		if m.typ != subsysULOG<<8|msgPacket {
			continue
		}
		p, err := parse(m.body, r.payload)
		if err != nil {
			bad++
			continue
		}
		out = append(out, p)
	}
	if bad > 0 {
		return out, fmt.Errorf("%w: %d", ErrMalformed, bad)
	}
	return out, nil
}

// Close unbinds the group and closes the socket.
func (r *Reader) Close() error { return r.f.Close() }

// Source is where logged packets come from: a Reader, or a test's list.
type Source interface {
	Read() ([]Packet, error)
}

// Drain hands every packet src delivers to handle until src fails for
// good (closed). Lost and malformed messages, and handle's errors, are
// reported to onError and reading goes on: a full socket buffer costs
// some log lines, never the reader.
func Drain(src Source, handle func(Packet) error, onError func(error)) error {
	for {
		ps, err := src.Read()
		for _, p := range ps {
			if herr := handle(p); herr != nil {
				onError(herr)
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, ErrLost) || errors.Is(err, ErrMalformed):
			onError(err)
		default:
			return err
		}
	}
}

// Parse decodes the body of one NFULNL_MSG_PACKET message (after the netlink
// header): the nfgenmsg header, then attributes.
func Parse(body []byte) (Packet, error) { return parse(body, false) }

func parse(body []byte, withPayload bool) (Packet, error) {
	var p Packet
	if len(body) < 4 {
		return p, fmt.Errorf("nflog: message of %d bytes has no nfgenmsg header", len(body))
	}
	family := body[0]
	var payload []byte
	for b := body[4:]; len(b) >= 4; {
		l := int(binary.NativeEndian.Uint16(b[0:2]))
		typ := binary.NativeEndian.Uint16(b[2:4]) & nlaTypeMask
		if l < 4 || l > len(b) {
			return p, fmt.Errorf("nflog: attribute %d has length %d with %d bytes left", typ, l, len(b))
		}
		v := b[4:l]
		switch typ {
		case attrPrefix:
			p.Prefix = cString(v)
		case attrPayload:
			payload = v
		case attrTimestamp:
			if len(v) == 16 { // struct nfulnl_msg_packet_timestamp: sec, usec (big endian)
				sec := int64(binary.BigEndian.Uint64(v[0:8]))
				usec := int64(binary.BigEndian.Uint64(v[8:16]))
				p.Time = time.Unix(sec, usec*1000)
			}
		}
		b = b[min(align4(l), len(b)):]
	}
	if payload == nil {
		return p, fmt.Errorf("nflog: packet %q has no payload", p.Prefix)
	}
	l4, err := p.headers(family, payload)
	if err != nil {
		return p, fmt.Errorf("nflog: packet %q: %w", p.Prefix, err)
	}
	if withPayload && p.Proto == unix.IPPROTO_UDP && len(l4) >= 8 {
		if n := int(binary.BigEndian.Uint16(l4[4:6])); n >= 8 && n < len(l4) {
			l4 = l4[:n] // the datagram's own length, not what follows it
		}
		p.Payload = string(l4[8:])
	}
	return p, nil
}

// headers reads the network header and the ports of the transport header.
func (p *Packet) headers(family uint8, b []byte) ([]byte, error) {
	var l4 []byte
	switch {
	case family == unix.AF_INET || (family == unix.AF_UNSPEC || family == unix.AF_BRIDGE) && len(b) > 0 && b[0]>>4 == 4:
		if len(b) < 20 || b[0]>>4 != 4 {
			return nil, fmt.Errorf("IPv4 header of %d bytes", len(b))
		}
		ihl := int(b[0]&0x0f) * 4
		p.Src, p.Dst = netip.AddrFrom4([4]byte(b[12:16])), netip.AddrFrom4([4]byte(b[16:20]))
		p.Proto = b[9]
		// Only a first fragment carries the ports.
		if off := binary.BigEndian.Uint16(b[6:8]) & 0x1fff; off == 0 && ihl >= 20 && ihl <= len(b) {
			l4 = b[ihl:]
		}
	case family == unix.AF_INET6 || (family == unix.AF_UNSPEC || family == unix.AF_BRIDGE) && len(b) > 0 && b[0]>>4 == 6:
		if len(b) < 40 || b[0]>>4 != 6 {
			return nil, fmt.Errorf("IPv6 header of %d bytes", len(b))
		}
		p.Src, p.Dst = netip.AddrFrom16([16]byte(b[8:24])), netip.AddrFrom16([16]byte(b[24:40]))
		p.Proto, l4 = upperLayer(b[6], b[40:])
	default:
		return nil, fmt.Errorf("address family %d", family)
	}
	switch p.Proto {
	case unix.IPPROTO_TCP, unix.IPPROTO_UDP, unix.IPPROTO_SCTP, unix.IPPROTO_UDPLITE, unix.IPPROTO_DCCP:
		if len(l4) >= 4 {
			p.SrcPort = binary.BigEndian.Uint16(l4[0:2])
			p.DstPort = binary.BigEndian.Uint16(l4[2:4])
		}
	}
	return l4, nil
}

// upperLayer follows IPv6 extension headers from next, the header that
// rest starts with, to the transport header, as the kernel's th dport
// does: a packet must not hide its ports from the log by putting options
// in front of them. It returns the protocol and its header, or, for a
// later fragment, one that is encrypted (ESP) or a chain that runs past
// what was copied, the last next-header value and nil. Every step takes
// at least 8 bytes, so the walk is bounded by the copy's length.
func upperLayer(next uint8, rest []byte) (uint8, []byte) {
	for {
		var n int
		switch next {
		case 0, 43, 60, 135, 139, 140: // hop-by-hop, routing, destination options, mobility, HIP, shim6
			if len(rest) < 8 {
				return next, nil
			}
			n = (int(rest[1]) + 1) * 8
		case 51: // AH: its length counts 4-byte words, less 2
			if len(rest) < 8 {
				return next, nil
			}
			n = (int(rest[1]) + 2) * 4
		case 44: // fragment: only the first one carries the ports
			if len(rest) < 8 {
				return next, nil
			}
			if binary.BigEndian.Uint16(rest[2:4])&^7 != 0 {
				return rest[0], nil
			}
			n = 8
		default:
			return next, rest
		}
		if n > len(rest) {
			return rest[0], nil
		}
		next, rest = rest[0], rest[n:]
	}
}

// message is one netlink message of a datagram.
type message struct {
	typ  uint16
	body []byte
}

// split cuts a datagram into netlink messages and turns error messages into
// errors.
func split(b []byte) ([]message, error) {
	var out []message
	for len(b) >= unix.NLMSG_HDRLEN {
		l := int(binary.NativeEndian.Uint32(b[0:4]))
		typ := binary.NativeEndian.Uint16(b[4:6])
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return out, fmt.Errorf("nflog: netlink message of length %d with %d bytes left", l, len(b))
		}
		body := b[unix.NLMSG_HDRLEN:l]
		if typ == unix.NLMSG_ERROR && len(body) >= 4 {
			if errno := int32(binary.NativeEndian.Uint32(body[0:4])); errno != 0 {
				return out, unix.Errno(-errno)
			}
		} else if typ != unix.NLMSG_NOOP && typ != unix.NLMSG_DONE {
			out = append(out, message{typ: typ, body: body})
		}
		b = b[min(align4(l), len(b)):]
	}
	return out, nil
}

// request sends one NFULNL_MSG_CONFIG for group (a command when cmd is not
// zero, and the extra attributes) and waits for the kernel's acknowledgement.
func request(fd int, group uint16, cmd byte, extra []byte) error {
	body := []byte{unix.AF_UNSPEC, 0 /* NFNETLINK_V0 */, byte(group >> 8), byte(group)}
	if cmd != 0 {
		body = append(body, attr(cfgCmd, []byte{cmd})...)
	}
	body = append(body, extra...)
	msg := make([]byte, unix.NLMSG_HDRLEN, unix.NLMSG_HDRLEN+len(body))
	binary.NativeEndian.PutUint32(msg[0:4], uint32(unix.NLMSG_HDRLEN+len(body)))
	binary.NativeEndian.PutUint16(msg[4:6], subsysULOG<<8|msgConfig)
	binary.NativeEndian.PutUint16(msg[6:8], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	binary.NativeEndian.PutUint32(msg[8:12], 1) // sequence
	msg = append(msg, body...)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return err
		}
		if n >= unix.NLMSG_HDRLEN {
			// The acknowledgement is the only reply before the group is
			// bound; split returns its errno.
			_, err := split(buf[:n])
			return err
		}
	}
}

// attr encodes one netlink attribute, padded to 4 bytes.
func attr(typ uint16, v []byte) []byte {
	b := make([]byte, align4(4+len(v)))
	binary.NativeEndian.PutUint16(b[0:2], uint16(4+len(v)))
	binary.NativeEndian.PutUint16(b[2:4], typ)
	copy(b[4:], v)
	return b
}

func align4(n int) int { return (n + 3) &^ 3 }

func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
