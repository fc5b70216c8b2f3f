package nft

import (
	"net/netip"
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/l4"
)

// elementOp is one element added to or deleted from a set or map, in the
// text form of the ruleset: key fields joined by " . ", and for verdict
// maps the value ("jump <chain>").
type elementOp struct {
	set        string
	c          *container
	delete     bool
	key, value string
}

// kernelElements turns element operations into dataplane elements; ok is
// false if one of them has a shape the element writer does not speak, and
// the caller then leaves the transaction to nft.
func kernelElements(ops []elementOp) (els []dataplane.Element, ok bool) {
	els = make([]dataplane.Element, 0, len(ops))
	for _, op := range ops {
		el := dataplane.Element{Set: op.set, Delete: op.delete, Interval: op.c.interval}
		fields := strings.Split(op.key, " . ")
		if first, last, isRange := strings.Cut(fields[0], "-"); isRange && len(fields) == 1 && op.c.interval {
			// A range of merged prefixes (addrElements).
			a, err1 := netip.ParseAddr(first)
			b, err2 := netip.ParseAddr(last)
			if err1 != nil || err2 != nil {
				return nil, false
			}
			el.Prefix, el.Last = netip.PrefixFrom(a, a.BitLen()), b
			els = append(els, el)
			continue
		}
		prefix, err := netip.ParsePrefix(fields[0])
		if err != nil {
			addr, err := netip.ParseAddr(fields[0])
			if err != nil {
				return nil, false
			}
			prefix = netip.PrefixFrom(addr, addr.BitLen())
		}
		el.Prefix = prefix
		switch {
		case len(fields) == 3: // address . protocol . port
			proto, err := l4.ParseProtocol(fields[1])
			port, perr := strconv.ParseUint(fields[2], 10, 16)
			if err != nil || perr != nil {
				return nil, false
			}
			el.Proto, el.Port = proto, uint16(port)
		case len(fields) == 2: // address . "interface"
			name, err := strconv.Unquote(fields[1])
			if err != nil || name == "" {
				return nil, false
			}
			el.Interface = name
		case len(fields) != 1:
			return nil, false
		}
		if op.value != "" {
			chain, found := strings.CutPrefix(op.value, "jump ")
			if !found {
				return nil, false
			}
			el.Jump = chain
		}
		els = append(els, el)
	}
	return els, true
}
