// Package audit turns the packets that the kernel logs for audited rules
// (package dataplane/nflog) into the agent's audit log: one JSON line per
// connection, naming the pods at both ends and the policy and rule that
// decided, or the policies that isolate the pod for an implicit
// NetworkPolicy deny. It sits beside the agent at the bottom of DESIGN.md's
// data flow: it reads the IR's audits (package compile) and the kernel's
// packets, and imports neither the engine nor the renderer.
//
// The kernel already limits each logged rule (render/nft); here repeats of
// one connection attempt (same source, destination, protocol, port and
// decision) within Window of its line are not written: the attempt's next
// line counts them ("repeats"). At most Rate lines a second are written;
// the next line written counts the ones dropped ("rateLimited").
package audit

import (
	"io"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/dataplane/nflog"
	"github.com/netpol/netpol/internal/jsontext"
	"github.com/netpol/netpol/internal/policy"
)

// Options of a Logger; zero values take the defaults.
type Options struct {
	// Window is how long a connection attempt's line stands for its repeats
	// (default 10s): a client retrying a denied connect every second gives
	// one line per window.
	Window time.Duration
	// Rate is the most lines written per second, with bursts of as many
	// (default 100).
	Rate int
	// Now is the clock (default time.Now); tests set it.
	Now func() time.Time
	// NamesOf, when set, gives the names a destination address was
	// learned from, from DNS answers on this node (dnsproxy): a line to
	// such an address says which domain it stood for.
	NamesOf func(netip.Addr) []string
}

// Line is one audit log line.
type Line struct {
	Time       time.Time       `json:"time"`
	Verdict    compile.Verdict `json:"verdict"`
	Direction  string          `json:"direction"`
	Src        End             `json:"src"`
	Dst        End             `json:"dst"`
	Protocol   string          `json:"protocol"`
	Port       uint16          `json:"port,omitempty"`
	Tier       string          `json:"tier"`
	Policy     *policy.Ref     `json:"policy,omitempty"`
	Rule       string          `json:"rule,omitempty"`
	IsolatedBy []policy.Ref    `json:"isolatedBy,omitempty"`
	// Repeats counts the same attempts folded into the previous line of
	// this connection since it was written.
	Repeats int `json:"repeats,omitempty"`
	// RateLimited counts lines of any connection dropped by the rate limit
	// since the previous line written.
	RateLimited int `json:"rateLimited,omitempty"`
}

// End is one end of a connection: its address, its pod when it is one,
// and the names DNS answers gave it when a domainNames rule learned it.
type End struct {
	Pod   string     `json:"pod,omitempty"`
	IP    netip.Addr `json:"ip"`
	Names []string   `json:"names,omitempty"`
}

// Logger writes audit lines. Update and Log may be called concurrently.
type Logger struct {
	w    io.Writer
	opts Options

	mu sync.Mutex
	// audits of the IR programmed last and of the one before: packets
	// logged just before a change arrive after it.
	audits, previous map[string]*compile.Audit
	podOf            func(netip.Addr) string
	seen             map[attempt]*folded
	pruned           time.Time
	tokens           float64
	refilled         time.Time
	rateLimited      int
	unknown          int // packets with a prefix no audit has
}

// attempt is what makes two logged packets the same connection attempt.
type attempt struct {
	src, dst netip.Addr
	proto    uint8
	port     uint16
	id       string
}

type folded struct {
	written time.Time
	repeats int
}

// New returns a Logger that writes to w.
func New(w io.Writer, opts Options) *Logger {
	if opts.Window <= 0 {
		opts.Window = 10 * time.Second
	}
	if opts.Rate <= 0 {
		opts.Rate = 100
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Logger{w: w, opts: opts, seen: map[attempt]*folded{}, tokens: float64(opts.Rate),
		podOf: func(netip.Addr) string { return "" }}
}

// Update sets what the kernel logs now (compile.Audits of the programmed
// IR) and how addresses map to pods ("namespace/name", or "").
func (l *Logger) Update(audits map[string]*compile.Audit, podOf func(netip.Addr) string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.previous, l.audits, l.podOf = l.audits, audits, podOf
}

// Unknown counts the packets whose prefix named no audit (not netpol's, or
// from rules older than the last two updates).
func (l *Logger) Unknown() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unknown
}

// Log writes the line of one logged packet, unless it repeats an attempt
// within the window or the rate limit is spent.
func (l *Logger) Log(p nflog.Packet) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.lookup(p.Prefix)
	if a == nil {
		l.unknown++
		return nil
	}
	now := l.opts.Now()
	l.prune(now)
	key := attempt{src: p.Src, dst: p.Dst, proto: p.Proto, port: p.DstPort, id: a.ID}
	f := l.seen[key]
	if f != nil && now.Sub(f.written) < l.opts.Window {
		f.repeats++
		return nil
	}
	if !l.take(now) {
		l.rateLimited++
		return nil
	}
	line := Line{Time: now, Verdict: a.Verdict, Direction: a.Direction,
		Src: End{Pod: l.podOf(p.Src), IP: p.Src}, Dst: End{Pod: l.podOf(p.Dst), IP: p.Dst},
		Protocol: protocolName(p.Proto), Port: p.DstPort,
		Tier: a.Tier, Policy: a.Policy, Rule: a.Rule, IsolatedBy: a.IsolatedBy,
		RateLimited: l.rateLimited}
	if f != nil {
		line.Repeats = f.repeats
	}
	if l.opts.NamesOf != nil && a.Direction == policy.Egress.String() {
		line.Dst.Names = l.opts.NamesOf(p.Dst)
	}
	if !p.Time.IsZero() {
		line.Time = p.Time
	}
	l.seen[key] = &folded{written: now}
	l.rateLimited = 0
	data, err := jsontext.Marshal(line)
	if err != nil {
		return err
	}
	_, err = l.w.Write(append(data, '\n'))
	return err
}

func (l *Logger) lookup(prefix string) *compile.Audit {
	id, ok := compile.AuditID(prefix)
	if !ok {
		return nil
	}
	if a := l.audits[id]; a != nil {
		return a
	}
	return l.previous[id]
}

// take spends one token of the rate limit, refilling Rate tokens a second.
func (l *Logger) take(now time.Time) bool {
	if !l.refilled.IsZero() {
		l.tokens = min(float64(l.opts.Rate), l.tokens+now.Sub(l.refilled).Seconds()*float64(l.opts.Rate))
	}
	l.refilled = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

// prune forgets, once a window, the attempts whose window has passed, so
// that memory follows recent connections only. An attempt with folded
// repeats is kept for keepRepeats windows, to count them on its next line;
// after that they are not reported.
func (l *Logger) prune(now time.Time) {
	if now.Sub(l.pruned) < l.opts.Window {
		return
	}
	for k, f := range l.seen {
		age := now.Sub(f.written)
		if age >= l.opts.Window && f.repeats == 0 || age >= keepRepeats*l.opts.Window {
			delete(l.seen, k)
		}
	}
	l.pruned = now
}

const keepRepeats = 6

func protocolName(p uint8) string {
	switch p {
	case 6:
		return "TCP"
	case 17:
		return "UDP"
	case 132:
		return "SCTP"
	case 1:
		return "ICMP"
	case 58:
		return "ICMPv6"
	}
	return "IP(" + strconv.Itoa(int(p)) + ")"
}

// Run logs what src delivers until src fails for good (closed). Lost and
// malformed messages are reported to onError and reading goes on.
func (l *Logger) Run(src nflog.Source, onError func(error)) error {
	return nflog.Drain(src, l.Log, onError)
}
