package engine

import (
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
)

// AllowedPorts decides the flow f on each port of ports, as Allowed does
// with f.Port set to it, into allowed (len(ports) long). A front end that
// decides a pair of pods on every range of ports (diff) asks once: which
// peers a rule matches does not depend on the port, so each side walks its
// policies once per 64 ports (walk), instead of once per port.
func (e *Engine) AllowedPorts(f Flow, ports []l4.Port, allowed []bool) {
	forChunks(ports, allowed, func(chunk []l4.Port) uint64 { return e.allowedPorts(f, chunk) })
}

// SidePorts decides one side of f (dir egress: the source's, ingress: the
// destination's) on each port of ports, into allowed. A flow is allowed
// where both sides allow it (but for a pod talking to itself): a front end
// that knows one side cannot have changed decides the other alone.
func (e *Engine) SidePorts(dir policy.Direction, f Flow, ports []l4.Port, allowed []bool) {
	subject, peer := f.Src, f.Dst
	if dir == policy.Ingress {
		subject, peer = f.Dst, f.Src
	}
	forChunks(ports, allowed, func(chunk []l4.Port) uint64 {
		return e.walk(dir, subject, peer, f.Dst, chunk, uint64(1)<<len(chunk)-1, nil)
	})
}

// forChunks decides ports 64 at a time with decide (bit k of its result
// is chunk[k]) into allowed.
func forChunks(ports []l4.Port, allowed []bool, decide func(chunk []l4.Port) uint64) {
	for lo := 0; lo < len(ports); lo += 64 {
		chunk := ports[lo:min(lo+64, len(ports))]
		bits := decide(chunk)
		for k := range chunk {
			allowed[lo+k] = bits&(1<<k) != 0
		}
	}
}
