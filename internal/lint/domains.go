package lint

import (
	"fmt"
	"strings"

	"github.com/netpol/netpol/internal/policy"
)

// clusterDomain is the default DNS domain of a cluster's Services and pods.
const clusterDomain = "cluster.local"

// domainNames reports what a domainNames peer does differently from what
// its author may expect (policy/domains.go has the semantics):
//   - the agent learns the addresses names stand for from the answers of
//     the cluster DNS, which it finds as the Service kube-system/kube-dns
//     (package dnsproxy): an input without that Service leaves it nothing
//     to learn from unless its flags name the servers (--dns-server), and
//     an allow-list of names followed by a Deny would deny the names.
//     Said nowhere else, nobody would know.
//   - in a Deny or Pass rule the API does not support the field: the peer
//     matches nothing, anywhere.
//   - a name in the cluster's own domain resolves to a Service's cluster IP,
//     which policy never sees after the translation.
func (l *linter) domainNames() {
	clusterDNS := l.e.Cluster().Service("kube-system", "kube-dns") != nil
	for _, p := range l.e.Policies().Policies() {
		for _, d := range policy.Directions {
			for _, r := range p.Rules[d] {
				for _, peer := range r.Peers {
					if peer.Kind != policy.PeerDomains {
						continue
					}
					field := peerField(r, peer.Index) + ".domainNames"
					names := policy.JoinDomains(peer.Domains, ", ")
					if !r.DomainsMatch() {
						l.add(Finding{Severity: Error, Code: CodeDomainNamesAction, Object: p.Ref, Origin: p.Origin, Field: field,
							Message: fmt.Sprintf("domainNames in a %s rule: the API supports them only in Allow (Accept) rules, so this peer matches no traffic, and connections to %s meet the rules after it",
								r.Action, names),
							Hint: "allow the names in an Allow rule above a lower-priority Deny; to deny addresses, use networks"})
						continue
					}
					if !clusterDNS {
						l.add(Finding{Severity: Warning, Code: CodeDomainNames, Object: p.Ref, Origin: p.Origin, Field: field,
							Message: fmt.Sprintf("the netpol agent learns the addresses of %s from the cluster DNS's answers, and the input has no Service kube-system/kube-dns to find it by: unless the agents run with --dns-server, this peer matches no traffic in the kernel, so those connections meet the rules after it",
								names),
							Hint: "give the agents --dns-server with the cluster DNS Service's addresses, or lint an input that holds the Service"})
					}
					for _, dp := range peer.Domains {
						if dp.Name == clusterDomain || strings.HasSuffix(dp.Name, "."+clusterDomain) {
							l.add(Finding{Severity: Warning, Code: CodeDomainNamesCluster, Object: p.Ref, Origin: p.Origin, Field: field,
								Message: fmt.Sprintf("%s is in the cluster's domain: a Service's name resolves to its cluster IP, which policy never sees (it applies after the Service translation, to the backends); only headless Services' names, which resolve to pod addresses, can match", dp),
								Hint:    "select the Service's backends with pods or namespaces peers"})
						}
					}
				}
			}
		}
	}
}
