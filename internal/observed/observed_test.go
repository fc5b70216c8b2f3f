package observed_test

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netpol/netpol/internal/dataplane/nflog"
	"github.com/netpol/netpol/internal/observed"
	"github.com/netpol/netpol/internal/render/nft"
)

var (
	web1 = netip.MustParseAddr("198.18.0.1")
	web2 = netip.MustParseAddr("198.18.0.2")
	db   = netip.MustParseAddr("198.18.0.3")
	ext  = netip.MustParseAddr("198.19.9.9")
	t0   = time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)
)

func workloads(a netip.Addr) string {
	return map[netip.Addr]string{web1: "shop/Deployment/web", web2: "shop/Deployment/web", db: "shop/db-0"}[a]
}

func pkt(prefix string, src, dst netip.Addr, proto uint8, port uint16, at time.Duration) nflog.Packet {
	return nflog.Packet{Prefix: prefix, Src: src, Dst: dst, Proto: proto, DstPort: port, Time: t0.Add(at)}
}

// TestRecord: connections of one workload to one destination, port and
// verdict fold into one entry whatever pod made them; ends that are no
// pod's are addresses; ICMP and other prefixes are not recorded.
func TestRecord(t *testing.T) {
	r := observed.New(observed.Options{Node: "node-1"})
	r.Update(workloads)
	for _, p := range []nflog.Packet{
		pkt(nft.RecordAllowPrefix, web1, db, 6, 5432, 0),
		pkt(nft.RecordAllowPrefix, web2, db, 6, 5432, 3*time.Second),
		pkt(nft.RecordAllowPrefix, web1, db, 6, 5432, time.Second),
		pkt(nft.RecordDenyPrefix, web1, db, 6, 22, 2*time.Second),
		pkt(nft.RecordAllowPrefix, db, ext, 17, 53, 4*time.Second),
		pkt(nft.RecordAllowPrefix, web1, db, 1, 0, 5*time.Second), // ICMP
		pkt("np:0123456789ab:", web1, db, 6, 5432, 6*time.Second), // the audit's
		pkt(nft.RecordAllowPrefix, web1, db, 6, 0, 7*time.Second), // port 0: no policy names it
	} {
		r.Record(p)
	}
	var got strings.Builder
	if _, err := r.WriteTo(&got); err != nil {
		t.Fatal(err)
	}
	want := `{"from":"shop/Deployment/web","to":"shop/db-0","port":"22/tcp","verdict":"deny","count":1,"first":"2026-11-25T01:00:02Z","last":"2026-11-25T01:00:02Z","node":"node-1"}
{"from":"shop/Deployment/web","to":"shop/db-0","port":"5432/tcp","verdict":"allow","count":3,"first":"2026-11-25T01:00:00Z","last":"2026-11-25T01:00:03Z","node":"node-1"}
{"from":"shop/db-0","to":"198.19.9.9","port":"53/udp","verdict":"allow","count":1,"first":"2026-11-25T01:00:04Z","last":"2026-11-25T01:00:04Z","node":"node-1"}
`
	if got.String() != want {
		t.Errorf("record:\n%s\nwant:\n%s", got.String(), want)
	}
	if s := r.Stats(); s != (observed.Stats{Flows: 3, Connections: 5, Ignored: 3}) {
		t.Errorf("stats %+v", s)
	}
}

// TestAdversarialRecordNamesByProgrammedAddresses: an end is named by the
// pods the agent had programmed when the packet was logged. A packet from
// an address no pod had then (a pod not yet programmed, which the kernel
// denies, or a spoofed source) stays recorded by its address after a pass
// gives the address to a pod: suggest must never allow that pod's
// workload for what someone else did with the address before.
func TestAdversarialRecordNamesByProgrammedAddresses(t *testing.T) {
	r := observed.New(observed.Options{})
	r.Update(func(a netip.Addr) string {
		if a == web2 {
			return "" // not a pod's yet
		}
		return workloads(a)
	})
	r.Record(pkt(nft.RecordAllowPrefix, web1, db, 6, 5432, 0))
	r.Record(pkt(nft.RecordDenyPrefix, web2, db, 6, 5432, time.Second))
	r.Record(pkt(nft.RecordAllowPrefix, db, web2, 6, 8080, 2*time.Second))
	r.Update(workloads)
	r.Record(pkt(nft.RecordAllowPrefix, web2, db, 6, 5432, 3*time.Second))
	var got []string
	for _, f := range r.Flows() {
		got = append(got, fmt.Sprintf("%s -> %s %s %s x%d", f.From, f.To, f.Port, f.Verdict, f.Count))
	}
	want := []string{
		"198.18.0.2 -> shop/db-0 5432/tcp deny x1",
		"shop/Deployment/web -> shop/db-0 5432/tcp allow x2",
		"shop/db-0 -> 198.18.0.2 8080/tcp allow x1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("after the pass:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestAdversarialRecordScanKeepsOthers: one source's port scan uses up its
// own budget, not the node's: the flows of other workloads recorded after
// it are kept, and the scanner's excess is counted as dropped.
func TestAdversarialRecordScanKeepsOthers(t *testing.T) {
	r := observed.New(observed.Options{MaxFlows: 10000, MaxPerSource: 100})
	r.Update(workloads)
	scanner := netip.MustParseAddr("198.18.0.66") // no pod's: outside sources share one budget
	for port := 1; port <= 20000; port++ {
		r.Record(pkt(nft.RecordAllowPrefix, web1, db, 6, uint16(port%65535+1), 0))
		r.Record(pkt(nft.RecordAllowPrefix, scanner, db, 6, uint16(port%65535+1), 0))
	}
	r.Record(pkt(nft.RecordAllowPrefix, db, ext, 6, 443, time.Second))
	r.Record(pkt(nft.RecordDenyPrefix, db, ext, 6, 25, time.Second))
	s := r.Stats()
	if s.Flows != 202 || s.Dropped != 2*(20000-100) {
		t.Errorf("stats %+v, want 202 entries (100 per scanning source, db's 2) and 39,800 dropped", s)
	}
	var dbFlows []string
	for _, f := range r.Flows() {
		if f.From == "shop/db-0" {
			dbFlows = append(dbFlows, f.Port+" "+f.Verdict)
		}
	}
	if strings.Join(dbFlows, ",") != "443/tcp allow,25/tcp deny" && strings.Join(dbFlows, ",") != "25/tcp deny,443/tcp allow" {
		t.Errorf("db's entries %v, want both kept", dbFlows)
	}
}

// TestRecordBounded: past MaxFlows entries of a verdict, connections of
// new entries are counted as dropped and those of kept entries still
// counted; a port scan's denied entries take no room from allowed ones.
func TestRecordBounded(t *testing.T) {
	r := observed.New(observed.Options{MaxFlows: 2})
	for port := uint16(1); port <= 4; port++ {
		r.Record(pkt(nft.RecordDenyPrefix, web1, db, 6, port, 0))
	}
	for port := uint16(1); port <= 4; port++ {
		r.Record(pkt(nft.RecordAllowPrefix, web1, db, 6, port, 0))
	}
	r.Record(pkt(nft.RecordAllowPrefix, web1, db, 6, 1, time.Second))
	if s := r.Stats(); s != (observed.Stats{Flows: 4, Connections: 5, Dropped: 4}) {
		t.Errorf("stats %+v, want 4 entries (2 a verdict), 5 connections, 4 dropped", s)
	}
}

// TestSaveLoad: an agent that restarts loads its record and goes on
// counting; the file is replaced whole.
func TestSaveLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "record.jsonl")
	r := observed.New(observed.Options{Node: "node-1"})
	if err := r.Load(path); err != nil {
		t.Fatalf("a missing file is an empty record: %v", err)
	}
	r.Update(workloads)
	r.Record(pkt(nft.RecordAllowPrefix, web1, db, 6, 5432, 0))
	r.Record(pkt(nft.RecordAllowPrefix, web2, db, 6, 5432, time.Second))
	if err := r.Save(path); err != nil {
		t.Fatal(err)
	}

	again := observed.New(observed.Options{Node: "node-1"})
	again.Update(workloads)
	if err := again.Load(path); err != nil {
		t.Fatal(err)
	}
	again.Record(pkt(nft.RecordAllowPrefix, web1, db, 6, 5432, time.Minute))
	// The counter is this agent's: a restart starts it again, as
	// Prometheus expects of a counter, whatever the file held.
	if s := again.Stats(); s.Connections != 1 || s.Flows != 1 {
		t.Errorf("stats after the restart %+v, want 1 connection in 1 entry", s)
	}
	if err := again.Save(path); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"from":"shop/Deployment/web","to":"shop/db-0","port":"5432/tcp","verdict":"allow","count":3,"first":"2026-11-25T01:00:00Z","last":"2026-11-25T01:01:00Z","node":"node-1"}
`
	if string(data) != want {
		t.Errorf("file after the restart:\n%s\nwant:\n%s", data, want)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".record.jsonl.*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestLoadSaturates: counts that would overflow stay at the largest.
func TestLoadSaturates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "record.jsonl")
	line := `{"from":"a/b","to":"a/c","port":"80/tcp","verdict":"allow","count":9223372036854775000,"first":"2026-11-25T01:00:00Z","last":"2026-11-25T01:00:00Z"}` + "\n"
	if err := os.WriteFile(path, []byte(line+line), 0o600); err != nil {
		t.Fatal(err)
	}
	r := observed.New(observed.Options{})
	if err := r.Load(path); err != nil {
		t.Fatal(err)
	}
	if f := r.Flows(); len(f) != 1 || f[0].Count != math.MaxInt {
		t.Errorf("flows %+v, want one of count %d", f, math.MaxInt)
	}
}

// TestContinueMovesDamagedAside: an agent whose record file is damaged
// moves it aside, keeps it for a reader, and records anew.
func TestContinueMovesDamagedAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "record.jsonl")
	if err := os.WriteFile(path, []byte("{\"from\":\"a/b\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := observed.New(observed.Options{})
	aside, err := r.Continue(path)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(aside); err != nil || string(data) != "{\"from\":\"a/b\"\n" || filepath.Dir(aside) != dir {
		t.Errorf("moved aside to %s: %q, %v", aside, data, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the damaged file is still at %s: %v", path, err)
	}
	if aside, err := r.Continue(path); aside != "" || err != nil {
		t.Errorf("a missing file: moved aside %q, %v; want nothing", aside, err)
	}
}

// TestLoadRejects: a damaged record is refused with its line, and nothing
// of it is half-trusted as a flow.
func TestLoadRejects(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"not JSON", "{\"from\":\"a/b\"\n", "line 1"},
		{"no verdict", `{"from":"a/b","to":"a/c","port":"80/tcp","count":1}` + "\n", "line 1: not a recorded flow"},
		{"two ports", "\n" + `{"from":"a/b","to":"a/c","port":"80/tcp,81/tcp","verdict":"allow","count":1}`, "line 2: not a recorded flow"},
		{"no count", `{"from":"a/b","to":"a/c","port":"80/tcp","verdict":"allow"}`, "line 1: not a recorded flow"},
		{"port 0", `{"from":"a/b","to":"a/c","port":"0/tcp","verdict":"allow","count":1}`, "line 1: not a recorded flow"},
	} {
		path := filepath.Join(t.TempDir(), "record.jsonl")
		if err := os.WriteFile(path, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		err := observed.New(observed.Options{}).Load(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// packets is a Source that delivers its batches, then fails with end.
type packets struct {
	batches [][]nflog.Packet
	errs    []error
	end     error
}

func (p *packets) Read() ([]nflog.Packet, error) {
	if len(p.batches) == 0 {
		return nil, p.end
	}
	b, err := p.batches[0], p.errs[0]
	p.batches, p.errs = p.batches[1:], p.errs[1:]
	return b, err
}

// TestRunGoesOnAfterLoss: a full socket buffer is reported and reading
// goes on; the reader's close ends Run with its error.
func TestRunGoesOnAfterLoss(t *testing.T) {
	closed := errors.New("closed")
	src := &packets{
		batches: [][]nflog.Packet{{pkt(nft.RecordAllowPrefix, web1, db, 6, 80, 0)}, nil, {pkt(nft.RecordAllowPrefix, web1, db, 6, 80, 0)}},
		errs:    []error{nil, nflog.ErrLost, nil},
		end:     closed,
	}
	r := observed.New(observed.Options{})
	var reported []error
	if err := r.Run(src, func(err error) { reported = append(reported, err) }); err != closed {
		t.Errorf("Run ended with %v, want the reader's close", err)
	}
	if len(reported) != 1 || !errors.Is(reported[0], nflog.ErrLost) {
		t.Errorf("reported %v, want the loss", reported)
	}
	if s := r.Stats(); s.Connections != 2 {
		t.Errorf("%d connections recorded, want 2", s.Connections)
	}
}

// TestConcurrentRecordUpdateSave: the reader records while passes update
// the naming and the ticker saves (run with -race).
func TestConcurrentRecordUpdateSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "record.jsonl")
	r := observed.New(observed.Options{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			r.Record(pkt(nft.RecordAllowPrefix, web1, db, 6, uint16(1+i%50), 0))
		}
	}()
	for range 20 {
		r.Update(workloads)
		if err := r.Save(path); err != nil {
			t.Fatal(err)
		}
	}
	<-done
	if s := r.Stats(); s.Connections != 2000 || s.Flows != 50 {
		t.Errorf("stats %+v, want 2000 connections in 50 entries", s)
	}
}

// FuzzLoad: whatever a record file holds, Load does not panic, and what it
// accepts it writes back and reads again the same.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"from":"a/b","to":"a/c","port":"80/tcp","verdict":"allow","count":3,"first":"2026-11-25T01:00:00Z","last":"2026-11-25T01:00:09Z","node":"n"}` + "\n"))
	f.Add([]byte(`{"from":"a/b","to":"198.19.0.1","port":"53/udp","verdict":"deny","count":1}`))
	f.Add([]byte("{\"from\":\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "record.jsonl")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		r := observed.New(observed.Options{})
		if err := r.Load(path); err != nil {
			return
		}
		if err := r.Save(path); err != nil {
			t.Fatal(err)
		}
		again := observed.New(observed.Options{})
		if err := again.Load(path); err != nil {
			t.Fatalf("a saved record is refused: %v", err)
		}
		if a, b := fmt.Sprint(r.Flows()), fmt.Sprint(again.Flows()); a != b {
			t.Fatalf("read back %s, want %s", b, a)
		}
	})
}

// TestSaveIfChanged: an idle agent does not rewrite (and sync) its record
// every interval; a change, a new line, is saved.
func TestSaveIfChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "record.jsonl")
	r := observed.New(observed.Options{})
	r.Record(pkt(nft.RecordAllowPrefix, web1, db, 6, 5432, 0))
	if saved, err := r.SaveIfChanged(path); !saved || err != nil {
		t.Fatalf("first save: %v, %v", saved, err)
	}
	if err := os.WriteFile(path, []byte("left alone\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if saved, err := r.SaveIfChanged(path); saved || err != nil {
		t.Errorf("nothing changed: saved %v, %v", saved, err)
	}
	if data, _ := os.ReadFile(path); string(data) != "left alone\n" {
		t.Errorf("the file was rewritten: %q", data)
	}
	r.Record(pkt(nft.RecordAllowPrefix, web1, db, 6, 5432, time.Second))
	if saved, err := r.SaveIfChanged(path); !saved || err != nil {
		t.Errorf("after a new line: saved %v, %v", saved, err)
	}
}
