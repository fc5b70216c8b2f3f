package lint

import (
	"fmt"
	"strings"

	"github.com/netpol/netpol/internal/policy"
)

// domainNames reports every domainNames peer: netpol decides flows by
// address and does not learn which addresses a name stands for yet, so
// explain, matrix and the kernel leave such a peer out. Said nowhere else,
// an allow-list of names followed by a Deny would deny the names, silently.
func (l *linter) domainNames() {
	for _, p := range l.e.Policies().Policies() {
		for _, d := range policy.Directions {
			for _, r := range p.Rules[d] {
				for _, peer := range r.Peers {
					if peer.Kind != policy.PeerDomains {
						continue
					}
					l.add(Finding{Severity: Warning, Code: CodeDomainNames, Object: p.Ref, Origin: p.Origin,
						Field: peerField(r, peer.Index) + ".domainNames",
						Message: fmt.Sprintf("netpol does not enforce domainNames yet: this peer matches no traffic (explain, matrix and the kernel leave it out), so connections to %s meet the rules after it",
							strings.Join(peer.Domains, ", ")),
						Hint: "until then, allow the addresses the names resolve to with networks (and keep the names for implementations that enforce them)"})
				}
			}
		}
	}
}
