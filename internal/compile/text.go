package compile

import (
	"fmt"
	"io"
	"net/netip"
	"strings"
	"text/tabwriter"

	"github.com/netpol/netpol/internal/jsontext"
	"github.com/netpol/netpol/internal/l4"
)

// MarshalJSON spells tier and ports out.
func (r Rule) MarshalJSON() ([]byte, error) {
	type plain Rule
	return jsontext.Marshal(struct {
		Tier  string   `json:"tier"`
		Ports []string `json:"ports,omitempty"`
		plain
	}{r.Tier.String(), rangeStrings(r.Ports), plain(r)})
}

// MarshalJSON adds the direction.
func (t *Table) MarshalJSON() ([]byte, error) {
	type plain Table
	return jsontext.Marshal(struct {
		Direction string `json:"direction"`
		*plain
	}{t.Dir.String(), (*plain)(t)})
}

// MarshalJSON writes "ip proto/port".
func (e Endpoint) MarshalJSON() ([]byte, error) {
	return jsontext.Marshal(e.String())
}

func (e Endpoint) String() string { return e.IP.String() + " " + e.Port.String() }

func rangeStrings(rs []l4.Range) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}

// WriteText prints the IR for people: each pod with its tables, each table
// as numbered 6-tuples in evaluation order, then the sets.
func WriteText(w io.Writer, ir *IR) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	domains := ""
	if len(ir.DomainSets) > 0 {
		domains = fmt.Sprintf(", %d domain sets", len(ir.DomainSets))
	}
	fmt.Fprintf(tw, "node %s: %d pods, %d tables, %d address sets, %d endpoint sets%s\n\n",
		ir.Node, len(ir.Pods), len(ir.Tables), len(ir.Sets), len(ir.EndpointSets), domains)
	for _, r := range ir.Refused {
		fmt.Fprintf(tw, "refused: %s\n", r.Error())
	}
	if len(ir.Refused) > 0 {
		fmt.Fprintln(tw)
	}
	fmt.Fprintln(tw, "POD\tADDRESSES\tINGRESS\tEGRESS")
	for _, p := range ir.Pods {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Pod, addrList(p.IPs), orAllow(p.Ingress), orAllow(p.Egress))
	}
	sets := map[string]string{}
	for _, s := range ir.Sets {
		sets[s.Name] = s.Key
	}
	for _, t := range ir.Tables {
		logOnly := ""
		if t.LogOnly {
			logOnly = ", log-only: staged policies"
		}
		fmt.Fprintf(tw, "\ntable %s (%s of %s%s)\n", t.Name, t.Dir, strings.Join(t.Pods, ", "), logOnly)
		fmt.Fprintln(tw, "#\tTIER\tACTION\tPEER\tPROTO/PORT\tFROM")
		for i, r := range t.Rules {
			peer, ports := "any", "any"
			switch {
			case r.Endpoints != "":
				peer, ports = r.Endpoints, "(in set)"
			case r.Peer != "":
				peer = r.Peer + " " + sets[r.Peer]
			case r.Domains != "":
				peer = r.Domains + " (learned from DNS)"
			}
			if len(r.Ports) > 0 {
				ports = strings.Join(rangeStrings(r.Ports), ",")
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s%s\n", i+1, r.Tier, r.Action, peer, ports, r.From, logText(r.Audit))
		}
		why := "nothing matched"
		if len(t.IsolatedBy) > 0 {
			var refs []string
			for _, r := range t.IsolatedBy {
				refs = append(refs, r.String())
			}
			why = "isolated by " + strings.Join(refs, ", ")
		}
		fmt.Fprintf(tw, "-\tDefault\t%s\tany\tany\t%s%s\n", t.Default, why, logText(t.DefaultAudit))
	}
	if len(ir.Sets) > 0 {
		fmt.Fprintln(tw, "\nSET\tSELECTION\tELEMENTS")
		for _, s := range ir.Sets {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Key, prefixList(s.Prefixes))
		}
	}
	if len(ir.DomainSets) > 0 {
		fmt.Fprintln(tw, "\nDOMAIN SET\tNAMES\tELEMENTS")
		for _, s := range ir.DomainSets {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, strings.Join(s.Patterns, ", "), "learned by the agent from DNS answers")
		}
	}
	if len(ir.EndpointSets) > 0 {
		fmt.Fprintln(tw, "\nENDPOINT SET\tSELECTION\tELEMENTS")
		for _, s := range ir.EndpointSets {
			var els []string
			for _, e := range s.Elements {
				els = append(els, e.String())
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Key, orNone(strings.Join(els, ", ")))
		}
	}
	return tw.Flush()
}

func orAllow(table string) string {
	if table == "" {
		return "- (no policy: allow)"
	}
	return table
}

func orNone(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}

func addrList(ips []netip.Addr) string {
	var s []string
	for _, ip := range ips {
		s = append(s, ip.String())
	}
	return strings.Join(s, ",")
}

// prefixList prints single addresses without their /32 or /128.
func prefixList(ps []netip.Prefix) string {
	var s []string
	for _, p := range ps {
		if p.IsSingleIP() {
			s = append(s, p.Addr().String())
		} else {
			s = append(s, p.String())
		}
	}
	return orNone(strings.Join(s, ", "))
}
