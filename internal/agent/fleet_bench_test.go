package agent_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/kubetest"
	"github.com/netpol/netpol/internal/netnstest"
	"github.com/netpol/netpol/internal/synth"
)

// BenchmarkFleet runs a fleet of agents against one API server
// (internal/kubetest) holding a scale cluster, each agent a process of its
// own in a network namespace of its own acting as one node (node-001 to
// node-0NN), run as the DaemonSet runs it (`netpol agent --kubeconfig`,
// status reports on, its memory settings from deploy/README.md's sizing
// rule for the cluster's pods). Each reaches the API server through a
// relay on its namespace's loopback that counts the bytes the server sends
// it. It measures, in turn:
//
//   - the start: each agent's time to its first programmed pass, the bytes
//     of its first list, and what the API server spent (CPU, memory);
//   - policy changes: the BaselineAdminNetworkPolicy, which selects every
//     pod, alternates its metadata CIDR, so every node's tables change;
//     per change, the time from the write to each agent's pass that
//     programmed it (ms-change-p50/p99: over every agent and change;
//     ms-fleet-p99: the last agent of a change), and the agents' own pass
//     times (ms-pass-p99);
//   - a burst of pod creations: 50 pods on each fleet node (copies of its
//     pods, so they join the same selections), from the first create to the
//     pass in which the last agent has all of its own; then every node's
//     kernel is checked for its new pods.
//
// The agents share this machine's cores with the API server and etcd, so
// the wall times are the fleet's on one machine; a node of a real fleet
// runs one agent, and its latency is closer to the agents' own pass times.
//
//	NETPOL_BENCH_FLEET_SIZE=scale-10k NETPOL_BENCH_FLEET_AGENTS=20 \
//	    go test ./internal/agent -run XXX -bench Fleet -benchtime 1x -timeout 90m
//
// The size defaults to scale-30k and the agents to 20. With
// NETPOL_BENCH_FLEET_LOGS=DIR each agent's log is written to DIR/NODE.log.
func BenchmarkFleet(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root: network namespaces")
	}
	size := synth.Scale30k
	if name := os.Getenv("NETPOL_BENCH_FLEET_SIZE"); name != "" {
		i := slices.IndexFunc([]synth.Size{synth.Scale10k, synth.Scale15k, synth.Scale30k}, func(s synth.Size) bool { return s.Name == name })
		if i < 0 {
			b.Fatalf("NETPOL_BENCH_FLEET_SIZE=%q: want scale-10k, scale-15k or scale-30k", name)
		}
		size = []synth.Size{synth.Scale10k, synth.Scale15k, synth.Scale30k}[i]
	}
	agents := 20
	if n := os.Getenv("NETPOL_BENCH_FLEET_AGENTS"); n != "" {
		var err error
		if agents, err = strconv.Atoi(n); err != nil || agents < 1 || agents > size.Nodes {
			b.Fatalf("NETPOL_BENCH_FLEET_AGENTS=%q: want 1 to %d", n, size.Nodes)
		}
	}
	for b.Loop() {
		runFleet(b, size, agents)
	}
}

func runFleet(b *testing.B, size synth.Size, n int) {
	c := loadCluster(b, size)
	api := c.APIServerPID()
	dir := b.TempDir()
	limit, goMemLimit := sizedMemory(size.Pods)
	progress("%d agents, each with GOMEMLIMIT=%s (limit %d MiB by the sizing rule)", n, goMemLimit, limit>>20)

	// What kube-proxy lists on every node, for comparison: the Services
	// and EndpointSlices such a cluster has (one Service an app of a
	// namespace), through a relay of its own.
	proxyBytes, proxyObjects := kubeProxyList(b, c, dir, size)
	progress("kube-proxy's list (Services and EndpointSlices, %d objects): %d KiB", proxyObjects, proxyBytes>>10)
	b.ReportMetric(float64(proxyBytes)/(1<<20), "MB-kube-proxy-list")

	// The API server's own cost at rest, with no agent: its controllers,
	// leases, etcd compactions.
	rest := procUsage(b, api)
	time.Sleep(20 * time.Second)
	before := procUsage(b, api)
	progress("API server at rest, no agents: %.3f CPU-s in 20 s", (before.cpu - rest.cpu).Seconds())
	fleet := startFleet(b, c, dir, n, goMemLimit)
	started := time.Now()
	var firsts []time.Duration
	for _, a := range fleet {
		p := a.waitPass(b, started, 15*time.Minute, func(p pass) bool { return true })
		firsts = append(firsts, p.at.Sub(started))
	}
	synced := procUsage(b, api)
	time.Sleep(5 * time.Second) // the status reports settle
	var listed int64
	for _, a := range fleet {
		listed += a.received.Load()
	}
	slices.Sort(firsts)
	progress("start: first programmed p50 %s, last %s; %d KiB received per agent; API server %.1f CPU-s per agent, RSS %d -> %d MiB; agents' peak RSS %d MiB",
		firsts[len(firsts)/2].Round(time.Millisecond), firsts[len(firsts)-1].Round(time.Millisecond), listed/int64(n)>>10,
		(synced.cpu-before.cpu).Seconds()/float64(n), before.rss>>20, synced.rss>>20, peakRSS(fleet))
	startPeak, startNode := peakMemory(b, fleet)
	progress("start: cgroup peak %d MiB (%s)", startPeak, startNode)
	b.ReportMetric(firsts[len(firsts)-1].Seconds(), "s-first-last")
	b.ReportMetric(float64(listed)/float64(n)/(1<<20), "MB-list/agent")
	b.ReportMetric((synced.cpu-before.cpu).Seconds()/float64(n), "apiserver-CPU-s-start/agent")
	b.ReportMetric(float64(synced.rss-before.rss)/float64(n)/(1<<20), "apiserver-MB/agent")

	// Idle: what the watches carry when nothing changes (bookmarks, the
	// agents' own status writes coming back), in two windows of 20 s.
	for window := range 2 {
		idleFrom, idleBytes := procUsage(b, api), received(fleet)
		time.Sleep(20 * time.Second)
		idleTo := procUsage(b, api)
		peak, node := peakMemory(b, fleet)
		progress("idle, window %d of 20 s: %d bytes per agent, API server %.3f CPU-s; cgroup peak %d MiB (%s)", window+1, (received(fleet)-idleBytes)/int64(n),
			(idleTo.cpu - idleFrom.cpu).Seconds(), peak, node)
	}

	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		b.Fatal(err)
	}
	banp := dyn.Resource(schema.GroupVersionResource{Group: "policy.networking.k8s.io", Version: "v1alpha1", Resource: "baselineadminnetworkpolicies"})
	const changes = 20
	var all, fleetWide, passes []time.Duration
	changeFrom, changeBytes := procUsage(b, api), received(fleet)
	for i := range changes {
		cidr := []string{"169.254.169.253/32", "169.254.169.254/32"}[i%2]
		patch := fmt.Sprintf(`[{"op":"replace","path":"/spec/egress/1/to/0/networks/0","value":%q}]`, cidr)
		wrote := time.Now()
		if _, err := banp.Patch(b.Context(), "default", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			b.Fatal(err)
		}
		var last time.Duration
		for _, a := range fleet {
			p := a.waitPass(b, wrote, 2*time.Minute, func(p pass) bool { return p.operations > 0 })
			all = append(all, p.at.Sub(wrote))
			passes = append(passes, p.took)
			last = max(last, p.at.Sub(wrote))
		}
		fleetWide = append(fleetWide, last)
		time.Sleep(time.Second)
	}
	changeTo := procUsage(b, api)
	changePeak, changeNode := peakMemory(b, fleet)
	progress("changes: cgroup peak %d MiB (%s)", changePeak, changeNode)
	for _, a := range fleet {
		// The last change's CIDR, in its set's comment (-t leaves the
		// elements out).
		a.checkKernel(b, []string{"-t", "list", "table", "inet", "netpol"}, "cidr 169.254.169.254/32", "cidr 169.254.169.253/32")
	}
	progress("%d changes of the baseline: to programmed on one node p50 %s p99 %s; the last node p50 %s p99 %s; passes p50 %s p99 %s; %d bytes per agent and change; API server %.3f CPU-s per change; agents' peak RSS %d MiB",
		changes, pct(all, 50), pct(all, 99), pct(fleetWide, 50), pct(fleetWide, 99), pct(passes, 50), pct(passes, 99),
		(received(fleet)-changeBytes)/int64(n*changes), (changeTo.cpu-changeFrom.cpu).Seconds()/changes, peakRSS(fleet))
	b.ReportMetric(ms(pct(all, 50)), "ms-change-p50")
	b.ReportMetric(ms(pct(all, 99)), "ms-change-p99")
	b.ReportMetric(ms(pct(fleetWide, 99)), "ms-fleet-p99")
	b.ReportMetric(ms(pct(passes, 99)), "ms-pass-p99")

	// The burst: 50 new pods on each fleet node.
	burst, want := burstPods(size, fleet, 50)
	burstFrom, burstBytes := procUsage(b, api), received(fleet)
	began := time.Now()
	if err := c.Create(b.Context(), burst); err != nil {
		b.Fatal(err)
	}
	created := time.Since(began)
	var burstLast time.Duration
	for _, a := range fleet {
		p := a.waitPass(b, began, 5*time.Minute, func(p pass) bool { return p.pods >= a.pods+want[a.node] })
		burstLast = max(burstLast, p.at.Sub(began))
	}
	burstTo := procUsage(b, api)
	burstPeak, burstNode := peakMemory(b, fleet)
	progress("burst: cgroup peak %d MiB (%s)", burstPeak, burstNode)
	b.ReportMetric(float64(max(startPeak, changePeak, burstPeak)), "MB-cgroup-peak")
	for _, a := range fleet {
		a.checkKernel(b, []string{"list", "map", "inet", "netpol", "ingress-4"}, burstAddress(a.index, want[a.node]-1)+" : ", "")
	}
	progress("burst of %d pods: created in %s, every node had its own programmed after %s; %d KiB per agent; API server %.1f CPU-s; agents' peak RSS %d MiB",
		len(burst), created.Round(time.Millisecond), burstLast.Round(time.Millisecond), (received(fleet)-burstBytes)/int64(n)>>10, (burstTo.cpu - burstFrom.cpu).Seconds(), peakRSS(fleet))
	b.ReportMetric(burstLast.Seconds(), "s-burst")
	for _, a := range fleet {
		a.stop(b)
	}
	stopPeak, stopNode := peakMemory(b, fleet)
	progress("stop (SIGTERM): cgroup peak %d MiB (%s)", stopPeak, stopNode)
}

// kubeProxyList creates the Services and EndpointSlices of size's cluster
// (one Service for each app of a namespace, its pods the endpoints of one
// slice per 100, as the EndpointSlice controller writes them), then lists
// and watches them as kube-proxy does (client-go informers, protobuf)
// through a counting relay, and returns the bytes until they synced and
// how many objects that was.
func kubeProxyList(b *testing.B, c *kubetest.Cluster, dir string, size synth.Size) (int64, int) {
	groups := map[[2]string][]*corev1.Pod{}
	var keys [][2]string
	for _, o := range synth.Cluster(size) {
		if p, ok := o.Value.(*corev1.Pod); ok {
			k := [2]string{p.Namespace, p.Labels["app"]}
			if groups[k] == nil {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], p)
		}
	}
	var objs []*unstructured.Unstructured
	add := func(v any) {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(v)
		if err != nil {
			b.Fatal(err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	ready := true
	for _, k := range keys {
		ns, app := k[0], k[1]
		add(&corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": app}, ClusterIP: corev1.ClusterIPNone,
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}})
		pods := groups[k]
		for i := 0; i < len(pods); i += 100 {
			slice := &discoveryv1.EndpointSlice{TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", app, i/100), Namespace: ns,
					Labels: map[string]string{discoveryv1.LabelServiceName: app, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
				AddressType: discoveryv1.AddressTypeIPv4,
				Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)}}}
			for _, p := range pods[i:min(i+100, len(pods))] {
				node := p.Spec.NodeName
				slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{p.Status.PodIP},
					Conditions: discoveryv1.EndpointConditions{Ready: &ready}, NodeName: &node,
					TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: p.Name}})
			}
			add(slice)
		}
	}
	if err := c.Create(b.Context(), objs); err != nil {
		b.Fatal(err)
	}
	got := new(atomic.Int64)
	proxyDir := filepath.Join(dir, "kube-proxy")
	if err := os.Mkdir(proxyDir, 0o755); err != nil {
		b.Fatal(err)
	}
	// The relay listens on this namespace's loopback, as the API server
	// does: the informers below run here.
	cfg, err := clientcmd.BuildConfigFromFlags("", relayKubeconfig(b, c, proxyDir, got))
	if err != nil {
		b.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	factory.Core().V1().Services().Informer()
	factory.Discovery().V1().EndpointSlices().Informer()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			b.Fatalf("kube-proxy's %v did not sync", typ)
		}
	}
	n := got.Load()
	cancel()
	factory.Shutdown()
	return n, len(objs)
}

func ptr[T any](v T) *T { return &v }

// progress prints a line of the benchmark's findings as it goes: a run
// takes many minutes, and the testing package cuts a benchmark's log short.
func progress(format string, args ...any) {
	fmt.Printf("fleet %s: "+format+"\n", append([]any{time.Now().Format(time.TimeOnly)}, args...)...)
}

// sizedMemory is the memory limit and GOMEMLIMIT the sizing rule
// (agent.MemoryLimit, agent.GoMemLimit) gives a cluster of pods.
func sizedMemory(pods int) (limit int64, goMemLimit string) {
	limit = agent.MemoryLimit(pods)
	return limit, strconv.FormatInt(agent.GoMemLimit(limit, pods)>>20, 10) + "MiB"
}

// fleetAgent is one agent of the fleet: its process, its relay's count and
// the passes it logged.
type fleetAgent struct {
	index    int
	node     string
	pid      int
	cmd      *exec.Cmd
	group    string // its memory cgroup
	received *atomic.Int64
	pods     int // local pods in its first pass

	mu     sync.Mutex
	passes []pass
	tail   []string // the log's last lines, for failures
	log    *os.File // the whole log (NETPOL_BENCH_FLEET_LOGS), or nil
}

// pass is one "Programmed" line of an agent's log, as it arrived.
type pass struct {
	at         time.Time
	pods       int
	operations int
	took       time.Duration
}

var programmedLine = regexp.MustCompile(`"Programmed" node="[^"]*" input="[^"]*" pods=(\d+) tables=\d+ operations=(\d+) conntrackCut=\d+ took="([^"]+)"`)

// startFleet starts n agents for node-001 to node-00n, each in a network
// namespace of its own with a relay to c.
func startFleet(b *testing.B, c *kubetest.Cluster, dir string, n int, goMemLimit string) []*fleetAgent {
	fleet := make([]*fleetAgent, n)
	for i := range fleet {
		a := &fleetAgent{index: i, node: synth.NodeName(i), received: new(atomic.Int64)}
		agentDir := filepath.Join(dir, a.node)
		if err := os.Mkdir(agentDir, 0o755); err != nil {
			b.Fatal(err)
		}
		if logs := os.Getenv("NETPOL_BENCH_FLEET_LOGS"); logs != "" {
			f, err := os.Create(filepath.Join(logs, a.node+".log"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { f.Close() })
			a.log = f
		}
		// The namespace outlives Run: the agent and the relay's socket
		// are in it.
		netnstest.Run(b, func() {
			kubeconfig := relayKubeconfig(b, c, agentDir, a.received)
			a.cmd = exec.Command(os.Args[0], "agent", "--node", a.node, "--kubeconfig", kubeconfig,
				"--audit-log", "off", "--dns-proxy=false", "--status", filepath.Join(agentDir, "status.json"))
			a.cmd.Env = append(os.Environ(), scaleChild+"=1", "GOMEMLIMIT="+goMemLimit)
			stdin, err := a.cmd.StdinPipe()
			if err != nil {
				b.Fatal(err)
			}
			stderr, err := a.cmd.StderrPipe()
			if err != nil {
				b.Fatal(err)
			}
			if err := a.cmd.Start(); err != nil {
				b.Fatal(err)
			}
			a.pid = a.cmd.Process.Pid
			// A memory cgroup of its own, as a container's: its peak
			// counts the agent, its nft children and the kernel memory
			// they were charged.
			a.group = filepath.Join(memoryCgroup, fmt.Sprintf("netpol-fleet-%d-%d", os.Getpid(), i))
			if err := os.Mkdir(a.group, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(a.group, "cgroup.procs"), []byte(strconv.Itoa(a.pid)), 0o644); err != nil {
				b.Fatal(err)
			}
			go a.read(stderr)
			stdin.Write([]byte{1})
		})
		b.Cleanup(func() { os.Remove(a.group) }) // after the stop below
		b.Cleanup(func() { a.stop(b) })
		fleet[i] = a
	}
	return fleet
}

func (a *fleetAgent) read(r interface{ Read([]byte) (int, error) }) {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		line := s.Text()
		at := time.Now()
		a.mu.Lock()
		a.tail = append(a.tail, line)
		if len(a.tail) > 40 {
			a.tail = a.tail[1:]
		}
		if a.log != nil {
			fmt.Fprintln(a.log, line)
		}
		if m := programmedLine.FindStringSubmatch(line); m != nil {
			pods, _ := strconv.Atoi(m[1])
			ops, _ := strconv.Atoi(m[2])
			took, _ := time.ParseDuration(m[3])
			a.passes = append(a.passes, pass{at: at, pods: pods, operations: ops, took: took})
			if a.pods == 0 {
				a.pods = pods
			}
		}
		a.mu.Unlock()
	}
}

// waitPass waits for the first pass after since that ok accepts.
func (a *fleetAgent) waitPass(b *testing.B, since time.Time, timeout time.Duration, ok func(pass) bool) pass {
	deadline := time.Now().Add(timeout)
	for {
		a.mu.Lock()
		for _, p := range a.passes {
			if p.at.After(since) && ok(p) {
				a.mu.Unlock()
				return p
			}
		}
		tail := strings.Join(a.tail, "\n")
		a.mu.Unlock()
		if time.Now().After(deadline) {
			b.Fatalf("%s: no such pass within %s; its log ends:\n%s", a.node, timeout, tail)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkKernel fails unless what nft args lists in the agent's network
// namespace has want in it and not gone (unless empty).
func (a *fleetAgent) checkKernel(b *testing.B, args []string, want, gone string) {
	out, err := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(a.pid), "-n", "nft"}, args...)...).CombinedOutput()
	if err != nil {
		b.Fatalf("%s: nft %s: %v\n%s", a.node, strings.Join(args, " "), err, tail(string(out), 2000))
	}
	if !strings.Contains(string(out), want) || gone != "" && strings.Contains(string(out), gone) {
		b.Errorf("%s: nft %s: want %q in it and not %q:\n%s", a.node, strings.Join(args, " "), want, gone, tail(string(out), 2000))
	}
}

// stop ends the agent (SIGTERM, as the kubelet does).
func (a *fleetAgent) stop(b *testing.B) {
	if a.cmd == nil || a.cmd.ProcessState != nil {
		return
	}
	a.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { a.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		a.cmd.Process.Kill()
		<-done
	}
}

// peakMemory is the largest memory cgroup peak of the fleet's agents
// since the last call, in MiB, and the node it was on.
func peakMemory(b *testing.B, fleet []*fleetAgent) (int64, string) {
	var top int64
	var node string
	for _, a := range fleet {
		file := filepath.Join(a.group, "memory.max_usage_in_bytes")
		raw, err := os.ReadFile(file)
		if err != nil {
			b.Fatal(err)
		}
		v, _ := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
		if v > top {
			top, node = v, a.node
		}
		os.WriteFile(file, []byte("0"), 0o644) // the next phase's peak
	}
	return top >> 20, node
}

func received(fleet []*fleetAgent) int64 {
	var n int64
	for _, a := range fleet {
		n += a.received.Load()
	}
	return n
}

// burstPods returns per copies of pods of each fleet node (labels and
// namespace of one of its pods, a new name and address), and how many
// each node gets.
func burstPods(size synth.Size, fleet []*fleetAgent, per int) ([]*unstructured.Unstructured, map[string]int) {
	nodes := map[string]int{}
	for _, a := range fleet {
		nodes[a.node] = a.index
	}
	var out []*unstructured.Unstructured
	want := map[string]int{}
	for _, o := range synth.Cluster(size) {
		pod, ok := o.Value.(*corev1.Pod)
		if !ok {
			continue
		}
		i, ours := nodes[pod.Spec.NodeName]
		if !ours || want[pod.Spec.NodeName] == per {
			continue
		}
		n := want[pod.Spec.NodeName]
		want[pod.Spec.NodeName]++
		p := pod.DeepCopy()
		p.Name = fmt.Sprintf("%s-burst-%d", pod.Name, n)
		ip := burstAddress(i, n)
		p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			panic(err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out, want
}

// burstAddress is the address of the burst's pod n on fleet node i: from
// 198.19.128.0/18, which the scale clusters leave free.
func burstAddress(i, n int) string {
	v := i*256 + n
	return fmt.Sprintf("198.19.%d.%d", 128+v>>8, v&255)
}

// usage is what a process has spent: CPU time (user and system) and its
// resident memory.
type usage struct {
	cpu time.Duration
	rss int64
}

func procUsage(b *testing.B, pid int) usage {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// The fields after the command's closing parenthesis; utime and stime
	// are the 12th and 13th of them (14 and 15 of the whole line).
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	u := usage{cpu: time.Duration(utime+stime) * time.Second / ticks}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			u.rss = kb << 10
		}
	}
	return u
}

// peakRSS is the largest VmHWM (peak resident memory so far) of the
// fleet's agents, in MiB.
func peakRSS(fleet []*fleetAgent) int64 {
	var top int64
	for _, a := range fleet {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", a.pid))
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(status)) {
			if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				top = max(top, kb>>10)
			}
		}
	}
	return top
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Sorted(slices.Values(d))
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
