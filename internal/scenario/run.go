package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

// Options tune evaluation, as the CLI flags of the same names do.
type Options struct {
	ANPShape                 source.ANPShape
	LegacyNamespaceIsolation bool
	// ThroughServices checks every cell of the expectation tables the way
	// the Kubernetes e2e suite probes it: to the destination pod's
	// Service (PodService), which must exist, allowed when policy lets
	// the source reach its backends. Policy applies after the translation,
	// so the verdicts are the same as pod to pod; this checks the Service
	// path (target ports, backends) against upstream's own tables.
	ThroughServices bool
	// AfterStep, when set, is called after each step's expectations are
	// checked against the engine, with the cluster as it then is: the lab
	// replays scenarios on real network namespaces this way. An error fails
	// the step.
	AfterStep func(StepState) error
}

// StepState is the cluster after a step.
type StepState struct {
	File    string
	Index   int
	Name    string
	Objects []json.RawMessage // every object, in the order first applied
	Engine  *engine.Engine
	Ports   []l4.Port // the ports the step's expectations name
}

// Result is the outcome of one scenario.
type Result struct {
	Scenario *Scenario
	Steps    []StepResult
	Err      error // the scenario could not run (bad objects, unknown pods)
}

// StepResult is the outcome of one step.
type StepResult struct {
	Name       string
	Checked    int // flows compared
	Mismatches []Mismatch
	Err        error

	engine *engine.Engine
	ports  []l4.Port
}

// Mismatch is a flow whose verdict differs from the expectation, with the
// trace that explains the verdict.
type Mismatch struct {
	From, To string
	Port     l4.Port
	Expected bool
	Flow     engine.Flow
	Verdict  engine.Verdict
	// Reach is set for a flow to a Service: what was expected and found.
	Reach *ReachMismatch
}

// ReachMismatch is a flow to a Service whose reach differs.
type ReachMismatch struct {
	Want, Got engine.Reach
	Summary   string // the verdict in one line (ServiceVerdict.Summary)
}

// Passed reports whether every step ran and matched.
func (r Result) Passed() bool {
	if r.Err != nil {
		return false
	}
	for _, s := range r.Steps {
		if s.Err != nil || len(s.Mismatches) > 0 {
			return false
		}
	}
	return true
}

// Checked counts the flows compared over all steps.
func (r Result) Checked() int {
	n := 0
	for _, s := range r.Steps {
		n += s.Checked
	}
	return n
}

// LoadFiles reads scenario files; directories are walked for *.yaml and *.yml,
// skipping directories whose name starts with "_" (shared manifests that
// scenarios include), as the go tool skips them.
func LoadFiles(paths []string) ([]*Scenario, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() && path != p && strings.HasPrefix(d.Name(), "_") {
				return fs.SkipDir
			}
			if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				found = append(found, path)
			}
			return err
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	var out []*Scenario
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		s, err := Parse(f, data)
		if err != nil {
			return nil, err
		}
		if err := s.readIncludes(); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// readIncludes prepends the objects of the included manifests to Objects.
func (s *Scenario) readIncludes() error {
	var included []json.RawMessage
	for i, inc := range s.Include {
		path := filepath.Join(filepath.Dir(s.File), inc)
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%s: include[%d]: %w", s.File, i, err)
		}
		for j, doc := range source.SplitDocuments(data) {
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			js, err := yaml.YAMLToJSON(doc)
			if err != nil {
				return fmt.Errorf("%s: document %d: %w", path, j, err)
			}
			if string(js) != "null" {
				included = append(included, js)
			}
		}
	}
	s.Objects = append(included, s.Objects...)
	s.Include = nil
	return nil
}

// store is the scenario's cluster: objects by kind/namespace/name, in the
// order they were first applied.
type store struct {
	keys    []string
	objects map[string]storedObject
}

type storedObject struct {
	label string // where the object was written, for error messages
	raw   json.RawMessage
}

func objectKey(kind, namespace, name string) string { return kind + "/" + namespace + "/" + name }

func (s *store) apply(label string, raw json.RawMessage) error {
	var h struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &h); err != nil || h.Kind == "" || h.Metadata.Name == "" {
		return fmt.Errorf("%s: an object needs kind and metadata.name", label)
	}
	k := objectKey(h.Kind, h.Metadata.Namespace, h.Metadata.Name)
	if _, ok := s.objects[k]; !ok {
		s.keys = append(s.keys, k)
	}
	s.objects[k] = storedObject{label: label, raw: raw}
	return nil
}

func (s *store) delete(label string, ref ObjectRef) error {
	k := objectKey(ref.Kind, ref.Namespace, ref.Name)
	if _, ok := s.objects[k]; !ok {
		return fmt.Errorf("%s: no %s %s/%s to delete", label, ref.Kind, ref.Namespace, ref.Name)
	}
	delete(s.objects, k)
	for i, key := range s.keys {
		if key == k {
			s.keys = append(s.keys[:i], s.keys[i+1:]...)
			break
		}
	}
	return nil
}

// all returns the objects in the order first applied.
func (s *store) all() []json.RawMessage {
	out := make([]json.RawMessage, 0, len(s.keys))
	for _, k := range s.keys {
		out = append(out, s.objects[k].raw)
	}
	return out
}

// engine builds an engine over the current objects.
func (s *store) engine(opts Options) (*engine.Engine, error) {
	dec := &source.Decoder{Options: source.Options{ANPShape: opts.ANPShape}}
	var objs []source.Object
	for _, k := range s.keys {
		o := s.objects[k]
		objs = append(objs, dec.Decode(o.label, o.raw)...)
	}
	e, _, err := pipeline.Build(objs, dec.Diags, pipeline.Options{LegacyNamespaceIsolation: opts.LegacyNamespaceIsolation})
	return e, err
}

// Run runs every step of s in order.
func Run(s *Scenario, opts Options) Result {
	res := Result{Scenario: s}
	if s.Settings.LegacyNamespaceIsolation {
		opts.LegacyNamespaceIsolation = true
	}
	if s.Settings.ANPShape != "" {
		opts.ANPShape = source.ANPShape(s.Settings.ANPShape)
	}
	st := &store{objects: map[string]storedObject{}}
	if s.Topology != nil {
		objs, err := s.Topology.objects()
		if err != nil {
			res.Err = fmt.Errorf("%s: %w", s.File, err)
			return res
		}
		for _, o := range objs {
			if err := st.apply(s.File+" topology", o); err != nil {
				res.Err = err
				return res
			}
		}
	}
	for i, o := range s.Objects {
		if err := st.apply(fmt.Sprintf("%s objects[%d]", s.File, i), o); err != nil {
			res.Err = err
			return res
		}
	}
	for i, step := range s.Steps {
		sr := StepResult{Name: step.Name}
		if sr.Name == "" {
			sr.Name = fmt.Sprintf("step %d", i+1)
		}
		sr.Err = runStep(st, s.File, i, step, opts, &sr)
		if sr.Err == nil && opts.AfterStep != nil {
			sr.Err = opts.AfterStep(StepState{File: s.File, Index: i, Name: sr.Name, Objects: st.all(), Engine: sr.engine, Ports: sr.ports})
		}
		res.Steps = append(res.Steps, sr)
		if sr.Err != nil {
			break // later steps build on this one
		}
	}
	return res
}

func runStep(st *store, file string, i int, step Step, opts Options, sr *StepResult) error {
	for j, o := range step.Apply {
		if err := st.apply(fmt.Sprintf("%s steps[%d].apply[%d]", file, i, j), o); err != nil {
			return err
		}
	}
	for j, ref := range step.Delete {
		if err := st.delete(fmt.Sprintf("%s steps[%d].delete[%d]", file, i, j), ref); err != nil {
			return err
		}
	}
	e, err := st.engine(opts)
	if err != nil {
		return err
	}
	sr.engine = e
	var pods []*state.Pod
	for _, p := range e.Cluster().Pods {
		if !p.HostNetwork {
			pods = append(pods, p)
		}
	}
	for _, exp := range step.Expect {
		ports, _ := parsePorts(exp.Ports)
		sr.ports = append(sr.ports, ports...)
		want := expected(exp, pods)
		if opts.ThroughServices {
			if err := checkThroughServices(e, pods, ports, want, sr); err != nil {
				return fmt.Errorf("%s steps[%d]: %w", file, i, err)
			}
			continue
		}
		m := e.Matrix(pods, pods, ports)
		for a, src := range pods {
			for b, dst := range pods {
				if a == b {
					continue
				}
				for k, port := range ports {
					sr.Checked++
					if got := m.Allowed(a, b, k); got != want[a*len(pods)+b] {
						mm := Mismatch{From: src.Key(), To: dst.Key(), Port: port, Expected: want[a*len(pods)+b]}
						mm.Flow, mm.Verdict = decide(e, src.Key(), dst.Key(), l4.PortSpec{Num: port.Num, Proto: port.Proto})
						sr.Mismatches = append(sr.Mismatches, mm)
					}
				}
			}
		}
	}
	for j, f := range step.Flows {
		spec, err := l4.ParsePortProto(string(f.Port), f.Protocol, "protocol")
		if err != nil {
			return fmt.Errorf("%s steps[%d].flows[%d].port: %w", file, i, j, err)
		}
		src, err := e.Endpoint(f.From)
		if err != nil {
			return fmt.Errorf("%s steps[%d].flows[%d].from: %w", file, i, j, err)
		}
		// reach makes a flow one to a Service (an address stays an address
		// without it, even a cluster IP: the topology's Services must not
		// change what a scenario's literal addresses mean).
		if f.Reach != "" {
			svc, ok, err := e.ServiceName(f.To)
			switch {
			case err != nil:
				return fmt.Errorf("%s steps[%d].flows[%d].to: %w", file, i, j, err)
			case !ok:
				return fmt.Errorf("%s steps[%d].flows[%d].reach: only for a flow to a Service (svc/NAMESPACE/NAME, NAME.NAMESPACE.svc or a cluster IP), and %s is none: use allowed", file, i, j, f.To)
			}
			if err := checkServiceFlow(e, src, svc, spec, f, sr); err != nil {
				return fmt.Errorf("%s steps[%d].flows[%d]: %w", file, i, j, err)
			}
			continue
		} else if _, ok, _ := e.ServiceName(f.To); ok && !isAddr(f.To) {
			return fmt.Errorf("%s steps[%d].flows[%d]: %s is a Service: say how many backends the source reaches with reach (all, some, none or no-backends)", file, i, j, f.To)
		}
		dst, err := e.Endpoint(f.To)
		if err != nil {
			return fmt.Errorf("%s steps[%d].flows[%d].to: %w", file, i, j, err)
		}
		if dst, err = dst.ResolvedAs(f.ResolvedAs); err != nil {
			return fmt.Errorf("%s steps[%d].flows[%d].resolvedAs: %w", file, i, j, err)
		}
		flow, err := e.NewFlow(src, dst, spec)
		if err != nil {
			return fmt.Errorf("%s steps[%d].flows[%d]: %w", file, i, j, err)
		}
		sr.ports = append(sr.ports, flow.Port)
		sr.Checked++
		if v := e.Decide(flow); v.Allowed != f.Allowed {
			sr.Mismatches = append(sr.Mismatches, Mismatch{From: f.From, To: f.To, Port: flow.Port, Expected: f.Allowed, Flow: flow, Verdict: v})
		}
	}
	return nil
}

// expected builds the expected table of one expectation.
func expected(exp Expectation, pods []*state.Pod) []bool {
	want := make([]bool, len(pods)*len(pods))
	for i := range want {
		want[i] = exp.Default == "allow"
	}
	for _, o := range exp.Overrides {
		allowed, pats, _ := o.parse()
		for a, src := range pods {
			if !pats[0].matches(src.Namespace.Name, src.Name) {
				continue
			}
			for b, dst := range pods {
				if pats[1].matches(dst.Namespace.Name, dst.Name) {
					want[a*len(pods)+b] = allowed
				}
			}
		}
	}
	return want
}

func decide(e *engine.Engine, from, to string, port l4.PortSpec) (engine.Flow, engine.Verdict) {
	src, err1 := e.Endpoint(from)
	dst, err2 := e.Endpoint(to)
	if err1 != nil || err2 != nil {
		return engine.Flow{}, engine.Verdict{}
	}
	f, err := e.NewFlow(src, dst, port)
	if err != nil {
		return f, engine.Verdict{}
	}
	return f, e.Decide(f)
}

// checkThroughServices checks an expectation table through the
// destinations' Services: every cell (source, destination, port) is the
// source to port of the destination's PodService.
func checkThroughServices(e *engine.Engine, pods []*state.Pod, ports []l4.Port, want []bool, sr *StepResult) error {
	for b, dst := range pods {
		name := PodService(dst.Namespace.Name, dst.Name)
		svc := e.Cluster().Service(dst.Namespace.Name, name)
		if svc == nil {
			return fmt.Errorf("pod %s has no Service %s to probe through (only a topology's pods have one)", dst.Key(), name)
		}
		for _, port := range ports {
			sp, err := engine.ServicePort(svc, l4.PortSpec{Num: port.Num, Proto: port.Proto})
			if err != nil {
				return err
			}
			for a, src := range pods {
				if a == b {
					continue
				}
				sr.Checked++
				v := e.DecideService(e.PodEndpoint(src, netip.Addr{}), svc, sp, netip.Addr{})
				got := len(v.Backends) > 0 && v.Reachable == len(v.Backends)
				if expect := want[a*len(pods)+b]; got != expect {
					mm := Mismatch{From: src.Key(), To: "svc/" + svc.Key(), Port: port, Expected: expect}
					if len(v.Backends) > 0 {
						mm.Flow, mm.Verdict = v.Backends[0].Flow, v.Backends[0].Verdict
					}
					sr.Mismatches = append(sr.Mismatches, mm)
				}
			}
		}
	}
	return nil
}

// checkServiceFlow checks a flow expectation to a Service: its Reach.
func checkServiceFlow(e *engine.Engine, src engine.Endpoint, svc *state.Service, spec l4.PortSpec, f FlowExpectation, sr *StepResult) error {
	want, err := engine.ParseReach(f.Reach)
	if err != nil {
		return fmt.Errorf("reach: %w", err)
	}
	sp, err := engine.ServicePort(svc, spec)
	if err != nil {
		return err
	}
	v := e.DecideService(src, svc, sp, netip.Addr{})
	sr.ports = append(sr.ports, sp.Port)
	sr.Checked++
	if got := v.Reach(); got != want {
		mm := Mismatch{From: f.From, To: f.To, Port: sp.Port, Expected: want == engine.ReachAll, Reach: &ReachMismatch{Want: want, Got: got, Summary: v.Summary()}}
		if len(v.Backends) > 0 {
			mm.Flow, mm.Verdict = v.Backends[0].Flow, v.Backends[0].Verdict
		}
		sr.Mismatches = append(sr.Mismatches, mm)
	}
	return nil
}

func isAddr(s string) bool {
	_, err := netip.ParseAddr(strings.TrimSpace(s))
	return err == nil
}
