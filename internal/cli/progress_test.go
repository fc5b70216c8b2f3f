package cli

import (
	"bytes"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer the progress goroutine and the test share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestProgressLine: the line names the stage and its count, is rewritten
// in place, and is cleared at the end; nothing is drawn before the delay;
// a nil progress (not a terminal, -q) is silent.
func TestProgressLine(t *testing.T) {
	var w lockedBuffer
	var docs atomic.Int64
	p := newProgress(&w, 0, time.Millisecond)
	p.Stage("decoding", docs.Load, "documents")
	docs.Store(42)
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(w.String(), "decoding: 42 documents"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no progress line in %q", w.String())
		}
	}
	p.Stage("computing the matrix", nil, "")
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(w.String(), "netpol: computing the matrix, "); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no second stage in %q", w.String())
		}
	}
	p.Stop()
	out := w.String()
	if !strings.HasPrefix(out, "\r\033[Knetpol: decoding: 42 documents, ") || !strings.HasSuffix(out, "\r\033[K") || strings.Contains(out, "\n") {
		t.Errorf("progress output %q: want lines rewritten in place, then cleared", out)
	}

	var quiet lockedBuffer
	late := newProgress(&quiet, time.Hour, time.Millisecond)
	late.Stage("decoding", nil, "")
	time.Sleep(20 * time.Millisecond)
	late.Stop()
	if quiet.String() != "" {
		t.Errorf("before the delay: %q, want nothing", quiet.String())
	}
	var none *progress
	none.Stage("x", nil, "")
	none.Stop()
}
