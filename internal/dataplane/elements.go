package dataplane

import (
	"encoding/binary"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netpol/netpol/internal/l4"
)

// Element is one element of a set or map in netpol's nftables table, in one
// of the three shapes the renderer uses:
//
//   - an address set (flags interval): Prefix;
//   - an endpoint set (ip . inet_proto . inet_service): Prefix (a single
//     address), Proto and Port;
//   - a verdict map (ip : verdict): Prefix (a single address) and Jump;
//   - an interface set (ip . ifname): Prefix (a single address) and
//     Interface.
type Element struct {
	Set    string
	Delete bool // delete instead of add
	// Interval: the set has flags interval, so the element is the range
	// of Prefix (a start element and an end element in the kernel).
	Interval bool
	Prefix   netip.Prefix
	// Last, when valid, ends an interval set's range at this address
	// instead of at the end of Prefix (whose address then starts it): the
	// adjacent prefixes of an ipBlock merge into ranges no prefix spells.
	Last  netip.Addr
	Proto l4.Protocol // endpoint sets
	Port  uint16      // endpoint sets
	Jump  string      // verdict maps: the chain to jump to
	// Interface is an interface name (interface sets).
	Interface string
	// Timeout, in a set with flags timeout, is how long the element
	// stays: the kernel removes it then. Writing the element again starts
	// the timeout afresh (in place since Linux 6.12; before, only with
	// Elements.RefreshByDelete).
	Timeout time.Duration
}

// Elements writes set and map elements of one nftables table straight over
// netlink, in one batch that the kernel applies as a single transaction: all
// of it or nothing. It exists for speed: nft 1.0.6 reads every element of
// every set before it runs any element command (150-250 ms on a node with
// 77k elements), while a pod joining a selector is a few elements.
//
// It speaks the same wire format as nft, element for element: a range in an
// interval set is its first address and, flagged as an interval end, the
// address after its last (none when the range ends at the last address), so
// nft and Elements can add and delete each other's elements.
//
// The same batch can delete the chains and sets that the elements leave
// unused (a pod moved to another table chain leaves the old one unused): a
// deletion waits for an RCU grace period in the kernel (10-30 ms here),
// and a batch that deletes elements waits for one already.
type Elements struct {
	Family byte   // unix.NFPROTO_INET for an inet table
	Table  string // the table's name
	// RefreshByDelete: elements with a timeout are deleted and added again
	// to refresh it (kernels before 6.12 keep an element's expiry, whatever
	// a new write says; RefreshesInPlace).
	RefreshByDelete bool
}

// Unused names the chains and the sets (maps too) that nothing refers to
// once the elements are written.
type Unused struct {
	Chains, Sets []string
}

// Netlink constants of nf_tables (linux/netfilter/nf_tables.h,
// linux/netfilter/nfnetlink.h) that x/sys/unix does not name.
const (
	nfnlSubsysNftables = 10
	nfnlMsgBatchBegin  = 0x10
	nfnlMsgBatchEnd    = 0x11
	nftMsgDelChain     = 5
	nftMsgDelRule      = 8
	nftMsgDelSet       = 11
	nftMsgNewSetElem   = 12
	nftMsgDelSetElem   = 14

	nftaTableAttr = 1 // NFTA_CHAIN_TABLE, NFTA_RULE_TABLE, NFTA_SET_TABLE
	nftaRuleChain = 2
	nftaChainName = 3
	nftaSetName   = 2

	nftaSetElemListTable    = 1
	nftaSetElemListSet      = 2
	nftaSetElemListElements = 3
	nftaListElem            = 1
	nftaSetElemKey          = 1
	nftaSetElemData         = 2
	nftaSetElemFlags        = 3
	nftaSetElemTimeout      = 4
	nftaSetElemExpiration   = 5
	nftaDataValue           = 1
	nftaDataVerdict         = 2
	nftaVerdictCode         = 1
	nftaVerdictChain        = 2

	nftSetElemIntervalEnd = 1
	nftJump               = 0xfffffffd // NFT_JUMP, -3 as a 32-bit value
	nlaFNested            = 0x8000
)

// ipProto is the IP protocol number of each protocol policy knows.
var ipProto = map[l4.Protocol]byte{l4.TCP: unix.IPPROTO_TCP, l4.UDP: unix.IPPROTO_UDP, l4.SCTP: unix.IPPROTO_SCTP}

// Write applies elems in one transaction, in order, and then deletes what
// unused names: the chains' rules first (so that no chain or set is still
// referred to by a rule of another that goes), then the chains, then the
// sets. On error the kernel is unchanged.
func (w Elements) Write(elems []Element, unused Unused) error {
	if len(elems) == 0 && len(unused.Chains) == 0 && len(unused.Sets) == 0 {
		return nil
	}
	if w.RefreshByDelete {
		elems = refreshByDelete(elems)
	}
	// Consecutive elements of one set and kind share messages, as nft
	// sends them.
	var msgs []message
	for i := 0; i < len(elems); {
		j := i + 1
		for j < len(elems) && elems[j].Set == elems[i].Set && elems[j].Delete == elems[i].Delete {
			j++
		}
		var err error
		if msgs, err = w.elementMessages(msgs, elems[i:j]); err != nil {
			return err
		}
		i = j
	}
	named := func(typ, nameAttr uint16, name string) message {
		var a attrs
		a.str(nftaTableAttr, w.Table)
		a.str(nameAttr, name)
		return message{typ, a}
	}
	for _, c := range unused.Chains {
		msgs = append(msgs, named(nftMsgDelRule, nftaRuleChain, c)) // a rule-less DELRULE empties the chain
	}
	for _, c := range unused.Chains {
		msgs = append(msgs, named(nftMsgDelChain, nftaChainName, c))
	}
	for _, set := range unused.Sets {
		msgs = append(msgs, named(nftMsgDelSet, nftaSetName, set))
	}
	return w.send(msgs)
}

// FillBatch is the most elements Fill sends in one batch: a batch is one
// netlink message the process and the kernel each hold whole (~60 bytes
// an element), and nft, which sends a set's elements in one, needed 3.6 KB
// an element to read them from text (476 MB for 130k).
const FillBatch = 20000

// Fill adds the elements of one set that no rule refers to yet (it is
// filled before the rules that match it are written), in batches of at
// most FillBatch: only each batch is atomic.
func (w Elements) Fill(set string, elems []Element) error {
	for i := 0; i < len(elems); i += FillBatch {
		msgs, err := w.elementMessages(nil, elems[i:min(i+FillBatch, len(elems))])
		if err == nil {
			err = w.send(msgs)
		}
		if err != nil {
			return fmt.Errorf("set %s, elements %d-: %w", set, i, err)
		}
	}
	return nil
}

// Replace empties each set of sets and adds its elements, all in one batch,
// so that no packet sees a set part-filled or one set changed and another
// not yet: the batch is as large as all the sets.
func (w Elements) Replace(sets map[string][]Element) error {
	if len(sets) == 0 {
		return nil
	}
	var msgs []message
	for _, set := range slices.Sorted(maps.Keys(sets)) {
		var a attrs
		a.str(nftaSetElemListTable, w.Table)
		a.str(nftaSetElemListSet, set)
		// A DELSETELEM without an element list empties the set.
		msgs = append(msgs, message{nftMsgDelSetElem, a})
		if elems := sets[set]; len(elems) > 0 {
			var err error
			if msgs, err = w.elementMessages(msgs, elems); err != nil {
				return err
			}
		}
	}
	return w.send(msgs)
}

// send frames msgs as one batch, one kernel transaction, and sends it.
func (w Elements) send(msgs []message) error {
	var b batch
	b.message(nfnlMsgBatchBegin, unix.NLM_F_REQUEST, unix.AF_UNSPEC, nfnlSubsysNftables, nil)
	// Only the last message asks for an answer: the kernel answers every
	// message that fails anyway, and answers after the whole batch ran, so
	// the last answer says it is done. An answer to every message overflows
	// the socket's receive buffer on a batch of thousands.
	for i, m := range msgs {
		flags := uint16(unix.NLM_F_REQUEST)
		if m.typ == nftMsgNewSetElem {
			flags |= unix.NLM_F_CREATE
		}
		if i == len(msgs)-1 {
			flags |= unix.NLM_F_ACK
		}
		b.message(nfnlSubsysNftables<<8|m.typ, flags, w.Family, 0, m.payload)
	}
	b.message(nfnlMsgBatchEnd, unix.NLM_F_REQUEST, unix.AF_UNSPEC, nfnlSubsysNftables, nil)
	return b.send()
}

// refreshByDelete returns elems with every element that is added with a
// timeout added, deleted and added again: the first add makes sure there
// is one to delete (a delete of a missing element fails the batch), and
// the last starts its timeout afresh. The batch is one transaction, so no
// packet sees the element missing.
func refreshByDelete(elems []Element) []Element {
	out := make([]Element, 0, len(elems))
	for _, e := range elems {
		if e.Delete || e.Timeout <= 0 {
			out = append(out, e)
			continue
		}
		del := e
		del.Delete, del.Timeout = true, 0
		out = append(out, e, del, e)
	}
	return out
}

// RefreshesInPlace reports whether a kernel of this release (uname -r)
// gives an element that is there already the expiry a new write asks for
// (NFTA_SET_ELEM_EXPIRATION on an existing element, Linux 6.12, commit
// 4201f3938914); before, the element keeps the expiry it was first given,
// and Elements must be told RefreshByDelete. An unknown release does not.
func RefreshesInPlace(release string) bool {
	var major, minor int
	if n, _ := fmt.Sscanf(release, "%d.%d", &major, &minor); n != 2 {
		return false
	}
	return major > 6 || major == 6 && minor >= 12
}

// message is one NEWSETELEM or DELSETELEM message before it is framed.
type message struct {
	typ     uint16
	payload attrs
}

// maxElementList bounds the element list of one message: its length is an
// attribute's, 16 bits.
const maxElementList = 60000

// elementMessages appends messages for elements of one set and kind: as
// many as their list needs.
func (w Elements) elementMessages(msgs []message, elems []Element) ([]message, error) {
	typ := uint16(nftMsgNewSetElem)
	if elems[0].Delete {
		typ = nftMsgDelSetElem
	}
	var list attrs
	flush := func() {
		var a attrs
		a.str(nftaSetElemListTable, w.Table)
		a.str(nftaSetElemListSet, elems[0].Set)
		a.nested(nftaSetElemListElements, list)
		msgs = append(msgs, message{typ, a})
		list = nil
	}
	for _, e := range elems {
		encoded, err := encodeElement(e)
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", e.Set, err)
		}
		var one attrs // both halves of a range stay in one message
		for _, el := range encoded {
			one.nested(nftaListElem, el)
		}
		if len(list)+len(one) > maxElementList {
			flush()
		}
		list = append(list, one...)
	}
	flush()
	return msgs, nil
}

// encodeElement returns the kernel elements of e: one, or two for a range
// in an interval set.
func encodeElement(e Element) ([]attrs, error) {
	if !e.Prefix.IsValid() {
		return nil, fmt.Errorf("element without an address")
	}
	addr := e.Prefix.Masked().Addr()
	if e.Timeout > 0 && (e.Interval || e.Jump != "" || e.Proto != 0 || e.Interface != "") {
		return nil, fmt.Errorf("%s: only address sets take a timeout here", e.Prefix)
	}
	switch {
	case e.Interval:
		first := elementAttrs(addr.AsSlice(), 0, "")
		last := lastAddr(e.Prefix)
		if e.Last.IsValid() {
			if e.Last.Is4() != addr.Is4() || e.Last.Less(addr) {
				return nil, fmt.Errorf("range %s-%s is not one", addr, e.Last)
			}
			last = e.Last
		}
		next, ok := last.Next(), true
		if !next.IsValid() {
			ok = false // the range ends at the last address: no end element
		}
		if !ok {
			return []attrs{first}, nil
		}
		return []attrs{first, elementAttrs(next.AsSlice(), nftSetElemIntervalEnd, "")}, nil
	case e.Prefix.Bits() != addr.BitLen():
		return nil, fmt.Errorf("%s: only interval sets hold ranges", e.Prefix)
	case e.Jump != "":
		return []attrs{elementAttrs(addr.AsSlice(), 0, e.Jump)}, nil
	case e.Interface != "":
		// An ifname is IFNAMSIZ (16) bytes, zero-padded, in a
		// concatenation as anywhere.
		if len(e.Interface) > 15 {
			return nil, fmt.Errorf("%s: interface name %q is too long", e.Prefix, e.Interface)
		}
		key := append(addr.AsSlice(), make([]byte, 16)...)
		copy(key[addr.BitLen()/8:], e.Interface)
		return []attrs{elementAttrs(key, 0, "")}, nil
	case e.Proto != 0:
		// Concatenations put each field in its own 32-bit register: the
		// protocol byte and the port (network order) are zero-padded.
		proto, ok := ipProto[e.Proto]
		if !ok {
			return nil, fmt.Errorf("%s: unknown protocol %v", e.Prefix, e.Proto)
		}
		key := append(addr.AsSlice(), proto, 0, 0, 0)
		key = binary.BigEndian.AppendUint16(key, e.Port)
		key = append(key, 0, 0)
		return []attrs{elementAttrs(key, 0, "")}, nil
	}
	el := elementAttrs(addr.AsSlice(), 0, "")
	if e.Timeout > 0 && !e.Delete {
		// The expiration too: since 6.12 the kernel updates an existing
		// element's expiry only when a write gives one, or a timeout other
		// than the element's (an answer repeating its TTL gives the same).
		ms := binary.BigEndian.AppendUint64(nil, uint64(e.Timeout.Milliseconds()))
		el.put(nftaSetElemTimeout, ms)
		el.put(nftaSetElemExpiration, ms)
	}
	return []attrs{el}, nil
}

func elementAttrs(key []byte, flags uint32, jump string) attrs {
	var el, k attrs
	k.put(nftaDataValue, key)
	el.nested(nftaSetElemKey, k)
	if jump != "" {
		var verdict, data attrs
		verdict.u32(nftaVerdictCode, nftJump)
		verdict.str(nftaVerdictChain, jump)
		data.nested(nftaDataVerdict, verdict)
		el.nested(nftaSetElemData, data)
	}
	if flags != 0 {
		el.u32(nftaSetElemFlags, flags)
	}
	return el
}

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// attrs is a run of netlink attributes.
type attrs []byte

func (a *attrs) put(typ uint16, payload []byte) {
	*a = binary.NativeEndian.AppendUint16(*a, uint16(unix.SizeofNlAttr+len(payload)))
	*a = binary.NativeEndian.AppendUint16(*a, typ)
	*a = append(*a, payload...)
	for len(*a)%unix.NLA_ALIGNTO != 0 {
		*a = append(*a, 0)
	}
}

func (a *attrs) str(typ uint16, s string)       { a.put(typ, append([]byte(s), 0)) }
func (a *attrs) nested(typ uint16, inner attrs) { a.put(typ|nlaFNested, inner) }

// u32 puts a big-endian 32-bit value, as nf_tables attributes are.
func (a *attrs) u32(typ uint16, v uint32) { a.put(typ, binary.BigEndian.AppendUint32(nil, v)) }

// batch is a run of netlink messages sent in one sendmsg.
type batch struct {
	buf  []byte
	acks int // messages that ask for an acknowledgement
	seq  uint32
}

func (b *batch) message(typ, flags uint16, family byte, resID uint16, payload []byte) {
	b.seq++
	length := unix.SizeofNlMsghdr + 4 + len(payload)
	b.buf = binary.NativeEndian.AppendUint32(b.buf, uint32(length))
	b.buf = binary.NativeEndian.AppendUint16(b.buf, typ)
	b.buf = binary.NativeEndian.AppendUint16(b.buf, flags)
	b.buf = binary.NativeEndian.AppendUint32(b.buf, b.seq)
	b.buf = binary.NativeEndian.AppendUint32(b.buf, 0)
	// nfgenmsg: family, version, resource id (big endian).
	b.buf = append(b.buf, family, 0)
	b.buf = binary.BigEndian.AppendUint16(b.buf, resID)
	b.buf = append(b.buf, payload...)
	if flags&unix.NLM_F_ACK != 0 {
		b.acks++
	}
}

// ackTimeout bounds the wait for the kernel's answers; it answers in
// microseconds, so hitting it means something is badly wrong.
const ackTimeout = 10 * time.Second

// send sends the batch on a new socket of the calling thread's network
// namespace and waits for an answer to every message that asked for one.
// The kernel answers a failed batch with the errors of the messages that
// failed, and applies none of it.
func (b *batch) send() error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink bind: %w", err)
	}
	// A batch goes in one sendmsg, which the socket's send buffer bounds:
	// make room (SO_SNDBUFFORCE passes the system limit with CAP_NET_ADMIN,
	// which the agent has), and have answers leave out the request they
	// answer (a failed message's would be copied whole).
	if need := len(b.buf) + 1<<16; need > 1<<17 {
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, need) != nil {
			if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, need); err != nil {
				return fmt.Errorf("netlink send buffer: %w", err)
			}
		}
	}
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1) // older kernels answer in full
	tv := unix.NsecToTimeval(ackTimeout.Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return fmt.Errorf("netlink receive timeout: %w", err)
	}
	if err := unix.Sendto(fd, b.buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink send: %w", err)
	}
	buf := make([]byte, 1<<16)
	for answered := 0; answered < b.acks; {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return fmt.Errorf("netlink receive (%d of %d answers): %w", answered, b.acks, err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("netlink answer: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Type != unix.NLMSG_ERROR || len(m.Data) < 4 {
				continue
			}
			answered++
			// The kernel has run the whole batch before it answers, so
			// the first error is the outcome: nothing was applied.
			if errno := -int32(binary.NativeEndian.Uint32(m.Data)); errno != 0 {
				return fmt.Errorf("nftables element batch, message %d: %w", m.Header.Seq, syscall.Errno(errno))
			}
		}
	}
	return nil
}
