package dnsproxy

import (
	"testing"
	"time"
)

// TestCapHitAtMostOnceAMinute: an answer the cap holds back is told to
// CapHit (the agent's log line and Event), once a minute at most however
// many follow, and again after a minute when the cap still holds.
func TestCapHitAtMostOnceAMinute(t *testing.T) {
	r := &recorder{}
	var told []Stats
	p := New(Config{Limits: Limits{MinTTL: time.Hour, MaxTTL: time.Hour, MaxAddresses: 1}, Write: r.write,
		CapHit: func(s Stats) { told = append(told, s) }})
	p.learner.setTargets(sets, nil)
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	p.learner.now = func() time.Time { return now }
	answerAt := func(addr string) {
		p.learner.learn(answer(t, "x.allowed.test", "A "+addr+" 60"), asked)
		p.capCheck()
	}
	answerAt("198.18.8.1") // learned: the cap is not reached yet
	answerAt("198.18.8.2") // held back: told
	now = now.Add(30 * time.Second)
	answerAt("198.18.8.3") // held back, within the minute: not told
	now = now.Add(31 * time.Second)
	answerAt("198.18.8.4") // a minute on: told again
	if len(told) != 2 || told[0].CapHits != 1 || told[0].Addresses != 1 || told[1].CapHits != 3 {
		t.Errorf("told %+v, want twice: after 1 cap hit, and after 3", told)
	}
}
