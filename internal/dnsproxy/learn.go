// Package dnsproxy makes domainNames rules real on a node: it holds every
// DNS answer on its way to a pod that a domainNames rule governs, puts the
// addresses the answer gives for a name that a rule mentions into that
// rule's nftables sets (compile.DomainSet, d-<hash>-4/-6 in table inet
// netpol) with a timeout from the answer's TTL, and only then lets the
// answer go on. The first connection the pod makes with the answer is
// already allowed: there is no race between learning and connecting.
//
// How answers are held (divert.go): the query is left alone, so the
// kernel judges the pod's egress to the DNS backend, and that backend's
// ingress, exactly as for any other connection. The answer, a UDP reply
// from port 53 of a configured DNS server (the cluster DNS Service's
// addresses, as the pod asked them, before kube-proxy's translation) to a
// local pod that a domainNames rule governs, is diverted with TPROXY to
// this package's socket; the proxy sends the same bytes on from the same
// source address and port once the sets are written. Only those answers
// teach: a pod cannot make the node learn an address from a server of its
// own, and what else reaches the socket's port is dropped before it
// (divert.go). Of those, only an answer to a query the pod sent teaches
// (queries.go), and never an address of the cluster's own or of no host
// (Scope.Cluster, neverLearned): domainNames are for what is outside.
//
// Fail-static: the divert rule only matches while the element of the set
// "alive", which the proxy refreshes every second, is there (timeout 5 s).
// An agent that stops (SIGTERM) deletes the divert table: answers go
// straight to the pods at once. An agent that dies or hangs leaves the
// rule for up to 5 s, and TPROXY drops the answers it cannot hand to a
// live socket (the pod's resolver asks again: glibc after 5 s); then
// answers go straight to the pods. Either way DNS keeps working, the
// addresses learned stay until their timeouts expire, and names resolved
// after that are not learned: connections to them are denied, as the
// Deny below the Allow decides.
//
// Sets are per rule, not per pod: an address that one pod's answer taught
// is allowed to every local pod whose rule names the same names, as the
// rule says it should be for any of them that resolve the name.
//
// DNS over TCP is not diverted (a stream cannot be held packet by packet).
// Instead, a truncated UDP answer for a name a rule names is held while
// the proxy asks the same server the same question over TCP itself (from
// the node, through the Service) and learns the full answer's addresses;
// then the truncated answer goes on, and the pod's own TCP retry finds
// them programmed. A server the node cannot reach over TCP (its ingress
// denies the node) is counted (netpol_dns_tcp_asks_failed_total), and the
// addresses only its TCP answer gives are denied, never allowed.
//
// It is a front end's part: it imports dns, dataplane, compile and policy,
// and only agent and cli import it.
package dnsproxy

import (
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/dataplane"
	"github.com/netpol/netpol/internal/dns"
	"github.com/netpol/netpol/internal/policy"
)

// Limits are the bounds on what answers may make the node learn.
type Limits struct {
	// MinTTL and MaxTTL clamp an answer's TTL into the timeout of the
	// addresses it teaches: a TTL of 0 would expire before the pod
	// connects, a TTL of a week would outlive the name's owner.
	MinTTL, MaxTTL time.Duration
	// MaxAddresses bounds the addresses learned and not expired on the
	// node, over all sets, and with them the names kept for them (the
	// audit log's): every name of an address past its first counts as
	// one more. An answer that would go past it teaches only what fits,
	// and the proxy says so (Stats.CapHits).
	MaxAddresses int
	// MaxNamesPerAddress bounds the names kept for one address: past it,
	// a new name takes the place of the one that expires first.
	MaxNamesPerAddress int
}

// DefaultLimits are the limits of the agent's flags.
var DefaultLimits = Limits{MinTTL: 30 * time.Second, MaxTTL: time.Hour, MaxAddresses: 100_000, MaxNamesPerAddress: 16}

// target is one domain set: the names its rule allows.
type target struct {
	set      string
	patterns []policy.DomainPattern
}

// learner turns answers into set elements. It is the proxy's logic without
// sockets or kernel, so tests can drive it alone.
type learner struct {
	limits Limits
	write  func([]dataplane.Element) error // dataplane.Elements.Write, in the proxy
	now    func() time.Time

	mu      sync.Mutex
	targets []target
	cluster func(netip.Addr) bool // the cluster's own addresses: never learned
	// learned are the addresses in the kernel's sets and when each
	// expires there (the kernel removes it then; this copy is how the cap
	// is counted).
	learned map[learnedKey]time.Time
	// names are the names each learned address was an answer for, and
	// until when (the audit log says which domain a connection went to).
	names      map[netip.Addr]map[string]time.Time
	namesCount int       // the entries of names, over all addresses
	swept      time.Time // when expire last ran
	stats      Stats
}

type learnedKey struct {
	set  string
	addr netip.Addr
}

// Stats count what the proxy did since it started.
type Stats struct {
	Answers    uint64 // answers diverted and sent on
	Unreadable uint64 // answers that were not DNS responses the parser reads: sent on, nothing learned
	Learned    uint64 // addresses written into a set (again, when refreshed)
	Expired    uint64 // addresses whose timeout passed
	CapHits    uint64 // addresses not learned because MaxAddresses were
	Errors     uint64 // kernel writes that failed: the answer went on, nothing was learned
	AskFailed  uint64 // truncated answers whose question the proxy could not ask again over TCP
	Unasked    uint64 // answers that answer no query a pod sent (or the proxy asked): sent on, nothing learned
	Refused    uint64 // datagrams on the proxy's socket that the divert did not deliver: dropped
	Never      uint64 // addresses not learned because they are the cluster's own or no host's
	// QueriesLost are the log messages of queries the kernel dropped (the
	// log socket was full): their answers teach nothing.
	QueriesLost uint64
	Addresses   int // addresses learned and not expired now
	Names       int // names and wildcards of the domainNames rules learned for
}

func newLearner(limits Limits, write func([]dataplane.Element) error) *learner {
	if limits.MaxNamesPerAddress <= 0 {
		limits.MaxNamesPerAddress = DefaultLimits.MaxNamesPerAddress
	}
	return &learner{limits: limits, write: write, now: time.Now, learned: map[learnedKey]time.Time{},
		names: map[netip.Addr]map[string]time.Time{}}
}

// setTargets replaces the domain sets that answers are learned into.
// Learned addresses of sets that are gone are forgotten (the renderer
// deleted the sets with them).
func (l *learner) setTargets(sets []*compile.DomainSet, cluster func(netip.Addr) bool) {
	targets := make([]target, 0, len(sets))
	names := map[string]bool{}
	for _, s := range sets {
		t := target{set: s.Name}
		for _, p := range s.Patterns {
			t.patterns = append(t.patterns, policy.ParseDomainPattern(p))
		}
		targets = append(targets, t)
		names[s.Name] = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.targets, l.cluster = targets, cluster
	l.stats.Names = 0
	for _, t := range targets {
		l.stats.Names += len(t.patterns)
	}
	for k := range l.learned {
		if !names[k.set] {
			delete(l.learned, k)
		}
	}
}

// learn writes the addresses that answer msg gives into the sets of the
// rules that name the asked name, and returns when the kernel holds them
// (or refused them). It returns the answer, and whether a rule names it
// and asked says it answers a question that was asked (a pod's query, or
// the proxy's own); an error when msg is not a response it reads.
func (l *learner) learn(msg []byte, asked func(dns.Answer) bool) (dns.Answer, bool, error) {
	a, err := dns.ParseResponse(msg)
	if err != nil {
		l.mu.Lock()
		l.stats.Answers++
		l.stats.Unreadable++
		l.mu.Unlock()
		return a, false, err
	}
	ok := asked(a) // before l.mu: it may read the query log
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stats.Answers++
	if !ok {
		l.stats.Unasked++
		return a, false, nil
	}
	var matched []target // the rules that name the asked name
	for _, t := range l.targets {
		if matchesAny(t.patterns, a.Name) {
			matched = append(matched, t)
		}
	}
	named := len(matched) > 0
	if a.RCode != 0 || len(a.Addrs) == 0 || !named {
		return a, named, nil
	}
	now := l.now()
	if now.Sub(l.swept) >= time.Second {
		l.expire(now) // at most once a second: a sweep reads every address
	}
	var elems []dataplane.Element
	var keys []learnedKey
	var until []time.Time
	fresh := 0 // addresses of keys not learned before
	addrs := make([]dns.Address, 0, len(a.Addrs))
	for _, ad := range a.Addrs {
		if neverLearned(ad.IP) || l.cluster != nil && l.cluster(ad.IP) {
			l.stats.Never++
			continue
		}
		addrs = append(addrs, ad)
	}
	for _, t := range matched {
		for _, ad := range addrs {
			timeout := min(max(time.Duration(ad.TTL)*time.Second, l.limits.MinTTL), l.limits.MaxTTL)
			k := learnedKey{t.set, ad.IP}
			if _, known := l.learned[k]; !known {
				if l.kept()+fresh >= l.limits.MaxAddresses && !l.swept.Equal(now) {
					l.expire(now) // the expired ones may make room
				}
				if l.kept()+fresh >= l.limits.MaxAddresses {
					l.stats.CapHits++
					continue
				}
				fresh++
			}
			set := t.set + "-4"
			if ad.IP.Is6() {
				set = t.set + "-6"
			}
			elems = append(elems, dataplane.Element{Set: set, Prefix: netip.PrefixFrom(ad.IP, ad.IP.BitLen()), Timeout: timeout})
			keys, until = append(keys, k), append(until, now.Add(timeout))
		}
	}
	if len(elems) == 0 {
		return a, named, nil
	}
	if err := l.write(elems); err != nil {
		l.stats.Errors++
		return a, named, nil
	}
	for i, k := range keys {
		l.learned[k] = until[i]
		l.name(k.addr, a.Name, until[i])
	}
	l.stats.Learned += uint64(len(elems))
	return a, named, nil
}

// kept is what counts toward Limits.MaxAddresses: the addresses learned
// and the names kept for them past the first (which the address's entry
// stands for). l.mu is held.
func (l *learner) kept() int { return len(l.learned) + l.namesCount - len(l.names) }

// name keeps name as one that taught addr, until. An address keeps at
// most MaxNamesPerAddress names: a new one takes the place of the one
// that expires first, if that expires before it; and no name is kept
// past the node's cap. l.mu is held.
func (l *learner) name(addr netip.Addr, name string, until time.Time) {
	byName := l.names[addr]
	if t, ok := byName[name]; ok {
		if until.After(t) {
			byName[name] = until
		}
		return
	}
	if len(byName) >= l.limits.MaxNamesPerAddress {
		first, firstAt := "", time.Time{}
		for n, t := range byName {
			if first == "" || t.Before(firstAt) {
				first, firstAt = n, t
			}
		}
		if !firstAt.Before(until) {
			return
		}
		delete(byName, first)
		l.namesCount--
	} else if len(byName) > 0 && l.kept() >= l.limits.MaxAddresses {
		l.stats.CapHits++
		return
	}
	if byName == nil {
		byName = map[string]time.Time{}
		l.names[addr] = byName
	}
	byName[name] = until
	l.namesCount++
}

// refused counts a datagram the divert did not deliver.
func (l *learner) refused() {
	l.mu.Lock()
	l.stats.Refused++
	l.mu.Unlock()
}

// neverLearned reports whether a is an address of no host a domain name
// may stand for: loopback, link-local (169.254/16, fe80::/10: the cloud's
// metadata service among them), multicast, unspecified, 0/8, the
// reserved 240/4 with the broadcast address, and IPv4 written as IPv6.
func neverLearned(a netip.Addr) bool {
	if a.Is4() {
		b := a.As4()
		if b[0] == 0 || b[0] >= 240 {
			return true
		}
	}
	return !a.IsValid() || a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsMulticast() || a.IsUnspecified() || a.Is4In6()
}

// capHits is Stats().CapHits, without the sweep.
func (l *learner) capHits() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats.CapHits
}

// failedAsk counts a question the proxy could not ask again over TCP.
func (l *learner) failedAsk() {
	l.mu.Lock()
	l.stats.AskFailed++
	l.mu.Unlock()
}

// expire forgets the addresses whose timeout passed: the kernel removed
// them from its sets.
func (l *learner) expire(now time.Time) {
	l.swept = now
	for k, t := range l.learned {
		if !t.After(now) {
			delete(l.learned, k)
			l.stats.Expired++
		}
	}
	for addr, byName := range l.names {
		for name, t := range byName {
			if !t.After(now) {
				delete(byName, name)
				l.namesCount--
			}
		}
		if len(byName) == 0 {
			delete(l.names, addr)
		}
	}
}

// NamesOf returns the names whose answers taught addr and have not
// expired, sorted.
func (l *learner) NamesOf(addr netip.Addr) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	var out []string
	for name, t := range l.names[addr.Unmap()] {
		if t.After(now) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Stats returns what the learner did so far.
func (l *learner) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(l.now())
	s := l.stats
	s.Addresses = len(l.learned)
	return s
}

func matchesAny(patterns []policy.DomainPattern, name string) bool {
	for _, p := range patterns {
		if p.Matches(name) {
			return true
		}
	}
	return false
}
