package agent_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/render/nft"
)

// slowReporter is an API server that takes its time with status writes, as
// one does that rate-limits the agent (client-go's 5 requests a second) or
// is busy: each Report waits until release is closed.
type slowReporter struct {
	release chan struct{}
	calls   atomic.Int32
}

func (r *slowReporter) Report(ctx context.Context, _ diag.List, _ error) error {
	r.calls.Add(1)
	select {
	case <-r.release:
	case <-ctx.Done():
	}
	return nil
}

// TestReportsDoNotHoldProgramming: the node programs a change while its
// status report of the pass before is still on its way to the API server.
// A cluster's first agent writes the status of every admin policy: 1,500
// of them take 5 minutes at client-go's default rate, and a policy change
// (or a new pod) waiting for them would wait as long (the fleet benchmark
// saw a change wait 13.8 s on a 300-policy cluster).
func TestReportsDoNotHoldProgramming(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode})
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	rep := &slowReporter{release: make(chan struct{})}
	defer close(rep.release)
	statusFile := filepath.Join(t.TempDir(), "status.json")
	a := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{dir}}, Interval: 10 * time.Millisecond,
		Reporter: rep, Status: statusFile}, nft.New(fake), nil)
	runAgent(t, a)
	// The status file, not a.Status(): the loop writes that while it runs.
	programmed := func() string {
		var st agent.Status
		data, err := os.ReadFile(statusFile)
		if err != nil || json.Unmarshal(data, &st) != nil {
			return ""
		}
		return st.Programmed
	}
	eventually(t, "the first pass reports", func() bool { return rep.calls.Load() >= 1 })
	first := programmed()
	writeFiles(t, dir, map[string]string{"deny-web.yaml": denyWeb})
	eventually(t, "the change is programmed while the report is held", func() bool {
		p := programmed()
		return p != "" && p != first
	})
}
