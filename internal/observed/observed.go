// Package observed keeps the agent's record of observed traffic: every new
// connection of the node's pods that the kernel logs for it (IR.Record,
// render/nft's record chains: once per source, destination, protocol and
// port a window), allowed or denied, folded into one entry per (source,
// destination, port, verdict) with a count of the lines and the first and
// last time seen. Ends are named by workload (state.Pod.Workload:
// "namespace/Kind/name", which outlives a rollout's pod names), a bare
// pod by its name, anything else by its address. `netpol suggest --flows`
// reads the file it writes.
//
// It sits beside the agent at the bottom of DESIGN.md's data flow, as
// package audit does: it reads the kernel's packets (dataplane/nflog) and
// the prefixes the renderer gives them, and imports neither the engine nor
// the cluster state: the agent tells it how addresses map to workloads.
//
// Memory is bounded, and no source can crowd out the others: past
// MaxPerSource entries of one source (sources that are no pod's share one
// budget), or MaxFlows entries of a verdict, a connection of a new entry
// is counted as dropped, not kept. The kernel limits the log's rate.
package observed

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/netpol/netpol/internal/dataplane/nflog"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/render/nft"
)

// Verdicts of a recorded connection.
const (
	Allow = "allow"
	Deny  = "deny"
)

// Flow is one entry of the record: a line of its file.
type Flow struct {
	From    string    `json:"from"`
	To      string    `json:"to"`
	Port    string    `json:"port"` // 5432/tcp
	Verdict string    `json:"verdict"`
	Count   int       `json:"count"`
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`
	Node    string    `json:"node,omitempty"`
}

type key struct {
	from, to string
	port     l4.Port
	verdict  string
}

// Options of a Recorder; zero values take the defaults.
type Options struct {
	// MaxFlows bounds the entries kept of each verdict (default 10,000):
	// a port scan's denied entries take no room from the allowed ones
	// that policies are written from.
	MaxFlows int
	// MaxPerSource bounds the entries of one source end and verdict
	// (default 512): one workload's port or address scan fills its own
	// budget, not the node's, and every address that is no pod's counts
	// as one source (a scan from outside is one source however many
	// addresses it spoofs).
	MaxPerSource int
	// Node is written in every entry: files of several nodes can be read
	// together.
	Node string
	// Now is the clock for packets without the kernel's timestamp.
	Now func() time.Time
}

// Stats count what the recorder saw.
type Stats struct {
	Flows       int    // entries kept
	Connections uint64 // lines recorded: a flow's connections, once per kernel window (nft.RecordWindow)
	Dropped     uint64 // lines of new entries past MaxFlows
	Ignored     uint64 // packets not recorded: another prefix, or no port
}

// Recorder folds recorded connections into entries. Its methods may be
// called concurrently.
type Recorder struct {
	opts Options

	mu    sync.Mutex
	flows map[key]*Flow
	kept  map[string]int // entries by verdict
	// bySource counts entries by source budget and verdict.
	bySource   map[sourceBudget]int
	endpointOf func(netip.Addr) string
	stats      Stats
	// changes counts what changed the entries; saved is its value at the
	// last save (SaveIfChanged), none before the first.
	changes uint64
	saved   *uint64
}

// New returns an empty Recorder.
func New(opts Options) *Recorder {
	if opts.MaxFlows <= 0 {
		opts.MaxFlows = 10000
	}
	if opts.MaxPerSource <= 0 {
		opts.MaxPerSource = 512
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Recorder{opts: opts, flows: map[key]*Flow{}, kept: map[string]int{}, bySource: map[sourceBudget]int{},
		endpointOf: func(netip.Addr) string { return "" }}
}

// Update sets how addresses are named from now on: the workload of the
// pod that has the address, or "" for an address that is no pod's.
// Entries already recorded keep their names: an address that a pass gives
// to a pod was not that pod's when the packet was logged (a pod not yet
// programmed, whose packets the kernel denied, or a spoofed source), and
// the pod's workload must not be credited with it.
func (r *Recorder) Update(endpointOf func(netip.Addr) string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endpointOf = endpointOf
}

// sourceBudget is what MaxPerSource counts entries by.
type sourceBudget struct {
	source, verdict string
}

// budget is the budget of k's source: its workload or pod, or one for
// every address that is no pod's.
func budget(k key) sourceBudget {
	if _, err := netip.ParseAddr(k.from); err == nil {
		return sourceBudget{"", k.verdict}
	}
	return sourceBudget{k.from, k.verdict}
}

func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Record folds one logged packet into its entry.
func (r *Recorder) Record(p nflog.Packet) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var verdict string
	switch p.Prefix {
	case nft.RecordAllowPrefix:
		verdict = Allow
	case nft.RecordDenyPrefix:
		verdict = Deny
	}
	proto, ok := protocols[p.Proto]
	if verdict == "" || !ok || p.DstPort == 0 {
		r.stats.Ignored++ // ICMP and the like, port 0: no port a policy could name
		return
	}
	k := key{from: r.name(p.Src), to: r.name(p.Dst), port: l4.Port{Proto: proto, Num: p.DstPort}, verdict: verdict}
	at := p.Time
	if at.IsZero() {
		at = r.opts.Now()
	}
	if r.add(k, 1, at, at) {
		r.stats.Connections++
	} else {
		r.stats.Dropped++
	}
}

// add folds count lines seen from first to last into k's entry; it
// reports false when a new entry would pass its verdict's bound.
func (r *Recorder) add(k key, count int, first, last time.Time) bool {
	f := r.flows[k]
	if f == nil {
		b := budget(k)
		if r.kept[k.verdict] >= r.opts.MaxFlows || r.bySource[b] >= r.opts.MaxPerSource {
			return false
		}
		f = &Flow{From: k.from, To: k.to, Port: k.port.String(), Verdict: k.verdict, First: first, Last: last, Node: r.opts.Node}
		r.flows[k] = f
		r.kept[k.verdict]++
		r.bySource[b]++
	}
	f.Count = Sum(f.Count, count)
	f.First, f.Last = earlier(f.First, first), later(f.Last, last)
	r.changes++
	return true
}

// Sum adds counts, saturating at the largest int: a count read from a
// file may be anything.
func Sum(a, b int) int {
	if b > 0 && a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

func (r *Recorder) name(a netip.Addr) string {
	if n := r.endpointOf(a); n != "" {
		return n
	}
	return a.Unmap().String()
}

var protocols = map[uint8]l4.Protocol{6: l4.TCP, 17: l4.UDP, 132: l4.SCTP}

// Stats returns the recorder's counts.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Flows = len(r.flows)
	return s
}

// Flows returns the entries, sorted by source, destination, port and
// verdict.
func (r *Recorder) Flows() []Flow {
	r.mu.Lock()
	out := make([]Flow, 0, len(r.flows))
	for _, f := range r.flows {
		out = append(out, *f)
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Flow) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.To, b.To), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Verdict, b.Verdict))
	})
	return out
}

// WriteTo writes the entries as JSON lines (Flows' order).
func (r *Recorder) WriteTo(w io.Writer) (int64, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, f := range r.Flows() {
		if err := enc.Encode(f); err != nil {
			return 0, err
		}
	}
	return buf.WriteTo(w)
}

// SaveIfChanged is Save when the entries changed since the last
// SaveIfChanged: an idle node does not rewrite and sync its record every
// interval. It reports whether it saved.
func (r *Recorder) SaveIfChanged(path string) (bool, error) {
	r.mu.Lock()
	changes, same := r.changes, r.saved != nil && *r.saved == r.changes
	r.mu.Unlock()
	if same {
		return false, nil
	}
	if err := r.Save(path); err != nil {
		return false, err
	}
	r.mu.Lock()
	r.saved = &changes
	r.mu.Unlock()
	return true, nil
}

// Save replaces the file at path with the entries, atomically: a reader
// never sees half a record, and a crash while saving keeps the last one.
func (r *Recorder) Save(path string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := r.WriteTo(tmp); err != nil {
		tmp.Close()
		return err
	}
	// On disk before the rename, and the rename on disk after it: a
	// power loss leaves the last record or this one, never an empty file.
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
}

// Load folds the entries of a file that Save wrote (an agent's record
// before it restarted) into the recorder; a missing file is an empty one.
// Errors name the line.
func (r *Recorder) Load(path string) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var f Flow
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			return &DamagedError{fmt.Errorf("%s line %d: %w", path, line, err)}
		}
		port, err := ParsePort(f.Port)
		if err == nil {
			err = f.Check()
		}
		if err != nil {
			return &DamagedError{fmt.Errorf("%s line %d: not a recorded flow (from, to, one port, allow or deny, a positive count)", path, line)}
		}
		r.add(key{from: f.From, to: f.To, port: port, verdict: f.Verdict}, f.Count, f.First, f.Last)
	}
	return sc.Err()
}

// DamagedError is a record file that is not one Save wrote.
type DamagedError struct{ error }

func (e *DamagedError) Unwrap() error { return e.error }

// Continue is Load for an agent that starts: a damaged file (one Load
// refuses) is moved aside, next to it with a suffix, and returned, so that
// recording starts anew and a reader can still look at what it held.
// Other errors (the file cannot be read) are returned.
func (r *Recorder) Continue(path string) (movedAside string, err error) {
	err = r.Load(path)
	var damaged *DamagedError
	if !errors.As(err, &damaged) {
		return "", err
	}
	r.mu.Lock()
	clear(r.flows)
	clear(r.kept)
	clear(r.bySource)
	r.changes++
	r.mu.Unlock()
	aside := path + ".damaged-" + r.opts.Now().UTC().Format("20060102T150405Z")
	if rerr := os.Rename(path, aside); rerr != nil {
		return "", fmt.Errorf("%w; moving it aside: %v", err, rerr)
	}
	return aside, nil
}

// ParsePort reads a recorded flow's port: one port a policy can name, as
// 8080/tcp (not 0, which Record never keeps).
func ParsePort(s string) (l4.Port, error) {
	ps, err := l4.ParsePortList(s)
	if err != nil || len(ps) != 1 || ps[0].Num == 0 {
		return l4.Port{}, fmt.Errorf("port %q: want one port, as 8080/tcp", s)
	}
	return ps[0], nil
}

// Check reports what makes f no recorded flow: an end missing, a verdict
// other than allow or deny, a count below 1. Its port is ParsePort's to
// read (a reader of many lines keeps what it read).
func (f Flow) Check() error {
	switch {
	case f.From == "" || f.To == "":
		return fmt.Errorf("a recorded flow needs from and to")
	case f.Verdict != Allow && f.Verdict != Deny:
		// A missing verdict is not taken for "allow": a misspelt key
		// would turn denied traffic into policy.
		return fmt.Errorf("verdict %q: want allow or deny", f.Verdict)
	case f.Count < 1:
		return fmt.Errorf("count %d: want a positive number", f.Count)
	}
	return nil
}

// Run records what src delivers until src fails for good (closed). Lost
// and malformed messages are reported to onError and reading goes on.
func (r *Recorder) Run(src nflog.Source, onError func(error)) error {
	return nflog.Drain(src, func(p nflog.Packet) error { r.Record(p); return nil }, onError)
}
