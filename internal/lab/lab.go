// Package lab builds a cluster out of network namespaces on one machine and
// checks the agent's enforcement with real packets. Nodes are namespaces
// joined by a bridge in a "fabric" namespace; pods are namespaces behind a
// veth to their node, with a /32 address, a default route via 169.254.1.1
// and a /32 route on the node (remote pods are routed via their node); a pod
// with an IPv6 address gets it as a /128 with a default route via fe80::1,
// routed the same way. Every pod serves its declared TCP and UDP ports on
// each of its addresses (SCTP is probed with raw IP: see sctp.go); one real
// agent process runs in each node namespace.
// Addresses come from the cluster (198.18.0.0/15 and fd00::/8 for pods,
// 198.19.255.0/24 and fd00::/8 for nodes) and nothing else is ever addressed.
//
// Every namespace is named netpol-<lab>-..., so that `lab down` finds what a
// crashed run left. The lab is a front end: it imports engine, source and
// agent (for the status the agents write), and nothing imports it but cli.
package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

// RunDir holds the state of every lab.
const RunDir = "/run/netpol-lab"

// gateway and gateway6 are the pods' next hops: every node-side veth holds
// them, so a pod's ARP or neighbour solicitation is answered by its node.
const (
	gateway  = "169.254.1.1"
	gateway6 = "fe80::1"
)

// The only address ranges the lab configures.
var (
	podRange4  = netip.MustParsePrefix("198.18.0.0/15")
	nodeRange4 = netip.MustParsePrefix("198.19.255.0/24")
	ula        = netip.MustParsePrefix("fd00::/8")
)

// Lab is a lab as built, saved as lab.json in its directory.
type Lab struct {
	Name  string `json:"name"`
	Dir   string `json:"dir"`
	Nodes []Node `json:"nodes"`
	Pods  []Pod  `json:"pods"`
	// AgentArgs are extra flags for every agent (evaluation options).
	AgentArgs []string `json:"agentArgs,omitempty"`
	// Record: the agents record every connection of their pods, each
	// into RecordFile (netpol agent --record).
	Record bool `json:"record,omitempty"`
	// Kubeconfig, when set, makes the agents watch that cluster instead of
	// the lab's manifest directory; its server must be reachable from the
	// node namespaces (see Forward).
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Services are translated to their backends on every node, as
	// kube-proxy does (services.go).
	Services []Service `json:"services,omitempty"`
	// Zone is what the lab's DNS answers (dns.go).
	Zone []ZoneRecord `json:"dnsZone,omitempty"`
	// PIDs of the agents, by node index, for down.
	PIDs []int `json:"pids"`
}

// Node is a node namespace.
type Node struct {
	Name      string     `json:"name"`
	Namespace string     `json:"namespace"`
	IP        netip.Addr `json:"ip"`
	IP6       netip.Addr `json:"ip6,omitzero"`
}

// Pod is a pod namespace.
type Pod struct {
	Key       string     `json:"pod"`
	Namespace string     `json:"namespace"`
	Node      string     `json:"node"`
	IP        netip.Addr `json:"ip"`
	IP6       netip.Addr `json:"ip6,omitzero"` // only when its node has one too
	Ports     []l4.Port  `json:"-"`
	PortText  []string   `json:"ports"`
}

// ManifestDir is where the agents read the lab's manifests.
func (l *Lab) ManifestDir() string { return filepath.Join(l.Dir, "manifests") }

func (l *Lab) statusFile(node string) string { return filepath.Join(l.Dir, node+".status.json") }

// AgentLog is the file where the agent of node writes its output.
func (l *Lab) AgentLog(node string) string { return filepath.Join(l.Dir, node+".log") }

// AuditLog is the file where the agent of node writes its audit lines.
func (l *Lab) AuditLog(node string) string { return filepath.Join(l.Dir, node+".audit.jsonl") }

// RecordFile is the file where the agent of node keeps its record of
// observed traffic when the lab records.
func (l *Lab) RecordFile(node string) string { return filepath.Join(l.Dir, node+".record.jsonl") }

// recordInterval is how often a lab agent rewrites its record: often, so
// that what a probe did is in the files a moment later.
const recordInterval = 200 * time.Millisecond

// WaitRecorded returns when every recording agent has had two record
// intervals after since: an agent saves its record every interval in
// which it changed (the kernel's lines are read within milliseconds), so
// its file then holds the connections made before since. A file's time
// would say nothing: an agent whose record did not change (the kernel
// folded a repeat) does not write it.
func (l *Lab) WaitRecorded(since time.Time) {
	time.Sleep(time.Until(since.Add(2 * recordInterval)))
}

// Plan lays out a lab for a cluster: its nodes (the nodes pods are on) and
// its pods that have an IPv4 address and are not host-network (those are
// the node itself; the lab does not model them). IPv6 is added where a pod
// and its node both have an address in fd00::/8.
func Plan(name string, c *state.Cluster) (*Lab, error) { return plan(name, c, nil) }

// PlanPods is Plan for some pods only (namespace/name) and their nodes: a
// few real pods inside a large cluster whose other pods exist only as
// policy input, as in the data-path benchmark.
func PlanPods(name string, c *state.Cluster, pods ...string) (*Lab, error) {
	keep := map[string]bool{}
	for _, k := range pods {
		if c.Pod(k) == nil {
			return nil, fmt.Errorf("no pod %s in the cluster", k)
		}
		keep[k] = true
	}
	return plan(name, c, keep)
}

func plan(name string, c *state.Cluster, keep map[string]bool) (*Lab, error) {
	if name == "" || len(name) > 8 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
		return nil, fmt.Errorf("lab name %q: want 1-8 lowercase letters or digits", name)
	}
	l := &Lab{Name: name, Dir: filepath.Join(RunDir, name)}
	used := map[string]bool{}
	for _, p := range c.Pods {
		if p.HostNetwork || (keep != nil && !keep[p.Key()]) {
			continue
		}
		if p.Node == "" {
			return nil, fmt.Errorf("pod %s is on no node: declare Node objects (lab up --nodes N adds them)", p.Key())
		}
		ip, ok := p.IP(netip.Addr{})
		if !ok || !ip.Is4() {
			continue
		}
		if !podRange4.Contains(ip) {
			return nil, fmt.Errorf("pod %s has address %s: the lab only uses 198.18.0.0/15", p.Key(), ip)
		}
		pod := Pod{Key: p.Key(), Namespace: fmt.Sprintf("netpol-%s-p%d", name, len(l.Pods)), Node: p.Node, IP: ip}
		if ip6, ok := p.IP(netip.IPv6Unspecified()); ok {
			if !ula.Contains(ip6) {
				return nil, fmt.Errorf("pod %s has address %s: the lab only uses fd00::/8 for IPv6", p.Key(), ip6)
			}
			pod.IP6 = ip6
		}
		for _, cp := range p.Ports {
			pod.Ports = append(pod.Ports, cp.Port)
			pod.PortText = append(pod.PortText, cp.Port.String())
		}
		l.Pods = append(l.Pods, pod)
		used[p.Node] = true
	}
	for _, n := range c.Nodes {
		if !used[n.Name] {
			continue
		}
		node := Node{Name: n.Name, Namespace: fmt.Sprintf("netpol-%s-n%d", name, len(l.Nodes))}
		for _, a := range n.IPs {
			switch {
			case a.Is4() && !node.IP.IsValid():
				node.IP = a
			case a.Is6() && !node.IP6.IsValid() && ula.Contains(a):
				node.IP6 = a
			}
		}
		if !nodeRange4.Contains(node.IP) {
			return nil, fmt.Errorf("node %s has address %s: the lab only uses 198.19.255.0/24 for nodes", n.Name, node.IP)
		}
		l.Nodes = append(l.Nodes, node)
	}
	has6 := map[string]bool{}
	for _, n := range l.Nodes {
		has6[n.Name] = n.IP6.IsValid()
	}
	for i := range l.Pods {
		if !has6[l.Pods[i].Node] {
			l.Pods[i].IP6 = netip.Addr{} // no route for it: probe IPv4 only
		}
	}
	l.planServices(c)
	return l, nil
}

// Up builds the namespaces and links, writes manifests for the agents and
// starts one agent per node (exe is the netpol binary). Progress goes to w.
// On failure everything built so far is removed.
func (l *Lab) Up(exe string, manifests []byte, w io.Writer) (err error) {
	if names, _ := namespaces("netpol-" + l.Name + "-"); len(names) > 0 {
		return fmt.Errorf("lab %s exists (%d namespaces): run `netpol lab down --name %s` first", l.Name, len(names), l.Name)
	}
	defer func() {
		if err != nil {
			_ = l.Down()
		}
	}()
	if err := os.MkdirAll(l.ManifestDir(), 0o755); err != nil {
		return err
	}
	if err := l.WriteManifests(manifests); err != nil {
		return err
	}
	if l.Zone, err = zoneFromManifests(manifests); err != nil {
		return err
	}
	fabric := "netpol-" + l.Name + "-fabric"
	if err := addNamespace(fabric, noDAD...); err != nil {
		return err
	}
	for _, s := range [][]string{{"-n", fabric, "link", "add", "br0", "type", "bridge"}, {"-n", fabric, "link", "set", "br0", "up"}} {
		if err := ip(s...); err != nil {
			return err
		}
	}
	for i, n := range l.Nodes {
		fmt.Fprintf(w, "node %s (%s) %s\n", n.Name, n.IP, n.Namespace)
		fab := "n" + strconv.Itoa(i)
		if err := addNamespace(n.Namespace, append([]string{"net.ipv4.ip_forward", "1", "net.ipv4.conf.all.rp_filter", "0",
			"net.ipv4.conf.default.rp_filter", "0", "net.ipv6.conf.all.forwarding", "1"}, noDAD...)...); err != nil {
			return err
		}
		cmds := [][]string{
			{"-n", n.Namespace, "link", "set", "lo", "up"},
			{"-n", n.Namespace, "link", "add", "fab", "type", "veth", "peer", "name", fab, "netns", fabric},
			{"-n", fabric, "link", "set", fab, "master", "br0", "up"},
			{"-n", n.Namespace, "addr", "add", n.IP.String() + "/32", "dev", "fab"},
			{"-n", n.Namespace, "link", "set", "fab", "up"},
		}
		if n.IP6.IsValid() {
			cmds = append(cmds, []string{"-n", n.Namespace, "addr", "add", n.IP6.String() + "/128", "dev", "fab", "nodad"})
		}
		for _, c := range cmds {
			if err := ip(c...); err != nil {
				return err
			}
		}
	}
	nodeByName := map[string]Node{}
	for _, n := range l.Nodes {
		nodeByName[n.Name] = n
	}
	for i, p := range l.Pods {
		fmt.Fprintf(w, "pod %s (%s) on %s\n", p.Key, strings.Trim(fmt.Sprint(p.Addrs()), "[]"), p.Node)
		n := nodeByName[p.Node]
		veth := "veth" + strconv.Itoa(i) // as the ptp and bridge plugins name them: the agent's default --pod-interfaces
		if err := addNamespace(p.Namespace, noDAD...); err != nil {
			return err
		}
		cmds := [][]string{
			{"-n", p.Namespace, "link", "set", "lo", "up"},
			{"-n", p.Namespace, "link", "add", "eth0", "type", "veth", "peer", "name", veth, "netns", n.Namespace},
			{"-n", p.Namespace, "addr", "add", p.IP.String() + "/32", "dev", "eth0"},
			{"-n", p.Namespace, "link", "set", "eth0", "up"},
			{"-n", p.Namespace, "route", "add", gateway, "dev", "eth0", "scope", "link"},
			{"-n", p.Namespace, "route", "add", "default", "via", gateway, "dev", "eth0"},
			{"-n", n.Namespace, "addr", "add", gateway + "/32", "dev", veth},
			{"-n", n.Namespace, "link", "set", veth, "up"},
			{"-n", n.Namespace, "route", "add", p.IP.String() + "/32", "dev", veth},
		}
		if p.IP6.IsValid() {
			cmds = append(cmds,
				[]string{"-n", p.Namespace, "addr", "add", p.IP6.String() + "/128", "dev", "eth0", "nodad"},
				[]string{"-n", p.Namespace, "-6", "route", "add", "default", "via", gateway6, "dev", "eth0"},
				[]string{"-n", n.Namespace, "addr", "add", gateway6 + "/64", "dev", veth, "nodad"},
				[]string{"-n", n.Namespace, "-6", "route", "add", p.IP6.String() + "/128", "dev", veth})
		}
		for _, c := range cmds {
			if err := ip(c...); err != nil {
				return err
			}
		}
	}
	// Remote nodes are on the bridge; remote pods behind their node.
	for _, n := range l.Nodes {
		for _, m := range l.Nodes {
			if m.Name != n.Name {
				if err := ip("-n", n.Namespace, "route", "add", m.IP.String()+"/32", "dev", "fab"); err != nil {
					return err
				}
				if n.IP6.IsValid() && m.IP6.IsValid() {
					if err := ip("-n", n.Namespace, "-6", "route", "add", m.IP6.String()+"/128", "dev", "fab"); err != nil {
						return err
					}
				}
			}
		}
		for _, p := range l.Pods {
			if p.Node == n.Name {
				continue
			}
			via := nodeByName[p.Node]
			if err := ip("-n", n.Namespace, "route", "add", p.IP.String()+"/32", "via", via.IP.String(), "dev", "fab", "onlink"); err != nil {
				return err
			}
			if p.IP6.IsValid() && n.IP6.IsValid() {
				if err := ip("-n", n.Namespace, "-6", "route", "add", p.IP6.String()+"/128", "via", via.IP6.String(), "dev", "fab", "onlink"); err != nil {
					return err
				}
			}
		}
	}
	for _, s := range l.Services {
		fmt.Fprintf(w, "service %s at %s\n", s.Key, strings.Trim(fmt.Sprint(s.Addrs), "[]"))
	}
	if err := l.programProxy(); err != nil {
		return err
	}
	for _, n := range l.Nodes {
		fmt.Fprintf(w, "agent for %s\n", n.Name)
		pid, err := l.startAgent(exe, n)
		if err != nil {
			return err
		}
		l.PIDs = append(l.PIDs, pid)
	}
	return l.Save()
}

// startAgent runs `netpol agent` inside the node's namespace, as a
// host-network DaemonSet pod would run on a real node.
func (l *Lab) startAgent(exe string, n Node) (int, error) {
	logf, err := os.Create(l.AgentLog(n.Name))
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	input := []string{"--source", l.ManifestDir()}
	if l.Kubeconfig != "" {
		input = []string{"--kubeconfig", l.Kubeconfig}
	}
	args := append(append([]string{"netns", "exec", n.Namespace, exe, "agent", "--node", n.Name,
		"--status", l.statusFile(n.Name), "--audit-log", l.AuditLog(n.Name), "--interval", "100ms"}, input...), l.AgentArgs...)
	if l.Record {
		args = append(args, "--record", l.RecordFile(n.Name), "--record-interval", recordInterval.String())
	}
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting the agent of %s: %w", n.Name, err)
	}
	go func() { _ = cmd.Wait() }() // reap when it exits
	return cmd.Process.Pid, nil
}

// RestartAgent stops the agent of node (SIGKILL: like a crash, nothing is
// cleaned up) and starts a new one.
func (l *Lab) RestartAgent(exe, node string) error {
	for i, n := range l.Nodes {
		if n.Name != node {
			continue
		}
		old := l.PIDs[i]
		_ = syscall.Kill(-old, syscall.SIGKILL)
		// The status is the old agent's: the new one writes its own.
		if err := os.Remove(l.statusFile(n.Name)); err != nil && !os.IsNotExist(err) {
			return err
		}
		pid, err := l.startAgent(exe, n)
		if err != nil {
			return err
		}
		l.PIDs[i] = pid
		return l.Save()
	}
	return fmt.Errorf("no node %s in lab %s", node, l.Name)
}

// WriteManifests replaces the agents' input atomically. Objects annotated
// OutsideAnnotation are left out of it (agentView).
func (l *Lab) WriteManifests(data []byte) error {
	path := filepath.Join(l.ManifestDir(), "cluster.yaml")
	tmp := filepath.Join(l.Dir, "cluster.yaml.tmp")
	if err := os.WriteFile(tmp, agentView(data), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// WaitProgrammed waits until every agent enforces the current manifests
// and has cut the open connections they deny.
// An agent that reports an error for them is waited for too: the agent
// retries (a kernel that refused one transaction takes the next), so an
// error is the answer only if it is still there when the time is up.
func (l *Lab) WaitProgrammed(ctx context.Context, timeout time.Duration) error {
	files, err := source.ReadFiles([]string{l.ManifestDir()})
	if err != nil {
		return err
	}
	want := source.Fingerprint(files)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		pending, failing := "", ""
		for _, n := range l.Nodes {
			st, err := agent.ReadStatus(l.statusFile(n.Name))
			switch {
			case err == nil && st.Programmed == want && st.CutFor == want:
				continue // programmed, and the connections it denies cut
			case err == nil && st.Input == want && st.Error != "":
				failing = fmt.Sprintf("agent of %s: %s", n.Name, st.Error)
			}
			pending = n.Name
		}
		if pending == "" {
			return nil
		}
		select {
		case <-ctx.Done():
			if failing != "" {
				return fmt.Errorf("%s (still failing after %s)", failing, timeout)
			}
			return fmt.Errorf("agent of %s did not program input %s in %s (log: %s)", pending, want, timeout, l.AgentLog(pending))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (l *Lab) Save() error {
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(l.Dir, "lab.json"), data, 0o644)
}

// Load reads a lab's saved state.
func Load(name string) (*Lab, error) {
	data, err := os.ReadFile(filepath.Join(RunDir, name, "lab.json"))
	if err != nil {
		return nil, fmt.Errorf("lab %s: %w (is it up?)", name, err)
	}
	var l Lab
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, err
	}
	for i := range l.Pods {
		for _, s := range l.Pods[i].PortText {
			spec, err := l4.ParsePortSpec(s)
			if err != nil {
				return nil, err
			}
			l.Pods[i].Ports = append(l.Pods[i].Ports, l4.Port{Proto: spec.Proto, Num: spec.Num})
		}
	}
	return &l, nil
}

// Down stops the lab's processes and deletes its namespaces and directory.
func (l *Lab) Down() error {
	for _, pid := range l.PIDs {
		_ = syscall.Kill(-pid, syscall.SIGKILL) // the process group: ip netns exec and the agent
	}
	return Remove(l.Name)
}

// Remove deletes every namespace of lab name (of every lab when name is
// empty) and its directory: it also cleans up after a crash.
func Remove(name string) error {
	prefix := "netpol-"
	if name != "" {
		prefix += name + "-"
	}
	names, err := namespaces(prefix)
	if err != nil {
		return err
	}
	sort.Strings(names)
	var errs []string
	for _, ns := range names {
		killNamespace(ns)
		if err := ip("netns", "del", ns); err != nil {
			errs = append(errs, err.Error())
		}
	}
	dir := RunDir
	if name != "" {
		dir = filepath.Join(RunDir, name)
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// killNamespace kills processes left in a namespace (agents of a lab whose
// state was lost).
func killNamespace(ns string) {
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		return
	}
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// AgentStatus returns what the agent of node last reported.
func (l *Lab) AgentStatus(node string) (agent.Status, error) {
	return agent.ReadStatus(l.statusFile(node))
}

// OutsideAnnotation marks a pod of a lab's manifests that stands for a
// host outside the cluster (a server that domainNames name): the lab
// builds it as any pod, and its agents never hear of it, as a cluster's
// agents never hear of the internet's hosts.
const OutsideAnnotation = "lab.netpol.io/outside"

// agentView is the manifests without the objects annotated
// OutsideAnnotation "true".
func agentView(data []byte) []byte {
	var out [][]byte
	hidden := false
	for _, doc := range source.SplitDocuments(data) {
		var meta struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if yaml.Unmarshal(doc, &meta) == nil && meta.Metadata.Annotations[OutsideAnnotation] == "true" {
			hidden = true
			continue
		}
		out = append(out, doc)
	}
	if !hidden {
		return data
	}
	return bytes.Join(out, []byte("\n---\n"))
}
