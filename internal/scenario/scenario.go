// Package scenario runs policy regression scenarios: a topology, policies,
// ordered steps that change them, and the verdicts expected after each step.
// The same files drive the engine tests (testdata/scenarios), `netpol test`
// for users' own policies, and later the enforcement lab. It is a front end of
// the engine, like the CLI: it imports source, state, policy and engine, and
// nothing imports it but cli and tests.
package scenario

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/source"
)

// Scenario is one file.
type Scenario struct {
	File string `json:"-"`
	// Name says what is tested; Source where the case comes from.
	Name   string `json:"name"`
	Source string `json:"source,omitempty"`
	// Settings that the scenario needs whatever the caller asks for.
	Settings Settings `json:"settings,omitempty"`
	// Include names manifest files (relative to the scenario file) whose
	// objects are applied first: a cluster shared by a family of scenarios.
	// Keep them in a directory starting with "_", which LoadFiles skips.
	Include []string `json:"include,omitempty"`
	// Topology is a shorthand for namespaces, pods and nodes.
	Topology *Topology `json:"topology,omitempty"`
	// Objects are applied before the first step, after the topology (an
	// object with the same kind, namespace and name replaces a generated one).
	Objects []json.RawMessage `json:"objects,omitempty"`
	Steps   []Step            `json:"steps"`
}

// Topology generates the usual test cluster: namespaces labelled ns=<name>,
// pods labelled pod=<name> serving every port, nodes, and for each pod the
// ClusterIP Service through which the Kubernetes e2e suite probes it
// (test/e2e/network/netpol model.go: s-<namespace>-<pod>, selecting
// pod=<name>, a port service-port-<protocol>-<port> per served port, the
// target port the same).
//
// Addresses are fixed so that scenarios can write CIDRs literally: the j-th
// pod (from 0, in list order) of the i-th namespace gets 198.18.(i+1).(j+1)
// and fd00:198:18:(i+1)::(j+1), its Service 198.19.(i+1).(j+1) and
// fd00:198:19:(i+1)::(j+1); the k-th node gets 198.19.255.(k+1) and
// fd00:198:19::(k+1). Pods are placed on the nodes round-robin.
type Topology struct {
	Namespaces []string `json:"namespaces"`
	// Pods are "namespace/name"; a namespace not in Namespaces is added.
	Pods []string `json:"pods"`
	// Ports every pod serves; each is declared as a container port named
	// serve-<port>-<protocol>, as the Kubernetes e2e suite does.
	Ports PortList `json:"ports"`
	Nodes []string `json:"nodes,omitempty"`
}

// Settings of a scenario.
type Settings struct {
	// LegacyNamespaceIsolation: evaluate with the v1beta1 namespace annotation.
	LegacyNamespaceIsolation bool `json:"legacyNamespaceIsolation,omitempty"`
	// ANPShape: auto, v0.1.7 or kep.
	ANPShape string `json:"anpShape,omitempty"`
}

// Step changes the cluster, then checks expectations.
type Step struct {
	Name   string            `json:"name,omitempty"`
	Apply  []json.RawMessage `json:"apply,omitempty"`
	Delete []ObjectRef       `json:"delete,omitempty"`
	Expect []Expectation     `json:"expect,omitempty"`
	Flows  []FlowExpectation `json:"flows,omitempty"`
}

// ObjectRef names an object to delete.
type ObjectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// Expectation is a reachability table between all pods (host-network pods
// excluded) on some ports: Default for every pair, then each override in
// order, the later winning. A pod talking to itself is not checked.
type Expectation struct {
	Ports     PortList   `json:"ports"`
	Default   string     `json:"default"` // allow or deny
	Overrides []Override `json:"overrides,omitempty"`
}

// Override sets the verdict of the pairs a pattern matches. Exactly one of
// Allow and Deny holds a pattern "FROM -> TO", where each side is
// namespace/pod with * as a wildcard for either part ("x/*", "*/a", "*").
type Override struct {
	Allow string `json:"allow,omitempty"`
	Deny  string `json:"deny,omitempty"`
}

// FlowExpectation is one flow checked on its own; From and To may be pods,
// node/NAME or IP addresses. With Reach instead of Allowed, To is a Service
// (svc/NAMESPACE/NAME, NAME.NAMESPACE.svc or a cluster IP), Port its port
// or port name, and Reach how many of its backends (of the source's address
// family) policy lets the source reach: all, some, none or no-backends.
//
// To may be a DNS name (an address outside the cluster that it resolved
// to), and ResolvedAs gives the names an address To was resolved from:
// what domainNames peers match.
type FlowExpectation struct {
	From       string       `json:"from"`
	To         string       `json:"to"`
	Port       l4.PortValue `json:"port"`
	Protocol   string       `json:"protocol,omitempty"`
	Allowed    bool         `json:"allowed"`
	Reach      string       `json:"reach,omitempty"`
	ResolvedAs []string     `json:"resolvedAs,omitempty"`
}

// PortList is a list of ports written as 80, "80/tcp" or "53/udp".
type PortList []string

// UnmarshalJSON accepts numbers as well as strings.
func (p *PortList) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("ports: want a list")
	}
	for _, r := range raw {
		var v l4.PortValue
		if err := v.UnmarshalJSON(r); err != nil {
			return err // "port: ... is neither a number nor a string"
		}
		*p = append(*p, string(v))
	}
	return nil
}

// Parse reads one scenario file.
func Parse(file string, data []byte) (*Scenario, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: not valid YAML: %w", file, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(js)))
	dec.DisallowUnknownFields()
	s := &Scenario{File: file}
	if err := dec.Decode(s); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if s.Name == "" {
		return nil, fmt.Errorf("%s: name is required", file)
	}
	if len(s.Steps) == 0 {
		return nil, fmt.Errorf("%s: at least one step is required", file)
	}
	if _, err := source.ParseANPShape(s.Settings.ANPShape); err != nil {
		return nil, fmt.Errorf("%s: settings.anpShape: %w", file, err)
	}
	for i, st := range s.Steps {
		for j, e := range st.Expect {
			field := fmt.Sprintf("%s: steps[%d].expect[%d]", file, i, j)
			if e.Default != "allow" && e.Default != "deny" {
				return nil, fmt.Errorf("%s.default: want allow or deny, got %q", field, e.Default)
			}
			if _, err := parsePorts(e.Ports); err != nil {
				return nil, fmt.Errorf("%s.ports: %w", field, err)
			}
			for k, o := range e.Overrides {
				if _, _, err := o.parse(); err != nil {
					return nil, fmt.Errorf("%s.overrides[%d]: %w", field, k, err)
				}
			}
		}
	}
	return s, nil
}

func parsePorts(ports []string) ([]l4.Port, error) {
	if len(ports) == 0 {
		return nil, fmt.Errorf("at least one port is required")
	}
	return l4.ParsePortList(strings.Join(ports, ","))
}

// pattern matches "namespace/pod" keys.
type pattern struct{ ns, pod string }

func parsePattern(s string) (pattern, error) {
	s = strings.TrimSpace(s)
	if s == "*" {
		return pattern{"*", "*"}, nil
	}
	ns, pod, ok := strings.Cut(s, "/")
	if !ok || ns == "" || pod == "" {
		return pattern{}, fmt.Errorf("%q: want namespace/pod, with * for either part", s)
	}
	return pattern{ns, pod}, nil
}

func (p pattern) matches(ns, pod string) bool {
	return (p.ns == "*" || p.ns == ns) && (p.pod == "*" || p.pod == pod)
}

// parse returns the override's verdict and its two patterns.
func (o Override) parse() (bool, [2]pattern, error) {
	var pats [2]pattern
	if (o.Allow == "") == (o.Deny == "") {
		return false, pats, fmt.Errorf("exactly one of allow and deny must be set")
	}
	allowed, text := true, o.Allow
	if o.Deny != "" {
		allowed, text = false, o.Deny
	}
	from, to, ok := strings.Cut(text, "->")
	if !ok {
		return false, pats, fmt.Errorf("%q: want \"FROM -> TO\"", text)
	}
	var err error
	if pats[0], err = parsePattern(from); err != nil {
		return false, pats, err
	}
	if pats[1], err = parsePattern(to); err != nil {
		return false, pats, err
	}
	return allowed, pats, nil
}

// objects generates the topology's Kubernetes objects as JSON.
func (t *Topology) objects() ([]json.RawMessage, error) {
	var out []json.RawMessage
	add := func(v any) {
		b, _ := json.Marshal(v)
		out = append(out, b)
	}
	nsIndex := map[string]int{}
	namespaces := append([]string(nil), t.Namespaces...)
	for _, p := range t.Pods {
		ns, _, ok := strings.Cut(p, "/")
		if !ok {
			return nil, fmt.Errorf("topology.pods: %q: want namespace/name", p)
		}
		if _, seen := nsIndex[ns]; !seen {
			nsIndex[ns] = -1
		}
		found := false
		for _, n := range namespaces {
			found = found || n == ns
		}
		if !found {
			namespaces = append(namespaces, ns)
		}
	}
	for i, ns := range namespaces {
		nsIndex[ns] = i
		add(map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": ns, "labels": map[string]string{"ns": ns}}})
	}
	for k, n := range t.Nodes {
		add(map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": n},
			"status": map[string]any{"addresses": []map[string]string{
				{"type": "InternalIP", "address": fmt.Sprintf("198.19.255.%d", k+1)},
				{"type": "InternalIP", "address": fmt.Sprintf("fd00:198:19::%x", k+1)},
			}}})
	}
	ports, err := l4.ParsePortList(strings.Join(t.Ports, ","))
	if err != nil {
		return nil, fmt.Errorf("topology.ports: %w", err)
	}
	var containerPorts []map[string]any
	for _, p := range ports {
		containerPorts = append(containerPorts, map[string]any{
			"name":          fmt.Sprintf("serve-%d-%s", p.Num, strings.ToLower(p.Proto.String())),
			"containerPort": p.Num, "protocol": p.Proto.String()})
	}
	perNS := map[string]int{}
	for i, key := range t.Pods {
		ns, name, _ := strings.Cut(key, "/")
		j := perNS[ns]
		perNS[ns]++
		if j > 253 || nsIndex[ns] > 253 {
			return nil, fmt.Errorf("topology: at most 254 namespaces and 254 pods per namespace")
		}
		v4 := netip.AddrFrom4([4]byte{198, 18, byte(nsIndex[ns] + 1), byte(j + 1)})
		v6 := netip.MustParseAddr(fmt.Sprintf("fd00:198:18:%x::%x", nsIndex[ns]+1, j+1))
		spec := map[string]any{"containers": []map[string]any{{"name": "server", "ports": containerPorts}}}
		if len(t.Nodes) > 0 {
			spec["nodeName"] = t.Nodes[i%len(t.Nodes)]
		}
		add(map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]string{"pod": name}},
			"spec":     spec,
			"status":   map[string]any{"podIPs": []map[string]string{{"ip": v4.String()}, {"ip": v6.String()}}}})
		var servicePorts []map[string]any
		for _, p := range ports {
			servicePorts = append(servicePorts, map[string]any{
				"name": fmt.Sprintf("service-port-%s-%d", strings.ToLower(p.Proto.String()), p.Num),
				"port": p.Num, "protocol": p.Proto.String()})
		}
		add(map[string]any{"apiVersion": "v1", "kind": "Service",
			"metadata": map[string]any{"name": PodService(ns, name), "namespace": ns},
			"spec": map[string]any{
				"selector":       map[string]string{"pod": name},
				"ports":          servicePorts,
				"ipFamilyPolicy": "RequireDualStack", "ipFamilies": []string{"IPv4", "IPv6"},
				"clusterIPs": []string{
					netip.AddrFrom4([4]byte{198, 19, byte(nsIndex[ns] + 1), byte(j + 1)}).String(),
					fmt.Sprintf("fd00:198:19:%x::%x", nsIndex[ns]+1, j+1)},
			}})
	}
	return out, nil
}

// PodService names the Service of a topology's pod.
func PodService(namespace, pod string) string { return "s-" + namespace + "-" + pod }
