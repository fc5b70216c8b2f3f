package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// progress tells a person at a terminal what a long command is doing: once
// the command has run for a second, one line on stderr, rewritten a few
// times a second ("netpol: decoding: 12345 documents, 3.2s"), and cleared
// when the command writes its answer. It is silent when stderr is not a
// terminal (a pipe, a file, CI) or with -q, so that output stays exactly
// what it is. A nil *progress is that silence.
type progress struct {
	w     io.Writer
	delay time.Duration // before the first line
	tick  time.Duration

	mu    sync.Mutex
	stage string
	count func() int64 // what the stage has done so far, or nil
	unit  string
	shown bool

	start time.Time
	stop  chan struct{}
	done  chan struct{}
}

// startProgress starts the progress line of cmd, or returns nil when it
// must stay silent.
func startProgress(cmd *cobra.Command, quiet bool) *progress {
	f, ok := cmd.ErrOrStderr().(*os.File)
	if quiet || !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return newProgress(f, time.Second, 200*time.Millisecond)
}

func newProgress(w io.Writer, delay, tick time.Duration) *progress {
	p := &progress{w: w, delay: delay, tick: tick, start: time.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	go p.loop()
	return p
}

// Stage names what the command does now; count, when not nil, says how
// many units of it are done (read from the goroutine that draws: it must
// be safe to call concurrently, an atomic counter's Load).
func (p *progress) Stage(stage string, count func() int64, unit string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.stage, p.count, p.unit = stage, count, unit
	p.mu.Unlock()
}

// Stop clears the line; the command's answer follows on a clean terminal.
func (p *progress) Stop() {
	if p == nil {
		return
	}
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

func (p *progress) loop() {
	defer close(p.done)
	t := time.NewTicker(p.tick)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			p.mu.Lock()
			if p.shown {
				fmt.Fprint(p.w, "\r\033[K")
			}
			p.mu.Unlock()
			return
		case <-t.C:
			if time.Since(p.start) < p.delay {
				continue
			}
			p.mu.Lock()
			line := "netpol: " + p.stage
			if p.count != nil {
				line += fmt.Sprintf(": %d %s", p.count(), p.unit)
			}
			fmt.Fprintf(p.w, "\r\033[K%s, %s", line, time.Since(p.start).Round(100*time.Millisecond))
			p.shown = true
			p.mu.Unlock()
		}
	}
}
