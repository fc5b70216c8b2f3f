package agent_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/cli"
	"github.com/netpol/netpol/internal/kubetest"
	"github.com/netpol/netpol/internal/netnstest"
	"github.com/netpol/netpol/internal/synth"
)

// scaleChild names the environment variable that makes the test binary
// the netpol command: BenchmarkAgentPeak measures the agent as it runs on a
// node, a process of its own with its own children, not the benchmark's
// heap with the generator's objects in it.
const scaleChild = "NETPOL_BENCH_AGENT_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(scaleChild) == "1" {
		// Wait until the parent has moved this process into its cgroup.
		if _, err := bufio.NewReader(os.Stdin).ReadByte(); err != nil {
			os.Exit(3)
		}
		if file := os.Getenv(heapProfile); file != "" {
			go profileLargestHeap(file)
		}
		os.Exit(cli.MainAs("netpol", os.Args[1:], strings.NewReader(""), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// heapProfile names the environment variable that makes the agent child
// write a heap profile (in use, as of a collection) to the file it names
// each time its live heap reaches a new high: where the peak's memory is.
const heapProfile = "NETPOL_BENCH_AGENT_HEAP"

func profileLargestHeap(file string) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var largest uint64
	for range time.Tick(100 * time.Millisecond) {
		metrics.Read(sample)
		if live := sample[0].Value.Uint64(); live > largest+largest/20 {
			largest = live
			if f, err := os.Create(file); err == nil {
				pprof.WriteHeapProfile(f)
				f.Close()
			}
		}
	}
}

// BenchmarkAgentPeak programs node-001 of the scale clusters (synth.Scale10k,
// Scale30k, Scale150k) once: `netpol agent --once --source FILE`, in a
// network namespace of its own (the real kernel, nft and netlink) and a
// memory cgroup of its own, from start to programmed. MB-peak is the
// cgroup's peak (memory.max_usage_in_bytes: the agent, every child it ran,
// and the kernel memory they were charged), MB-kernel the kernel's part of
// it (memory.kmem.max_usage_in_bytes: nftables objects, netlink buffers),
// MB-agent the largest peak RSS of the agent and the children it waited
// for (wait4's, with pages of the binary the cgroup does not charge),
// s-programmed the wall time to programmed. The cgroup's limit is
// NETPOL_BENCH_AGENT_LIMIT (bytes; none by default): under it, a run that
// would need more is OOM-killed and the benchmark fails. GOMEMLIMIT
// is the DaemonSet's. The YAML is written first (not timed, and its page
// cache is the benchmark's, not the agent's).
//
//	go test ./internal/agent -run XXX -bench AgentPeak/10k -benchtime 1x
func BenchmarkAgentPeak(b *testing.B) {
	for _, size := range []synth.Size{synth.Scale10k, synth.Scale30k, synth.Scale150k} {
		b.Run(strings.TrimPrefix(size.Name, "scale-"), func(b *testing.B) {
			if os.Geteuid() != 0 {
				b.Skip("needs root: a network namespace and a memory cgroup")
			}
			dir := b.TempDir()
			file := filepath.Join(dir, "cluster.yaml")
			f, err := os.Create(file)
			if err != nil {
				b.Fatal(err)
			}
			w := bufio.NewWriter(f)
			if err := synth.WriteYAML(w, synth.Cluster(size)); err != nil {
				b.Fatal(err)
			}
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			f.Close()
			var last peak
			for b.Loop() {
				last = runAgentPeak(b, []string{"--source", file}, filepath.Join(dir, "status.json"), true, os.Getenv("NETPOL_BENCH_AGENT_LIMIT"))
			}
			last.report(b)
		})
	}
}

func (p peak) report(b *testing.B) {
	b.ReportMetric(float64(p.cgroup)/(1<<20), "MB-peak")
	b.ReportMetric(float64(p.agent)/(1<<20), "MB-agent")
	b.ReportMetric(float64(p.kernel)/(1<<20), "MB-kernel")
	b.ReportMetric(p.took.Seconds(), "s-programmed")
	b.ReportMetric(float64(p.status.Stats.Elements), "elements")
}

// BenchmarkAgentPeakKube is BenchmarkAgentPeak as the DaemonSet runs the
// agent: `netpol agent --once --kubeconfig` against a real API server
// (internal/kubetest) holding the scale cluster, pods running with their
// addresses, from the first list to programmed. The agent's network
// namespace reaches the API server through a relay on its loopback (the
// benchmark's own process, outside the cgroup), so no address leaves
// the namespaces. Loading the cluster (about four requests an object) is
// not timed. The 150k cluster is left out: its load alone takes the API
// server and etcd past what this machine gives a benchmark.
//
//	go test ./internal/agent -run XXX -bench AgentPeakKube/10k -benchtime 1x -timeout 60m
func BenchmarkAgentPeakKube(b *testing.B) {
	for _, size := range []synth.Size{synth.Scale10k, synth.Scale30k} {
		b.Run(strings.TrimPrefix(size.Name, "scale-"), func(b *testing.B) {
			if os.Geteuid() != 0 {
				b.Skip("needs root: a network namespace and a memory cgroup")
			}
			c := loadCluster(b, size)
			dir := b.TempDir()
			var last peak
			netnstest.Run(b, func() {
				kubeconfig := relayKubeconfig(b, c, dir, nil)
				for b.Loop() {
					last = runAgentPeak(b, []string{"--kubeconfig", kubeconfig, "--report-status=false"}, filepath.Join(dir, "status.json"), false,
						os.Getenv("NETPOL_BENCH_AGENT_LIMIT"))
				}
			})
			last.report(b)
		})
	}
}

// loadCluster starts an API server holding the synthetic cluster of size.
func loadCluster(tb testing.TB, size synth.Size) *kubetest.Cluster {
	c := kubetest.Start(tb)
	objs := synth.Cluster(size)
	manifests := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Value)
		if err != nil {
			tb.Fatal(err)
		}
		manifests[i] = &unstructured.Unstructured{Object: m}
	}
	loaded := time.Now()
	if err := c.Create(tb.Context(), manifests); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("loaded %d objects in %s", len(objs), time.Since(loaded).Round(time.Second))
	return c
}

// TestLabAgentFitsItsLimit: the agent as the DaemonSet runs it — its memory
// limit, its GOMEMLIMIT, against an API server — programs a node of the
// largest cluster deploy/README.md's sizing rule gives that limit (15,000
// pods, synth.Scale15k) without being OOM-killed. Needs root (a network
// namespace, a memory cgroup) and the API server binaries; under CI=true
// it fails without them.
func TestLabAgentFitsItsLimit(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root (CI=true: failing, not skipping)")
		}
		t.Skip("needs root: a network namespace and a memory cgroup")
	}
	if testing.Short() {
		t.Skip("loads 31,051 objects into an API server")
	}
	limit, _ := daemonSetMemory(t)
	c := loadCluster(t, synth.Scale15k)
	dir := t.TempDir()
	netnstest.Run(t, func() {
		kubeconfig := relayKubeconfig(t, c, dir, nil)
		p := runAgentPeak(t, []string{"--kubeconfig", kubeconfig, "--report-status=false"}, filepath.Join(dir, "status.json"), false, limit)
		t.Logf("programmed %d pods' tables in %s; peak %d MiB of the %s-byte limit (kernel %d MiB)", p.status.Pods, p.took.Round(time.Millisecond),
			p.cgroup>>20, limit, p.kernel>>20)
		if p.status.Pods != 100 {
			t.Errorf("%d local pods programmed, want node-001's 100", p.status.Pods)
		}
	})
}

// relayKubeconfig brings up the loopback of the calling thread's network
// namespace, listens on it, relays every connection to c's API server
// from the benchmark's own namespace, and returns a kubeconfig for the
// relay. received (if not nil) counts the bytes the API server sent.
func relayKubeconfig(b testing.TB, c *kubetest.Cluster, dir string, received *atomic.Int64) string {
	b.Helper()
	lo, err := netlink.LinkByName("lo")
	if err == nil {
		err = netlink.LinkSetUp(lo)
	}
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // in the namespace: this thread's
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	server := strings.TrimPrefix(c.Config.Host, "https://")
	go func() { // other threads: the benchmark's namespace
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", server)
			if err != nil {
				in.Close()
				continue
			}
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(countingWriter{in, received}, out); in.Close() }()
		}
	}()
	data, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "relay.kubeconfig")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(data), server, ln.Addr().String())), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// countingWriter adds what it writes to n (when not nil).
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if c.n != nil {
		c.n.Add(int64(n))
	}
	return n, err
}

type peak struct {
	cgroup, kernel, agent int64
	took                  time.Duration
	status                agent.Status
}

// memoryCgroup is the cgroup v1 memory hierarchy's root (this machine's);
// the benchmark makes a group below it per run.
const memoryCgroup = "/sys/fs/cgroup/memory"

// runAgentPeak runs `netpol agent --once --node node-001` with args in a
// memory cgroup of its own, in a network namespace of its own (newNet), or
// in the calling thread's (which netnstest.Run has moved to one).
func runAgentPeak(b testing.TB, args []string, statusFile string, newNet bool, limit string) peak {
	b.Helper()
	if _, err := os.Stat(filepath.Join(memoryCgroup, "memory.max_usage_in_bytes")); err != nil {
		b.Fatalf("no cgroup v1 memory hierarchy at %s (this measures with its peak and kmem counters; cgroup v2 is not supported yet): %v", memoryCgroup, err)
	}
	group := filepath.Join(memoryCgroup, fmt.Sprintf("netpol-bench-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.Mkdir(group, 0o755); err != nil {
		b.Fatalf("a memory cgroup: %v", err)
	}
	defer os.Remove(group)
	if limit != "" {
		if err := os.WriteFile(filepath.Join(group, "memory.limit_in_bytes"), []byte(limit), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cmd := exec.Command(os.Args[0], append([]string{"agent", "--once", "--node", "node-001",
		"--audit-log", "off", "--status", statusFile}, args...)...)
	_, goMemLimit := daemonSetMemory(b)
	cmd.Env = append(os.Environ(), scaleChild+"=1", "GOMEMLIMIT="+goMemLimit)
	var logs strings.Builder // the agent's log, shown when it fails
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if newNet {
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	}
	start, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(group, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		b.Fatal(err)
	}
	began := time.Now()
	start.Write([]byte{1})
	err = cmd.Wait()
	took := time.Since(began)
	oom, _ := os.ReadFile(filepath.Join(group, "memory.oom_control"))
	if err != nil {
		b.Fatalf("agent: %v (%s)\n%s", err, strings.ReplaceAll(string(oom), "\n", ", "), tail(logs.String(), 4000))
	}
	var p peak
	p.took = took
	p.agent = cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
	raw, err := os.ReadFile(filepath.Join(group, "memory.max_usage_in_bytes"))
	if err != nil {
		b.Fatal(err)
	}
	if p.cgroup, err = strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64); err != nil {
		b.Fatal(err)
	}
	if st, err := os.ReadFile(filepath.Join(group, "memory.stat")); err == nil && os.Getenv("NETPOL_BENCH_AGENT_STAT") != "" {
		b.Logf("memory.stat:\n%s", st)
	}
	// The kernel's share (nftables objects, netlink buffers), where the
	// kernel accounts it apart.
	if raw, err := os.ReadFile(filepath.Join(group, "memory.kmem.max_usage_in_bytes")); err == nil {
		p.kernel, _ = strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	}
	data, err := os.ReadFile(statusFile)
	if err == nil {
		err = json.Unmarshal(data, &p.status)
	}
	if err != nil || p.status.Programmed == "" || p.status.Error != "" {
		b.Fatalf("the agent did not program its node: %v %s\n%s", err, p.status.Error, tail(logs.String(), 4000))
	}
	return p
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// daemonSetMemory returns the memory limit deploy/daemonset.yaml gives the
// agent, in bytes as a cgroup takes it, and the GOMEMLIMIT it sets.
func daemonSetMemory(tb testing.TB) (limit, goMemLimit string) {
	tb.Helper()
	data, err := os.ReadFile("../../deploy/daemonset.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	var ds appsv1.DaemonSet
	if err := yaml.Unmarshal(data, &ds); err != nil {
		tb.Fatal(err)
	}
	c := ds.Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			goMemLimit = e.Value
		}
	}
	mem := c.Resources.Limits.Memory()
	if mem.IsZero() || goMemLimit == "" {
		tb.Fatalf("deploy/daemonset.yaml: memory limit %s, GOMEMLIMIT %q: want both", mem, goMemLimit)
	}
	return strconv.FormatInt(mem.Value(), 10), goMemLimit
}
