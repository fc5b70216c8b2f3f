package policy

import (
	"encoding/binary"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/source"
)

// normalizer turns one object into a Policy, reporting what is wrong with it.
type normalizer struct {
	obj     source.Object
	r       diag.Reporter
	unknown []string
	sels    *selectors
}

// selector compiles a label selector; nil means "everything" here, callers
// decide what an absent selector means before calling.
func (n *normalizer) selector(field string, s *metav1.LabelSelector) Selector {
	if s == nil {
		return Everything
	}
	sel, err := n.sels.compile(s)
	if err != nil {
		n.r.Errorf(field, "invalid label selector: %v", err)
		return Selector{Selector: labels.Nothing(), Text: "<invalid>"}
	}
	return sel
}

// selectors compiles label selectors, each distinct one once: policies
// repeat a few selectors many times (the 100k-pod synthetic cluster's
// 75,000 NetworkPolicies hold 96 distinct pod selectors), and compiling
// one checks every key and value against regular expressions. The
// compiled selectors are shared: nothing writes to one.
type selectors struct {
	done map[string]compiledSelector // by selectorKey
	key  []byte
	keys []string
}

type compiledSelector struct {
	sel Selector
	err error
}

// compile is metav1.LabelSelectorAsSelector, with its canonical text. A
// nil *selectors compiles every time.
func (c *selectors) compile(s *metav1.LabelSelector) (Selector, error) {
	if c == nil {
		return compileSelector(s)
	}
	c.key, c.keys = selectorKey(c.key[:0], c.keys[:0], s)
	if done, ok := c.done[string(c.key)]; ok {
		return done.sel, done.err
	}
	sel, err := compileSelector(s)
	if c.done == nil {
		c.done = map[string]compiledSelector{}
	}
	c.done[string(c.key)] = compiledSelector{sel, err}
	return sel, err
}

func compileSelector(s *metav1.LabelSelector) (Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return Selector{}, err
	}
	return Selector{Selector: sel, Text: sel.String()}, nil
}

// selectorKey appends to key all that s holds, each string preceded by its
// length, so that two selectors have the same key only when they are
// equal: matchLabels sorted by key (a map has no order), then
// matchExpressions as written. keys is a buffer.
func selectorKey(key []byte, keys []string, s *metav1.LabelSelector) ([]byte, []string) {
	str := func(v string) {
		key = binary.AppendUvarint(key, uint64(len(v)))
		key = append(key, v...)
	}
	for k := range s.MatchLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	key = binary.AppendUvarint(key, uint64(len(keys)))
	for _, k := range keys {
		str(k)
		str(s.MatchLabels[k])
	}
	key = binary.AppendUvarint(key, uint64(len(s.MatchExpressions)))
	for _, e := range s.MatchExpressions {
		str(e.Key)
		str(string(e.Operator))
		key = binary.AppendUvarint(key, uint64(len(e.Values)))
		for _, v := range e.Values {
			str(v)
		}
	}
	return key, keys
}

// hasUnknown reports whether the decoder dropped an unknown field under path.
func (n *normalizer) hasUnknown(path string) bool {
	for _, u := range n.unknown {
		if strings.HasPrefix(u, path+".") {
			return true
		}
	}
	return false
}

// failClosed turns rule into its fail-closed form, the one the
// network-policy-api types demand for a peer that has no field netpol knows
// and netpol gives every invalid admin rule: an Allow rule matches nothing;
// a Deny or Pass rule denies all traffic.
func failClosed(rule *Rule) {
	rule.FailClosed = true
	rule.Peers, rule.Ports = nil, nil
	if rule.Action == Allow {
		rule.AllPeers, rule.AllPorts = false, false
		return
	}
	rule.Action = Deny
	rule.AllPeers, rule.AllPorts = true, true
}

// failClosedMeans says what failClosed makes of a rule of action a.
func failClosedMeans(a Action) string {
	if a == Allow {
		return "this Allow rule matches nothing"
	}
	return "this " + a.String() + " rule now denies all traffic"
}

// cidr parses a CIDR, masking host bits (with a warning, as the API server
// accepts them).
func (n *normalizer) cidr(field, s string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		n.r.Errorf(field, "invalid CIDR %q: %v", s, err)
		return netip.Prefix{}, false
	}
	if m := p.Masked(); m != p {
		n.r.Warnf(field, "%s has host bits set; it means %s", s, m)
		p = m
	}
	return p, true
}

func (n *normalizer) portNumber(field string, v int32) (uint16, bool) {
	if v < 1 || v > 65535 {
		n.r.Errorf(field, "must be between 1 and 65535, got %d", v)
		return 0, false
	}
	return uint16(v), true
}

func (n *normalizer) protocol(field, s string) (l4.Protocol, bool) {
	if s == "" {
		return l4.TCP, true
	}
	p, err := l4.ParseProtocol(s)
	if err != nil || s != strings.ToUpper(s) {
		n.r.Errorf(field, "unsupported value %q: supported values: \"TCP\", \"UDP\", \"SCTP\"", s)
		return 0, false
	}
	return p, true
}

func (n *normalizer) portName(field, name string) bool {
	if errs := validation.IsValidPortName(name); len(errs) > 0 {
		n.r.Errorf(field, "invalid port name %q: %s", name, strings.Join(errs, "; "))
		return false
	}
	return true
}

func (n *normalizer) maxItems(field string, got, max int) {
	if got > max {
		n.r.Errorf(field, "must have at most %d items, got %d", max, got)
	}
}

func (n *normalizer) ruleName(field, name string) {
	// Characters, as the API server counts maxLength, not bytes: what it
	// stores must not be refused here.
	if c := utf8.RuneCountInString(name); c > 100 {
		n.r.Errorf(field, "must be no more than 100 characters, got %d", c)
	}
}

// priority checks an admin policy's priority, and returns it, or 0 when
// it is out of range: the policy's place is then unknown, and the first
// place it could have denies first (admin.go).
func (n *normalizer) priority(field string, p int32) int32 {
	if p < 0 || p > 1000 {
		n.r.Errorf(field, "must be between 0 and 1000, got %d", p)
		return 0
	}
	return p
}

func (n *normalizer) ref(kind string) Ref {
	return Ref{Kind: kind, Namespace: n.obj.Namespace, Name: n.obj.Name}
}

func idx(field string, i int) string { return field + "[" + strconv.Itoa(i) + "]" }
