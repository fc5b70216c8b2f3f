package agent_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/knftables"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/render/nft"
	"github.com/netpol/netpol/internal/source"
)

// The fault tests in this file run without root: knftables' fake is the
// kernel. The same faults meet the real kernel in internal/lab.

const oneNode = `
apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: v1
kind: Namespace
metadata: {name: x, labels: {ns: x}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: x, labels: {app: web}}
spec:
  nodeName: node-1
  containers: [{name: c, ports: [{containerPort: 80}]}]
status: {podIP: 198.18.1.1}
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: x, labels: {app: db}}
spec:
  nodeName: node-1
  containers: [{name: c, ports: [{containerPort: 5432}]}]
status: {podIP: 198.18.1.2}
`

const denyWeb = `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-web, namespace: x}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
`

const denyDB = `
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-db, namespace: x}
spec:
  podSelector: {matchLabels: {app: db}}
  policyTypes: [Ingress]
`

// invalidANP has an action that no API version knows.
const invalidANP = `
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: broken}
spec:
  priority: 10
  subject: {namespaces: {matchLabels: {team: none}}}
  ingress: [{name: r, action: Maybe, from: [{namespaces: {}}]}]
`

// writeFiles replaces the files of dir with files (name -> content).
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	// Each file is replaced whole (written aside, then renamed), and those
	// left out go last, so that a pass never reads a directory that is
	// neither the old input nor the new one but a step the change passes
	// through. Removing everything first made passes see an empty input:
	// TestFaultCutForFollowsTheProgrammedInput then failed under load,
	// always with a writer slowed by 50 ms.
	for name, content := range files {
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	for _, f := range old {
		if _, keep := files[filepath.Base(f)]; keep {
			continue
		}
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFaultInvalidFileLeavesOutOnlyItself: with --source DIR, one invalid
// admin policy must not stop the node: it is enforced failed closed (its
// subject holds no pod here), the valid policies are enforced on a fresh
// node, and a running node takes the next valid change.
func TestFaultInvalidFileLeavesOutOnlyItself(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode, "deny-web.yaml": denyWeb, "broken.yaml": invalidANP})
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	a := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{dir}}}, nft.New(fake), nil)
	if err := a.Pass(context.Background()); err != nil {
		t.Fatalf("first pass with one invalid object: %v", err)
	}
	if got := elementsOf(t, fake, "ingress-4"); got != "198.18.1.1" {
		t.Fatalf("fresh node: ingress-4 map keys = %q, want web's address (deny-web enforced)", got)
	}
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode, "deny-web.yaml": denyWeb, "deny-db.yaml": denyDB, "broken.yaml": invalidANP})
	if err := a.Pass(context.Background()); err != nil {
		t.Fatalf("second pass: %v", err)
	}
	if got := elementsOf(t, fake, "ingress-4"); got != "198.18.1.1,198.18.1.2" {
		t.Fatalf("running node: ingress-4 map keys = %q, want web's and db's addresses", got)
	}
	if st := a.Status(); st.Error != "" || !strings.HasPrefix(st.Programmed, st.Input) {
		t.Errorf("status after the valid change: %+v, want the input programmed and no error", st)
	}
}

// fakeConntrack is a conntrack table of connections; Cut behaves as the
// kernel's does through dataplane.Conntrack.
type fakeConntrack struct {
	entries []l4.Conn
	dumps   int // how many times the table was read
}

func (f *fakeConntrack) Cut(_ context.Context, keep func(l4.Conn) bool, hold func([]l4.Conn) error) (int, error) {
	f.dumps++
	var kept, doomed []l4.Conn
	for _, c := range f.entries {
		if keep(c) {
			kept = append(kept, c)
		} else {
			doomed = append(doomed, c)
		}
	}
	if len(doomed) == 0 {
		return 0, nil
	}
	if err := hold(doomed); err != nil {
		return 0, err
	}
	f.entries = kept
	return len(doomed), nil
}

// TestFaultCutHoldsAndReleases: a change that denies a local pod's
// connection deletes its entry and holds it in the kernel's cut set; a
// connection between two other nodes' pods is not judged; a pass that
// changes nothing in the kernel does not read the table; a change that
// allows the connection again releases it, also after a restart.
func TestFaultCutHoldsAndReleases(t *testing.T) {
	dir := t.TempDir()
	twoNodes := oneNode + `
---
apiVersion: v1
kind: Node
metadata: {name: node-2}
---
apiVersion: v1
kind: Pod
metadata: {name: far, namespace: x, labels: {app: far}}
spec:
  nodeName: node-2
  containers: [{name: c}]
status: {podIP: 198.18.1.3}
`
	writeFiles(t, dir, map[string]string{"cluster.yaml": twoNodes})
	toWeb := l4.Conn{Proto: l4.UDP, Src: netip.MustParseAddrPort("198.18.1.2:5000"), Dst: netip.MustParseAddrPort("198.18.1.1:80")}
	elsewhere := l4.Conn{Proto: l4.TCP, Src: netip.MustParseAddrPort("198.18.1.3:5000"), Dst: netip.MustParseAddrPort("198.18.9.9:80")}
	ct := &fakeConntrack{entries: []l4.Conn{toWeb, elsewhere}}
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	a := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{dir}}, Conntrack: ct}, nft.New(fake), nil)
	ctx := context.Background()
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if st := a.Status(); st.Cut != 0 || len(ct.entries) != 2 {
		t.Fatalf("no policy: cut %d, entries %v; want nothing cut", st.Cut, ct.entries)
	}
	writeFiles(t, dir, map[string]string{"cluster.yaml": twoNodes, "deny-web.yaml": denyWeb})
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if st := a.Status(); st.Cut != 1 || len(ct.entries) != 1 || ct.entries[0] != elsewhere {
		t.Fatalf("deny-web: cut %d, entries left %v; want the connection to web cut, the other left", st.Cut, ct.entries)
	}
	if got := cutSet(t, fake, "cut-4"); got != "198.18.1.2 . 198.18.1.1 . udp . 5000 . 80" {
		t.Errorf("cut-4 = %q, want the connection to web held", got)
	}
	// A change on another node: the input changed, the kernel did not.
	dumps := ct.dumps
	writeFiles(t, dir, map[string]string{"cluster.yaml": strings.Replace(twoNodes, "{app: far}", "{app: farther}", 1), "deny-web.yaml": denyWeb})
	if err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if st := a.Status(); st.Stats.Operations != 0 || ct.dumps != dumps {
		t.Errorf("a change that programs nothing: %d operations, %d conntrack dumps; want 0 and 0", st.Stats.Operations, ct.dumps-dumps)
	}
	// The agent restarts, then the policy goes: the new agent learns what
	// its predecessor held from the kernel, and releases it.
	b := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{dir}}, Conntrack: ct}, nft.New(fake), nil)
	if err := b.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if got := cutSet(t, fake, "cut-4"); got != "198.18.1.2 . 198.18.1.1 . udp . 5000 . 80" {
		t.Errorf("cut-4 = %q after the restart, want the connection still held", got)
	}
	writeFiles(t, dir, map[string]string{"cluster.yaml": twoNodes})
	if err := b.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if got := cutSet(t, fake, "cut-4"); got != "" {
		t.Errorf("cut-4 = %q after the policy went, want the connection released", got)
	}
}

func cutSet(t *testing.T, fake *knftables.Fake, set string) string {
	t.Helper()
	els, err := fake.ListElements(context.Background(), "set", set)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range els {
		out = append(out, strings.Join(e.Key, " . "))
	}
	return strings.Join(out, ",")
}

// flakyNft is knftables' fake whose transactions fail while failing is set,
// as a kernel that refuses them would (the table stays as it was).
type flakyNft struct {
	*knftables.Fake
	failing atomic.Bool
	runs    atomic.Int32
}

func (f *flakyNft) Run(ctx context.Context, tx *knftables.Transaction) error {
	f.runs.Add(1)
	if f.failing.Load() {
		return errors.New("injected: the kernel refused the transaction")
	}
	return f.Fake.Run(ctx, tx)
}

// runAgent runs a's loop until the test ends, and serves its handler.
func runAgent(t *testing.T, a *agent.Agent) *httptest.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = a.Run(ctx)
	}()
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-done
	})
	return srv
}

// eventually polls cond for up to 10 s: a bound on a hang, not a timing
// assertion.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting until %s", what)
}

// TestFaultFlushedRulesetRestored: someone flushes the ruleset (a firewall
// reload) while the input stays the same; the agent sees the nftables
// generation move, finds its table gone, programs it again, holds again
// the connection it had cut, and says so in its metrics.
func TestFaultFlushedRulesetRestored(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode, "deny-web.yaml": denyWeb})
	fake := knftables.NewFake(knftables.InetFamily, nft.TableName)
	var gen atomic.Uint32
	gen.Store(7)
	// A connection to web that deny-web cut on the first pass, held.
	ct := &fakeConntrack{entries: []l4.Conn{{Proto: l4.TCP, Src: netip.MustParseAddrPort("198.18.1.2:5000"), Dst: netip.MustParseAddrPort("198.18.1.1:80")}}}
	a := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{dir}}, Interval: 10 * time.Millisecond,
		Generation: func() (uint32, error) { return gen.Load(), nil }, Conntrack: ct}, nft.New(fake), nil)
	srv := runAgent(t, a)
	webIsolated := func() bool {
		els, err := fake.ListElements(context.Background(), "map", "ingress-4")
		return err == nil && len(els) == 1 && els[0].Key[0] == "198.18.1.1"
	}
	eventually(t, "web is isolated", webIsolated)
	// Another writer's change to another table: nothing to repair.
	gen.Add(1)
	time.Sleep(100 * time.Millisecond) // ten turns of the loop
	if _, body := get(t, srv.URL+"/metrics"); !strings.Contains(body, "netpol_nft_drift_repaired_total 0") {
		t.Fatalf("after a change that left the table alone: want netpol_nft_drift_repaired_total 0 in\n%s", grepLines(body, "drift"))
	}
	// nft flush ruleset.
	tx := fake.NewTransaction()
	tx.Delete(&knftables.Table{})
	if err := fake.Run(context.Background(), tx); err != nil {
		t.Fatal(err)
	}
	gen.Add(1)
	eventually(t, "web is isolated again", webIsolated)
	eventually(t, "the cut connection is held again", func() bool {
		els, err := fake.ListElements(context.Background(), "set", "cut-4")
		return err == nil && len(els) == 1
	})
	eventually(t, "the repair is counted", func() bool {
		_, body := get(t, srv.URL+"/metrics")
		return strings.Contains(body, "netpol_nft_drift_repaired_total 1")
	})
}

// TestFaultFailingNftBacksOffAndRecovers: while the kernel refuses every
// transaction the agent is not ready and says why, counts the failures,
// and retries; once the kernel takes them it programs and is ready.
func TestFaultFailingNftBacksOffAndRecovers(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode, "deny-web.yaml": denyWeb})
	flaky := &flakyNft{Fake: knftables.NewFake(knftables.InetFamily, nft.TableName)}
	flaky.failing.Store(true)
	a := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{dir}}, Interval: 10 * time.Millisecond},
		nft.New(flaky), nil)
	srv := runAgent(t, a)
	eventually(t, "three failed passes", func() bool { return flaky.runs.Load() >= 3 })
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "nothing programmed yet") {
		t.Errorf("/readyz while nothing was ever programmed: %d %q, want 503 nothing programmed yet", code, body)
	}
	if _, body := get(t, srv.URL+"/metrics"); !strings.Contains(body, "netpol_errors_total{stage=\"kernel\"}") {
		t.Errorf("metrics lack the kernel errors:\n%s", grepLines(body, "netpol_errors_total"))
	}
	flaky.failing.Store(false)
	eventually(t, "ready", func() bool { code, _ := get(t, srv.URL+"/readyz"); return code == http.StatusOK })
	// A change the kernel refuses: not ready, the reason given, the old
	// rules kept.
	flaky.failing.Store(true)
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode, "deny-web.yaml": denyWeb, "deny-db.yaml": denyDB})
	eventually(t, "not ready with the kernel's refusal", func() bool {
		code, body := get(t, srv.URL+"/readyz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "injected: the kernel refused the transaction")
	})
	els, err := flaky.ListElements(context.Background(), "map", "ingress-4")
	if err != nil || len(els) != 1 {
		t.Errorf("ingress-4 while the change is refused: %v %v, want web's element kept", els, err)
	}
	if _, body := get(t, srv.URL+"/metrics"); strings.Contains(body, "netpol_sync_failures_in_a_row 0\n") {
		t.Errorf("failures in a row reads 0 while passes fail:\n%s", grepLines(body, "failures"))
	}
	flaky.failing.Store(false)
	eventually(t, "ready after the kernel takes the change", func() bool {
		code, _ := get(t, srv.URL+"/readyz")
		els, _ := flaky.ListElements(context.Background(), "map", "ingress-4")
		return code == http.StatusOK && len(els) == 2
	})
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestFaultStatusFileNotThroughPlantedLink: the agent runs as root and
// rewrites --status after every pass; a symlink planted where it writes
// its temporary file (or the status file itself) must not make it write
// anywhere else.
func TestFaultStatusFileNotThroughPlantedLink(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode})
	run := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	status := filepath.Join(run, "status.json")
	for _, link := range []string{status + ".tmp", status} {
		if err := os.Symlink(victim, link); err != nil {
			t.Fatal(err)
		}
	}
	a := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{dir}}, Status: status},
		nft.New(knftables.NewFake(knftables.InetFamily, nft.TableName)), nil)
	if err := a.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(victim); string(data) != "keep" {
		t.Errorf("the link's target was written: %q", data)
	}
	fi, err := os.Lstat(status)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("status file: %v %v, want a regular file", fi, err)
	}
	if st, err := agent.ReadStatus(status); err != nil || st.Node != "node-1" || st.Programmed == "" {
		t.Errorf("status file: %+v %v, want node-1's programmed input", st, err)
	}
}

// incomplete is the file input of a test that reports some kinds unknown,
// as kube.Watch does while discovery cannot tell whether the API server
// serves an admin policy kind: it returns what it knows, and the error.
type incomplete struct {
	agent.Files
	err error
}

func (in *incomplete) Read() ([]source.Object, diag.List, string, error) {
	objs, diags, fp, err := in.Files.Read()
	if err == nil && in.err != nil {
		err = fmt.Errorf("%w: %w", source.ErrIncomplete, in.err)
	}
	return objs, diags, fp, err
}

// TestFaultIncompleteInputOnAFreshNode: a node whose agent never
// programmed (no table) enforces what is known while an admin kind is
// unknown — more is denied than with nothing — and is not ready; a node
// with a table from before keeps it untouched (its admin rules may be the
// ones unknown now); once the input is complete, it is programmed.
func TestFaultIncompleteInputOnAFreshNode(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode, "deny-web.yaml": denyWeb})
	in := &incomplete{Files: agent.Files{Paths: []string{dir}}, err: errors.New("cannot tell whether the API server serves adminnetworkpolicies")}
	fresh := knftables.NewFake(knftables.InetFamily, nft.TableName)
	a := agent.New(agent.Config{Node: "node-1", Input: in}, nft.New(fresh), nil)
	if err := a.Pass(context.Background()); err == nil || !errors.Is(err, source.ErrIncomplete) {
		t.Errorf("a pass over an incomplete input: %v, want the input's error", err)
	}
	if got := elementsOf(t, fresh, "ingress-4"); got != "198.18.1.1" {
		t.Errorf("fresh node: ingress-4 = %q, want web isolated by what is known", got)
	}

	// A node whose table holds a predecessor's rules (deny-db's here).
	old := knftables.NewFake(knftables.InetFamily, nft.TableName)
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode, "deny-db.yaml": denyDB})
	prev := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{dir}}}, nft.New(old), nil)
	if err := prev.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode, "deny-web.yaml": denyWeb})
	b := agent.New(agent.Config{Node: "node-1", Input: in}, nft.New(old), nil)
	if err := b.Pass(context.Background()); err == nil {
		t.Error("a restarted agent's pass over an incomplete input succeeded")
	}
	if got := elementsOf(t, old, "ingress-4"); got != "198.18.1.2" {
		t.Errorf("restarted node: ingress-4 = %q, want the predecessor's rules (db) kept", got)
	}
	in.err = nil
	if err := b.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := elementsOf(t, old, "ingress-4"); got != "198.18.1.1" {
		t.Errorf("once complete: ingress-4 = %q, want web's", got)
	}
}

// gatedConntrack is fakeConntrack whose every cut waits for a token.
type gatedConntrack struct {
	fakeConntrack
	tokens chan struct{}
}

func (g *gatedConntrack) Cut(ctx context.Context, keep func(l4.Conn) bool, hold func([]l4.Conn) error) (int, error) {
	<-g.tokens
	return g.fakeConntrack.Cut(ctx, keep, hold)
}

// TestFaultCutForFollowsTheProgrammedInput: a change that programs nothing
// (another node's pod) arrives while the cut of the change before it runs;
// once that cut is done, the status says the input now programmed is cut
// (its denials are the same), not the older one (lab.WaitProgrammed would
// wait for it forever).
func TestFaultCutForFollowsTheProgrammedInput(t *testing.T) {
	dir := t.TempDir()
	twoNodes := oneNode + `
---
apiVersion: v1
kind: Node
metadata: {name: node-2}
---
apiVersion: v1
kind: Pod
metadata: {name: far, namespace: x, labels: {app: far}}
spec:
  nodeName: node-2
  containers: [{name: c}]
status: {podIP: 198.18.1.3}
`
	writeFiles(t, dir, map[string]string{"cluster.yaml": twoNodes})
	status := filepath.Join(t.TempDir(), "status.json")
	toWeb := l4.Conn{Proto: l4.TCP, Src: netip.MustParseAddrPort("198.18.1.2:5000"), Dst: netip.MustParseAddrPort("198.18.1.1:80")}
	ct := &gatedConntrack{fakeConntrack: fakeConntrack{entries: []l4.Conn{toWeb}}, tokens: make(chan struct{}, 2)}
	a := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{dir}}, Interval: 10 * time.Millisecond,
		Conntrack: ct, Status: status}, nft.New(knftables.NewFake(knftables.InetFamily, nft.TableName)), nil)
	ct.tokens <- struct{}{} // the first pass's cut
	runAgent(t, a)
	read := func() agent.Status {
		st, _ := agent.ReadStatus(status)
		return st
	}
	eventually(t, "the first input programmed and cut", func() bool { st := read(); return st.Programmed != "" && st.CutFor == st.Programmed })
	writeFiles(t, dir, map[string]string{"cluster.yaml": twoNodes, "deny-web.yaml": denyWeb})
	eventually(t, "deny-web programmed", func() bool { return read().Tables == 1 })
	denyInput := read().Programmed
	writeFiles(t, dir, map[string]string{"cluster.yaml": strings.Replace(twoNodes, "{app: far}", "{app: farther}", 1), "deny-web.yaml": denyWeb})
	eventually(t, "the relabel on node-2 programmed", func() bool { p := read().Programmed; return p != "" && p != denyInput })
	ct.tokens <- struct{}{} // deny-web's cut goes ahead
	eventually(t, "deny-web's cut done", func() bool { return read().Cut == 1 })
	if st := read(); st.CutFor != st.Programmed {
		t.Errorf("after the cut: cut for %s, programmed %s; want the programmed input cut", st.CutFor, st.Programmed)
	}
}

// TestFaultInvalidInputStaysNotReady: an input that cannot be read as a
// whole (a YAML syntax error) keeps the agent not ready, with its failures
// counted, on every loop turn until it is fixed: it was ready again from
// the second turn on, as if the input were programmed.
func TestFaultInvalidInputStaysNotReady(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode, "deny-web.yaml": denyWeb})
	a := agent.New(agent.Config{Node: "node-1", Input: &agent.Files{Paths: []string{dir}}, Interval: 5 * time.Millisecond},
		nft.New(knftables.NewFake(knftables.InetFamily, nft.TableName)), nil)
	srv := runAgent(t, a)
	eventually(t, "ready", func() bool { code, _ := get(t, srv.URL+"/readyz"); return code == http.StatusOK })
	writeFiles(t, dir, map[string]string{"cluster.yaml": oneNode, "deny-web.yaml": denyWeb, "broken.yaml": "kind: [unclosed\n"})
	eventually(t, "not ready", func() bool { code, _ := get(t, srv.URL+"/readyz"); return code == http.StatusServiceUnavailable })
	eventually(t, "three failures in a row", func() bool {
		_, body := get(t, srv.URL+"/metrics")
		for _, n := range []string{"3", "4", "5", "6"} {
			if strings.Contains(body, "netpol_sync_failures_in_a_row "+n+"\n") {
				return true
			}
		}
		return false
	})
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "not valid YAML") {
		t.Errorf("/readyz after three failed turns: %d %q, want 503 naming the input's error", code, body)
	}
}
