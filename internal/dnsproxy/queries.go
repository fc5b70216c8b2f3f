package dnsproxy

import (
	"errors"
	"net/netip"
	"sync"
	"time"

	"github.com/netpol/netpol/internal/dataplane/nflog"
	"github.com/netpol/netpol/internal/dns"
)

// How queries are seen: the divert table logs every UDP query of a
// governed pod to a configured server (NFLOG, Kernel.LogGroup, the
// packet's first queryCopy bytes) and lets it go on, judged by the
// kernel as before; the proxy reads the log. An answer teaches only when
// it answers a query logged from the pod's address and port to that
// server, with its ID, name and type, within queryWindow; then the query
// is forgotten, so one query teaches once.
//
// Why NFLOG and not the answer divert's TPROXY for queries too: a query
// taken off its path would have to be sent again by the node, from the
// pod's address, and its egress would no longer be judged where the
// pod's rules are. Why not conntrack: it knows the addresses and ports,
// not the ID and the question. NFQUEUE would hold the query, which
// nothing needs (the answer is held). The kernel queues a log message as
// it logs the packet (queue threshold 1), so by the time the answer is
// in the proxy's hands, its query's message is in the log socket: a miss
// reads the socket dry before it says no, and nothing waits on a clock.

// queryCopy is how much of a query the log copies: the IPv6 and UDP
// headers, the DNS header and a question of the longest name (255 octets).
const queryCopy = 40 + 8 + 12 + 255 + 4

// queryWindow is how long a query waits for its answer: longer than a
// resolver waits (glibc: 5 s a try) before it asks again (a new query).
const queryWindow = 10 * time.Second

// Bounds on the queries kept: a pod that floods queries fills its own
// share, not the node's.
const (
	maxQueries          = 65536
	maxQueriesPerClient = 1024
)

// queryLog is where the logged queries come from: an nflog.Reader, or a
// test's list.
type queryLog interface {
	ReadNow() ([]nflog.Packet, error)
	Wait() error
}

// queryKey is one query: from the pod's address and port, to the server
// as the pod asked it, with its ID and question.
type queryKey struct {
	client netip.AddrPort
	server netip.Addr
	id     uint16
	typ    uint16
	name   string
}

// queries are the queries seen and not answered yet.
type queries struct {
	log queryLog
	now func() time.Time

	mu       sync.Mutex
	pending  map[queryKey]time.Time // when each was seen
	byClient map[netip.Addr]int
	swept    time.Time
	lost     uint64 // log messages the kernel dropped (socket full)
}

func newQueries(log queryLog, now func() time.Time) *queries {
	return &queries{log: log, now: now, pending: map[queryKey]time.Time{}, byClient: map[netip.Addr]int{}}
}

// run reads the log until it fails for good (closed).
func (q *queries) run() error {
	for {
		if err := q.log.Wait(); err != nil {
			return err
		}
		q.mu.Lock()
		err := q.drain()
		q.mu.Unlock()
		if err != nil && !errors.Is(err, nflog.ErrLost) && !errors.Is(err, nflog.ErrMalformed) {
			return err
		}
	}
}

// drain reads every message the log holds now. q.mu is held.
func (q *queries) drain() error {
	for {
		ps, err := q.log.ReadNow()
		for _, p := range ps {
			q.add(p)
		}
		switch {
		case errors.Is(err, nflog.ErrLost):
			q.lost++
		case errors.Is(err, nflog.ErrMalformed):
		case err != nil:
			return err
		case len(ps) == 0:
			return nil
		}
	}
}

// add keeps one logged query. q.mu is held.
func (q *queries) add(p nflog.Packet) {
	qu, err := dns.ParseQuery([]byte(p.Payload))
	if err != nil {
		return // not a query: no answer can match it
	}
	now := q.now()
	if now.Sub(q.swept) >= time.Second || len(q.pending) >= maxQueries {
		q.expire(now)
	}
	k := queryKey{client: netip.AddrPortFrom(p.Src.Unmap(), p.SrcPort), server: p.Dst.Unmap(), id: qu.ID, typ: qu.Type, name: qu.Name}
	if _, again := q.pending[k]; again { // a resolver's retry: the same query
		q.pending[k] = now
		return
	}
	if len(q.pending) >= maxQueries || q.byClient[k.client.Addr()] >= maxQueriesPerClient {
		return // its answer will teach nothing: the pod's own loss
	}
	q.pending[k] = now
	q.byClient[k.client.Addr()]++
}

// expire forgets the queries older than queryWindow. q.mu is held.
func (q *queries) expire(now time.Time) {
	q.swept = now
	for k, at := range q.pending {
		if now.Sub(at) > queryWindow {
			q.forget(k)
		}
	}
}

func (q *queries) forget(k queryKey) {
	delete(q.pending, k)
	if q.byClient[k.client.Addr()]--; q.byClient[k.client.Addr()] <= 0 {
		delete(q.byClient, k.client.Addr())
	}
}

// lostCount is how many log messages the kernel dropped so far.
func (q *queries) lostCount() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.lost
}

// answered reports whether a answers a query that client sent to server
// within queryWindow, and forgets that query.
func (q *queries) answered(client netip.AddrPort, server netip.Addr, a dns.Answer) bool {
	k := queryKey{client: netip.AddrPortFrom(client.Addr().Unmap(), client.Port()), server: server.Unmap(), id: a.ID, typ: a.Type, name: a.Name}
	q.mu.Lock()
	defer q.mu.Unlock()
	at, ok := q.pending[k]
	if !ok {
		// The query's log message may be in the socket still: read it dry.
		_ = q.drain()
		at, ok = q.pending[k]
	}
	if !ok {
		return false
	}
	q.forget(k)
	return q.now().Sub(at) <= queryWindow
}
