package agent

import "testing"

// TestCutterKeepsTheNewestJob: a cut asked for while another waits replaces
// it (the newer engine judges every connection the older would have); one
// already taken by the goroutine is not affected.
func TestCutterKeepsTheNewestJob(t *testing.T) {
	c := newCutter()
	c.request(cutJob{input: "a"})
	c.request(cutJob{input: "b"})
	c.request(cutJob{input: "c"})
	if got := (<-c.jobs).input; got != "c" {
		t.Errorf("waiting job %q, want the newest, c", got)
	}
	select {
	case j := <-c.jobs:
		t.Errorf("a second job %q waits, want one", j.input)
	default:
	}
	var none *cutter
	if none.results() != nil {
		t.Error("no cutter: results must be a nil channel (never ready)")
	}
}
