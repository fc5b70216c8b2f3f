// Package observed keeps the agent's record of observed traffic: every new
// connection of the node's pods that the kernel logs for it (IR.Record,
// render/nft's record chains), allowed or denied, folded into one entry
// per (source, destination, port, verdict) with counts and the first and
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
// Memory is bounded: past MaxFlows entries a connection of a new entry is
// counted as dropped, not kept. The kernel limits the log's rate.
package observed

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	// MaxFlows bounds the entries kept (default 10,000).
	MaxFlows int
	// Node is written in every entry: files of several nodes can be read
	// together.
	Node string
	// Now is the clock for packets without the kernel's timestamp.
	Now func() time.Time
}

// Stats count what the recorder saw.
type Stats struct {
	Flows       int    // entries kept
	Connections uint64 // connections recorded
	Dropped     uint64 // connections of new entries past MaxFlows
	Ignored     uint64 // packets not recorded: another prefix, or no port
}

// Recorder folds recorded connections into entries. Its methods may be
// called concurrently.
type Recorder struct {
	opts Options

	mu         sync.Mutex
	flows      map[key]*Flow
	endpointOf func(netip.Addr) string
	stats      Stats
}

// New returns an empty Recorder.
func New(opts Options) *Recorder {
	if opts.MaxFlows <= 0 {
		opts.MaxFlows = 10000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Recorder{opts: opts, flows: map[key]*Flow{}, endpointOf: func(netip.Addr) string { return "" }}
}

// Update sets how addresses are named: the workload of the pod that has
// the address, or "" for an address that is no pod's.
func (r *Recorder) Update(endpointOf func(netip.Addr) string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endpointOf = endpointOf
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
	if verdict == "" || !ok {
		r.stats.Ignored++ // ICMP and the like: no port a policy could name
		return
	}
	k := key{from: r.name(p.Src), to: r.name(p.Dst), port: l4.Port{Proto: proto, Num: p.DstPort}, verdict: verdict}
	at := p.Time
	if at.IsZero() {
		at = r.opts.Now()
	}
	r.add(k, 1, at, at)
}

// add folds count connections seen from first to last into k's entry.
func (r *Recorder) add(k key, count int, first, last time.Time) {
	f := r.flows[k]
	if f == nil {
		if len(r.flows) >= r.opts.MaxFlows {
			r.stats.Dropped += uint64(count)
			return
		}
		f = &Flow{From: k.from, To: k.to, Port: k.port.String(), Verdict: k.verdict, First: first, Last: last, Node: r.opts.Node}
		r.flows[k] = f
	}
	f.Count += count
	r.stats.Connections += uint64(count)
	if first.Before(f.First) {
		f.First = first
	}
	if last.After(f.Last) {
		f.Last = last
	}
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
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
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
			return fmt.Errorf("%s line %d: %w", path, line, err)
		}
		ps, err := l4.ParsePortList(f.Port)
		if err != nil || len(ps) != 1 || f.From == "" || f.To == "" || f.Count < 1 || (f.Verdict != Allow && f.Verdict != Deny) {
			return fmt.Errorf("%s line %d: not a recorded flow (from, to, one port, allow or deny, a positive count)", path, line)
		}
		r.add(key{from: f.From, to: f.To, port: ps[0], verdict: f.Verdict}, f.Count, f.First, f.Last)
	}
	return sc.Err()
}

// Run records what src delivers until src fails for good (closed). Lost
// and malformed messages are reported to onError and reading goes on.
func (r *Recorder) Run(src nflog.Source, onError func(error)) error {
	return nflog.Drain(src, func(p nflog.Packet) error { r.Record(p); return nil }, onError)
}
