package lab

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/source"
)

// TestWaitProgrammedOutlastsATransientError: an agent that reports a kernel
// error for the current manifests and programs them on its next try is
// waited for; an error that stays is reported when the time is up. No
// root needed: the agents are played by status files.
func TestWaitProgrammedOutlastsATransientError(t *testing.T) {
	l := &Lab{Name: "wait", Dir: t.TempDir(), Nodes: []Node{{Name: "node-1"}}}
	if err := os.MkdirAll(l.ManifestDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := l.WriteManifests([]byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n")); err != nil {
		t.Fatal(err)
	}
	files, err := source.ReadFiles([]string{l.ManifestDir()})
	if err != nil {
		t.Fatal(err)
	}
	fp := source.Fingerprint(files)
	status := func(st agent.Status) {
		data, _ := json.Marshal(st)
		if err := os.WriteFile(l.statusFile("node-1")+".new", data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(l.statusFile("node-1")+".new", l.statusFile("node-1")); err != nil {
			t.Fatal(err)
		}
	}
	status(agent.Status{Node: "node-1", Input: fp, Error: "nftables transaction: device or resource busy"})
	done := make(chan error, 1)
	go func() { done <- l.WaitProgrammed(context.Background(), 10*time.Second) }()
	time.Sleep(100 * time.Millisecond) // the error is seen a few times
	status(agent.Status{Node: "node-1", Input: fp, Programmed: fp, CutFor: fp})
	if err := <-done; err != nil {
		t.Fatalf("after the agent's retry programmed: %v", err)
	}

	status(agent.Status{Node: "node-1", Input: fp, Error: "nftables transaction: operation not permitted"})
	err = l.WaitProgrammed(context.Background(), 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "operation not permitted") || !strings.Contains(err.Error(), "still failing") {
		t.Errorf("an error that stays: %v, want it reported as still failing", err)
	}
}
