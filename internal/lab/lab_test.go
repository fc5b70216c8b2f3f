package lab_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/lab"
	"github.com/netpol/netpol/internal/scenario"
)

// netpolBinary is built once by TestMain: the lab runs the real agent.
var netpolBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "netpol-lab-test")
	if err != nil {
		panic(err)
	}
	netpolBinary = filepath.Join(dir, "netpol")
	out, err := exec.Command("go", "build", "-o", netpolBinary, "../../cmd/netpol").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "building netpol: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// requireLab fails under CI=true and skips elsewhere when the machine
// cannot run the lab (not root, no nft, no ip).
func requireLab(t *testing.T) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, bin := range []string{"nft", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	if len(missing) == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the lab needs %s (CI=true: failing, not skipping)", strings.Join(missing, ", "))
	}
	t.Skipf("the lab needs %s", strings.Join(missing, ", "))
}

// manifests joins JSON objects into one YAML stream.
func manifests(objs []json.RawMessage) []byte {
	var b bytes.Buffer
	for _, o := range objs {
		b.WriteString("---\n")
		b.Write(o)
		b.WriteString("\n")
	}
	return b.Bytes()
}

// pinned returns objs with every pod of the lab on the node the lab wired
// it to. A pod never changes nodes in Kubernetes (a label update keeps
// spec.nodeName), but a scenario step that replaces a pod whole may leave
// the node out, and the input would then place the pod on another node
// than its namespace's link: that node's agent would bind it to no pod
// interface, and the other would drop its packets as those of a pod it
// has not programmed.
func pinned(t *testing.T, objs []json.RawMessage, l *lab.Lab) []json.RawMessage {
	t.Helper()
	node := map[string]string{}
	for _, p := range l.Pods {
		node[p.Key] = p.Node
	}
	out := make([]json.RawMessage, len(objs))
	for i, o := range objs {
		out[i] = o
		var obj map[string]any
		if !bytes.Contains(o, []byte(`"Pod"`)) || json.Unmarshal(o, &obj) != nil || obj["kind"] != "Pod" {
			continue
		}
		meta, _ := obj["metadata"].(map[string]any)
		ns, _ := meta["namespace"].(string)
		name, _ := meta["name"].(string)
		n, ok := node[ns+"/"+name]
		if !ok {
			continue
		}
		spec, _ := obj["spec"].(map[string]any)
		if spec == nil {
			spec = map[string]any{}
			obj["spec"] = spec
		}
		if spec["nodeName"] == n {
			continue
		}
		spec["nodeName"] = n
		data, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = data
	}
	return out
}

// replay runs one scenario in a two-node lab: after every step the agents
// program the new state, and every pod pair is probed with real packets on
// the step's TCP, UDP and SCTP ports, over IPv4 and IPv6; observed must
// equal the engine's verdict (which the scenario runner has already
// compared with upstream's).
// throughServices says whether a replay also probes through Services: for
// the Kubernetes e2e family, which probes that way upstream (its
// topology's Services are the suite's own).
func throughServices(s *scenario.Scenario) bool {
	return s.Topology != nil && strings.Contains(filepath.ToSlash(s.File), "/k8s-e2e/")
}

func replay(t *testing.T, s *scenario.Scenario, name string, probed map[string]int) {
	t.Helper()
	hasNodes := s.Topology != nil && len(s.Topology.Nodes) > 0
	for _, o := range s.Objects {
		hasNodes = hasNodes || bytes.Contains(o, []byte(`"kind":"Node"`))
	}
	switch {
	case hasNodes:
	case s.Topology != nil:
		s.Topology.Nodes = []string{"node-1", "node-2"}
	default:
		s.Objects = append([]json.RawMessage{
			json.RawMessage(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-1"}}`),
			json.RawMessage(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-2"}}`),
		}, s.Objects...)
	}
	var l *lab.Lab
	var servers *lab.Servers
	answered := lab.Answered{} // the names each address was an answer for so far
	t.Cleanup(func() {
		if servers != nil {
			servers.Close()
		}
		if l != nil {
			if err := l.Down(); err != nil {
				t.Errorf("lab down: %v", err)
			}
		}
	})
	ctx := context.Background()
	res := scenario.Run(s, scenario.Options{AfterStep: func(st scenario.StepState) error {
		data := manifests(st.Objects)
		if l == nil {
			var err error
			if l, err = lab.Plan(name, st.Engine.Cluster()); err != nil {
				return err
			}
			if s.Settings.LegacyNamespaceIsolation {
				l.AgentArgs = append(l.AgentArgs, "--legacy-namespace-isolation")
			}
			if s.Settings.ANPShape != "" {
				l.AgentArgs = append(l.AgentArgs, "--anp-shape", s.Settings.ANPShape)
			}
			if err := l.Up(netpolBinary, data, io.Discard); err != nil {
				l = nil
				return err
			}
			if servers, err = l.Serve(); err != nil {
				return err
			}
		} else if err := l.WriteManifests(manifests(pinned(t, st.Objects, l))); err != nil {
			return err
		}
		if err := l.WaitProgrammed(ctx, 20*time.Second); err != nil {
			return err
		}
		ports := st.Ports
		if len(ports) == 0 {
			return nil
		}
		var wrong []string
		for _, c := range l.ProbeAll(ctx, ports, nil) {
			if c.Err != nil {
				return fmt.Errorf("probe %s -> %s (%s) %s: %w", c.From, c.To, c.DstIP, c.Port, c.Err)
			}
			family := "IPv4"
			if c.DstIP.Is6() {
				family = "IPv6"
			}
			probed[family]++
			probed[c.Port.Proto.String()+" "+word(c.Observed)]++
			f, v, err := answered.Predict(st.Engine, c.SrcIP.String(), c.DstIP, c.Port)
			if err != nil {
				return err
			}
			if v.Allowed != c.Observed {
				var trace bytes.Buffer
				engine.WriteTrace(&trace, f, v)
				wrong = append(wrong, fmt.Sprintf("%s -> %s (%s) %s: kernel %s, predicted %s\n%s", c.From, c.To, c.DstIP, c.Port,
					word(c.Observed), word(v.Allowed), trace.String()))
			}
		}
		for _, c := range l.ProbeNames(ports) {
			if c.Err != nil {
				return fmt.Errorf("probe %s -> %s: %w", c.From, c.Name, c.Err)
			}
			answered.Add(c)
			probed["to a name "+word(c.Observed)]++
			f, v, err := answered.Predict(st.Engine, c.From, c.Addr, c.Port)
			if err != nil {
				return err
			}
			if v.Allowed != c.Observed {
				var trace bytes.Buffer
				engine.WriteTrace(&trace, f, v)
				wrong = append(wrong, fmt.Sprintf("%s -> %s (%s, %s) %s: kernel %s, predicted %s\n%s", c.From, c.Name, c.Addr, c.To, c.Port,
					word(c.Observed), word(v.Allowed), trace.String()))
			}
		}
		if throughServices(s) {
			for _, c := range l.ProbeServices(ctx, ports, nil) {
				if c.Err != nil {
					return fmt.Errorf("probe %s -> %s (%s) %s: %w", c.From, c.Service, c.Addr, c.Port.Port, c.Err)
				}
				predicted, err := lab.PredictService(st.Engine, c)
				if err != nil {
					return err
				}
				for _, be := range c.Port.Backends {
					if be.Pod == c.From {
						continue // hairpin: not compared (lab.ServiceCell)
					}
					probed["through a Service "+word(c.Reached[be.Pod])]++
					if want, ok := predicted[be.Pod]; !ok || want != c.Reached[be.Pod] {
						wrong = append(wrong, fmt.Sprintf("%s -> %s (%s) %s, backend %s: kernel %s, predicted %s (known %v)",
							c.From, c.Service, c.Addr, c.Port.Port, be.Pod, word(c.Reached[be.Pod]), word(want), ok))
					}
				}
			}
		}
		if len(wrong) > 0 {
			return fmt.Errorf("%d flows: the kernel disagrees with netpol matrix:\n%s", len(wrong), strings.Join(wrong, "\n"))
		}
		return nil
	}})
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	for _, st := range res.Steps {
		if st.Err != nil {
			t.Fatalf("step %q: %v", st.Name, st.Err)
		}
		for _, m := range st.Mismatches {
			t.Errorf("step %q: engine disagrees with the scenario: %s -> %s %s", st.Name, m.From, m.To, m.Port)
		}
	}
}

func word(allowed bool) string {
	if allowed {
		return "allowed"
	}
	return "denied"
}

// TestLabScenarios replays the scenario corpus with real packets.
func TestLabScenarios(t *testing.T) {
	requireLab(t)
	// NETPOL_LAB_SCENARIOS narrows the replay to some families, e.g.
	// "../../testdata/scenarios/k8s-e2e", while working on one of them.
	pattern := os.Getenv("NETPOL_LAB_SCENARIOS")
	if pattern == "" {
		pattern = "../../testdata/scenarios/*"
	}
	dirs, _ := filepath.Glob(pattern)
	probed := map[string]int{}
	var mu sync.Mutex
	// Scenarios run in parallel (up to -parallel, GOMAXPROCS by default):
	// a lab mostly waits for denied probes to time out. The group returns
	// when all of them are done.
	t.Run("corpus", func(t *testing.T) {
		for _, dir := range dirs {
			if info, err := os.Stat(dir); err != nil || !info.IsDir() {
				continue
			}
			scenarios, err := scenario.LoadFiles([]string{dir})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range scenarios {
				name := labName("t") // unique across the run, and across runs
				t.Run(filepath.Base(dir)+"/"+strings.TrimSuffix(filepath.Base(s.File), ".yaml"), func(t *testing.T) {
					t.Parallel()
					counts := map[string]int{}
					replay(t, s, name, counts)
					mu.Lock()
					defer mu.Unlock()
					for k, v := range counts {
						probed[k] += v
					}
				})
			}
		}
	})
	t.Logf("flows probed with real packets: %v", probed)
	// The corpus has allowed and denied flows of every protocol over both
	// families; a probe that silently stopped working would show here.
	for _, k := range []string{"IPv4", "IPv6", "TCP allowed", "TCP denied", "UDP allowed", "UDP denied", "SCTP allowed", "SCTP denied",
		"through a Service allowed", "through a Service denied"} {
		if probed[k] == 0 && !t.Failed() && os.Getenv("NETPOL_LAB_SCENARIOS") == "" {
			t.Errorf("no %s flow was probed", k)
		}
	}
}
