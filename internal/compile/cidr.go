package compile

import (
	"net/netip"
	"slices"
)

// Subtract returns the smallest list of prefixes that covers block minus the
// exceptions: dataplanes without "except" (security groups, plain interval
// sets) need the difference spelled out. An exception outside block is
// ignored; one that covers block leaves nothing.
func Subtract(block netip.Prefix, except []netip.Prefix) []netip.Prefix {
	block = block.Masked()
	out := []netip.Prefix{block}
	for _, e := range except {
		e = e.Masked()
		var next []netip.Prefix
		for _, p := range out {
			next = append(next, subtractOne(p, e)...)
		}
		out = next
	}
	return out
}

// subtractOne removes e from p by splitting p in halves down to e's length:
// at each level the half that does not hold e is kept whole.
func subtractOne(p, e netip.Prefix) []netip.Prefix {
	if !p.Overlaps(e) {
		return []netip.Prefix{p}
	}
	if e.Bits() <= p.Bits() {
		return nil // e covers p
	}
	var out []netip.Prefix
	for p.Bits() < e.Bits() {
		lo, hi := halves(p)
		if lo.Contains(e.Addr()) {
			out = append(out, hi)
			p = lo
		} else {
			out = append(out, lo)
			p = hi
		}
	}
	return out
}

// halves splits p into its two prefixes one bit longer.
func halves(p netip.Prefix) (lo, hi netip.Prefix) {
	bits := p.Bits() + 1
	lo = netip.PrefixFrom(p.Addr(), bits)
	a := p.Addr().AsSlice()
	bit := p.Bits() // index of the bit that differs
	a[bit/8] |= 0x80 >> (bit % 8)
	addr, _ := netip.AddrFromSlice(a)
	return lo, netip.PrefixFrom(addr, bits)
}

// Normalize sorts prefixes (IPv4 first) and drops the ones inside another,
// so that a set never holds two overlapping intervals (the kernel rejects
// those). Neighbours are not merged: a pod joining a selector must stay one
// element added, not a merged interval replaced.
func Normalize(ps []netip.Prefix) []netip.Prefix {
	if len(ps) == 0 {
		return nil
	}
	ps = slices.Clone(ps)
	for i := range ps {
		ps[i] = ps[i].Masked()
	}
	slices.SortFunc(ps, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	})
	var out []netip.Prefix
	for _, p := range ps {
		if n := len(out); n > 0 && out[n-1].Overlaps(p) {
			continue // sorted by address then length: the earlier one is wider
		}
		out = append(out, p)
	}
	return out
}
