// Package dns reads DNS responses (RFC 1035) for what domainNames
// enforcement needs: the name that was asked for and the addresses it
// stands for, at the end of any CNAME chain, with their TTLs. A response
// comes from a resolver, which a hostile pod may have chosen; the reader
// trusts nothing in it: every length is checked, a compression pointer
// may only point backwards (so no loop) and at most maxPointers are
// followed per name, and at most maxRecords records are read, so a
// message costs time and memory bounded by its size. It imports nothing
// from netpol.
package dns

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Limits on what one message may make the reader do.
const (
	maxRecords  = 256 // answer records read; the rest are ignored
	maxPointers = 32  // compression pointers followed in one name
	maxChain    = 16  // CNAMEs followed from the question
	maxName     = 255 // octets of a name on the wire (RFC 1035 2.3.4)
)

// Record types and the class netpol reads.
const (
	typeA     = 1
	typeCNAME = 5
	typeAAAA  = 28
	classIN   = 1
)

// Address is one address a name stands for, and for how long.
type Address struct {
	IP  netip.Addr
	TTL uint32 // seconds: the smallest TTL on the way from the question
}

// Answer is what a response says about the name it answers.
type Answer struct {
	ID uint16
	// Name is the question's name, lowercase and without the root's dot.
	Name string
	// Addrs are the A and AAAA records of Name, or of the end of the CNAME
	// chain that starts at Name: the final addresses count for the name
	// that was asked for.
	Addrs []Address
	// RCode is the response code (0: no error; 3: no such name).
	RCode int
}

// ErrNotResponse is returned for a message that is not a response with
// one question.
var ErrNotResponse = errors.New("not a DNS response to one question")

// ParseResponse reads a DNS response.
func ParseResponse(msg []byte) (Answer, error) {
	var a Answer
	if len(msg) < 12 {
		return a, fmt.Errorf("message of %d bytes: shorter than a header", len(msg))
	}
	a.ID = binary.BigEndian.Uint16(msg)
	flags := binary.BigEndian.Uint16(msg[2:])
	a.RCode = int(flags & 0xf)
	qd, an := binary.BigEndian.Uint16(msg[4:]), binary.BigEndian.Uint16(msg[6:])
	if flags&0x8000 == 0 || qd != 1 {
		return a, ErrNotResponse
	}
	off := 12
	name, off, err := readName(msg, off)
	if err != nil {
		return a, fmt.Errorf("question: %w", err)
	}
	if off+4 > len(msg) {
		return a, errors.New("question: truncated")
	}
	off += 4 // type, class
	a.Name = name

	// owner -> CNAME target, and owner -> addresses, of the answer section.
	cnames := map[string]cnameRecord{}
	addrs := map[string][]Address{}
	for i := 0; i < int(an) && i < maxRecords; i++ {
		var owner string
		if owner, off, err = readName(msg, off); err != nil {
			return a, fmt.Errorf("answer %d: %w", i, err)
		}
		if off+10 > len(msg) {
			return a, fmt.Errorf("answer %d: truncated", i)
		}
		typ, class := binary.BigEndian.Uint16(msg[off:]), binary.BigEndian.Uint16(msg[off+2:])
		ttl := binary.BigEndian.Uint32(msg[off+4:])
		rdlen := int(binary.BigEndian.Uint16(msg[off+8:]))
		off += 10
		if off+rdlen > len(msg) {
			return a, fmt.Errorf("answer %d: data of %d bytes past the end", i, rdlen)
		}
		rdata := msg[off : off+rdlen]
		if class == classIN {
			switch {
			case typ == typeA && rdlen == 4:
				addrs[owner] = append(addrs[owner], Address{IP: netip.AddrFrom4([4]byte(rdata)), TTL: ttl})
			case typ == typeAAAA && rdlen == 16:
				addrs[owner] = append(addrs[owner], Address{IP: netip.AddrFrom16([16]byte(rdata)).Unmap(), TTL: ttl})
			case typ == typeCNAME:
				target, _, err := readName(msg, off)
				if err != nil {
					return a, fmt.Errorf("answer %d: CNAME: %w", i, err)
				}
				cnames[owner] = cnameRecord{target: target, ttl: ttl}
			}
		}
		off += rdlen
	}

	// Follow the chain from the question; every hop's TTL bounds how long
	// the final addresses stand for the question's name.
	owner, ttl := name, ^uint32(0)
	visited := map[string]bool{}
	for hops := 0; !visited[owner] && hops <= maxChain; hops++ {
		visited[owner] = true // a chain that loops ends where it meets itself
		for _, ad := range addrs[owner] {
			ad.TTL = min(ad.TTL, ttl)
			a.Addrs = append(a.Addrs, ad)
		}
		c, ok := cnames[owner]
		if !ok {
			break
		}
		owner, ttl = c.target, min(ttl, c.ttl)
	}
	return a, nil
}

type cnameRecord struct {
	target string
	ttl    uint32
}

// readName reads the (possibly compressed) name at off and returns it
// canonical (lowercase, dot-separated, no root dot) with the offset after
// it in the message.
func readName(msg []byte, off int) (string, int, error) {
	var b strings.Builder
	end := -1 // the offset after the name where it started, once a pointer is followed
	pointers, wire := 0, 0
	for {
		if off >= len(msg) {
			return "", 0, errors.New("name: truncated")
		}
		l := int(msg[off])
		switch l & 0xc0 {
		case 0x00:
			off++
			if l == 0 {
				if end < 0 {
					end = off
				}
				return b.String(), end, nil
			}
			if wire += l + 1; wire > maxName {
				return "", 0, fmt.Errorf("name: longer than %d octets", maxName)
			}
			if off+l > len(msg) {
				return "", 0, errors.New("name: label past the end")
			}
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			for _, c := range msg[off : off+l] {
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				b.WriteByte(c)
			}
			off += l
		case 0xc0:
			if off+1 >= len(msg) {
				return "", 0, errors.New("name: truncated pointer")
			}
			target := int(binary.BigEndian.Uint16(msg[off:]) & 0x3fff)
			// A pointer goes back to a name written earlier: forward (or
			// to itself) it could loop.
			if target >= off {
				return "", 0, fmt.Errorf("name: compression pointer at %d points forward to %d", off, target)
			}
			if pointers++; pointers > maxPointers {
				return "", 0, errors.New("name: too many compression pointers")
			}
			if end < 0 {
				end = off + 2
			}
			off = target
		default:
			return "", 0, fmt.Errorf("name: label type %#x is not supported", l&0xc0)
		}
	}
}
