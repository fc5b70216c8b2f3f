// Package l4 holds the transport-layer values every layer shares: protocols,
// ports and port ranges. They are small comparable values (usable as map keys),
// in the manner of net/netip. It imports nothing from netpol.
package l4

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Protocol is a transport protocol a policy can name.
type Protocol uint8

const (
	TCP Protocol = iota + 1
	UDP
	SCTP
)

// ICMP, ICMPv6 and Unported are protocols that no policy names but
// connection tracking follows (a ping, a GRE tunnel): only rules without
// ports match them, in the kernel as in compile's evaluator, so a deny of
// a peer cuts them too. Unported is every IP protocol without ports but
// the two ICMPs; Conn.Number says which.
const (
	ICMP Protocol = iota + 16
	ICMPv6
	Unported
)

// Protocols lists every protocol a policy can name, in a stable order.
var Protocols = [...]Protocol{TCP, UDP, SCTP}

func (p Protocol) String() string {
	switch p {
	case TCP:
		return "TCP"
	case UDP:
		return "UDP"
	case SCTP:
		return "SCTP"
	case ICMP:
		return "ICMP"
	case ICMPv6:
		return "ICMPv6"
	case Unported:
		return "Unported"
	}
	return "Protocol(" + strconv.Itoa(int(p)) + ")"
}

// ParseProtocol accepts the Kubernetes spellings (TCP, UDP, SCTP) in any case.
func ParseProtocol(s string) (Protocol, error) {
	switch strings.ToUpper(s) {
	case "TCP":
		return TCP, nil
	case "UDP":
		return UDP, nil
	case "SCTP":
		return SCTP, nil
	}
	return 0, fmt.Errorf("unknown protocol %q (want TCP, UDP or SCTP)", s)
}

// Port is one destination port of one protocol.
type Port struct {
	Proto Protocol
	Num   uint16
}

func (p Port) String() string {
	return strconv.Itoa(int(p.Num)) + "/" + strings.ToLower(p.Proto.String())
}

// Range is an inclusive range of port numbers of one protocol. The zero range
// of a protocol (First 0, Last 0) never matches; AllPorts matches every port.
type Range struct {
	Proto       Protocol
	First, Last uint16
}

// AllPorts is every port of a protocol.
func AllPorts(p Protocol) Range { return Range{Proto: p, First: 0, Last: 65535} }

// Contains reports whether port p falls in r.
func (r Range) Contains(p Port) bool {
	return r.Proto == p.Proto && r.First <= p.Num && p.Num <= r.Last
}

func (r Range) String() string {
	proto := strings.ToLower(r.Proto.String())
	switch {
	case r.First == 0 && r.Last == 65535:
		return "any/" + proto
	case r.First == r.Last:
		return strconv.Itoa(int(r.First)) + "/" + proto
	}
	return strconv.Itoa(int(r.First)) + "-" + strconv.Itoa(int(r.Last)) + "/" + proto
}

// PortSpec is what a user types for a port: a number or a name, with an
// optional protocol ("80", "80/udp", "http", "dns/udp").
type PortSpec struct {
	Num   uint16
	Name  string
	Proto Protocol // 0 when the user gave none
}

// ParsePortSpec parses "N", "N/proto", "name" or "name/proto".
func ParsePortSpec(s string) (PortSpec, error) {
	var spec PortSpec
	value, proto, hasProto := strings.Cut(strings.TrimSpace(s), "/")
	if hasProto {
		p, err := ParseProtocol(proto)
		if err != nil {
			return spec, fmt.Errorf("port %q: %w", s, err)
		}
		spec.Proto = p
	}
	if value == "" {
		return spec, fmt.Errorf("port %q: empty port", s)
	}
	if n, err := strconv.Atoi(value); err == nil {
		if n < 1 || n > 65535 {
			return spec, fmt.Errorf("port %q: number must be 1-65535", s)
		}
		spec.Num = uint16(n)
		return spec, nil
	}
	spec.Name = value
	return spec, nil
}

// ParsePortProto parses a port given with its protocol beside it, as the
// Kubernetes API writes one ({port: 53, protocol: UDP}): protocol "" leaves
// the port's own, and a port that names a protocol must name the same.
// field is where protocol came from ("protocol", "--protocol"), for the
// error.
func ParsePortProto(port, protocol, field string) (PortSpec, error) {
	spec, err := ParsePortSpec(port)
	if err != nil || protocol == "" {
		return spec, err
	}
	p, err := ParseProtocol(protocol)
	if err != nil {
		return spec, fmt.Errorf("%s: %w", field, err)
	}
	if spec.Proto != 0 && spec.Proto != p {
		return spec, fmt.Errorf("port %q is %s, but %s says %s", port, spec.Proto, field, p)
	}
	spec.Proto = p
	return spec, nil
}

// PortValue is a port as a JSON or YAML document writes it: a number, as
// the Kubernetes API spells one (5432), or a string ("5432", "53/udp",
// "postgres"). It stays text for ParsePortSpec or ParsePortProto, which
// say what is wrong with it.
type PortValue string

// UnmarshalJSON accepts a number or a string.
func (v *PortValue) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*v = PortValue(s)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("port: %s is neither a number nor a string", b)
	}
	*v = PortValue(strconv.FormatInt(n, 10))
	return nil
}

func (s PortSpec) String() string {
	v := s.Name
	if v == "" {
		v = strconv.Itoa(int(s.Num))
	}
	if s.Proto != 0 {
		v += "/" + strings.ToLower(s.Proto.String())
	}
	return v
}

// ParsePortList parses a comma-separated list of numeric ports ("80/tcp,53/udp");
// a port without protocol means TCP.
func ParsePortList(s string) ([]Port, error) {
	var out []Port
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		spec, err := ParsePortSpec(f)
		if err != nil {
			return nil, err
		}
		if spec.Name != "" {
			return nil, fmt.Errorf("port %q: a list of ports takes numbers, not names", f)
		}
		if spec.Proto == 0 {
			spec.Proto = TCP
		}
		out = append(out, Port{Proto: spec.Proto, Num: spec.Num})
	}
	return out, nil
}

// Conn is one connection as the firewall judges it: the source before SNAT
// and the destination after DNAT (a Service's backend and target port, not
// its ClusterIP), which is where netpol's rules run.
type Conn struct {
	Proto    Protocol
	Src, Dst netip.AddrPort
	// Number is the IP protocol number of an Unported connection (47 for
	// GRE), 0 for the others.
	Number uint8
}

// Port is the destination port of c.
func (c Conn) Port() Port { return Port{Proto: c.Proto, Num: c.Dst.Port()} }

func (c Conn) String() string {
	proto := strings.ToLower(c.Proto.String())
	if c.Proto == Unported {
		proto = "ip protocol " + strconv.Itoa(int(c.Number))
	}
	return proto + " " + c.Src.String() + " -> " + c.Dst.String()
}
