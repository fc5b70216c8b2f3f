// Command suggest-bench writes the inputs of BENCHMARKS.md's suggest
// measurement into a directory: the cluster (internal/synth.Apps: 10k pods
// of 998 Deployments, no policy) as apps.yaml, agents' record lines
// (synth.Records) as record.jsonl, and the same traffic as Inspektor
// Gadget's network-policy advisor reads it (its trace network events, one
// JSON line each) as ig-events.jsonl: each allowed record line is one
// outgoing event at its source and, when the destination is a pod, one
// incoming event there. run.sh times both tools on them.
//
//	go run ./hack/suggest-bench -out /tmp/sb -lines 1000000
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/netpol/netpol/internal/observed"
	"github.com/netpol/netpol/internal/synth"
)

func main() {
	out := flag.String("out", "", "the directory to write into")
	lines := flag.Int("lines", 1_000_000, "record lines")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "suggest-bench: give -out DIR")
		os.Exit(2)
	}
	if err := write(*out, *lines); err != nil {
		fmt.Fprintln(os.Stderr, "suggest-bench:", err)
		os.Exit(1)
	}
}

// end is a workload as the advisor sees it: its namespace and labels.
type end struct {
	namespace string
	labels    map[string]string
}

func write(dir string, lines int) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	objs, ends, ports := synth.Apps()
	f, err := os.Create(filepath.Join(dir, "apps.yaml"))
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	if err := synth.WriteYAML(w, objs); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	records := synth.Records(ends, ports, lines)
	if err := os.WriteFile(filepath.Join(dir, "record.jsonl"), records, 0o644); err != nil {
		return err
	}

	byName := map[string]end{}
	for _, o := range objs {
		switch v := o.Value.(type) {
		case *appsv1.Deployment:
			byName[o.Namespace+"/Deployment/"+o.Name] = end{o.Namespace, v.Spec.Template.Labels}
		case *corev1.Pod:
			byName[o.Namespace+"/"+o.Name] = end{o.Namespace, v.Labels}
		}
	}
	g, err := os.Create(filepath.Join(dir, "ig-events.jsonl"))
	if err != nil {
		return err
	}
	gw := bufio.NewWriter(g)
	enc := json.NewEncoder(gw)
	for _, line := range strings.Split(strings.TrimSpace(string(records)), "\n") {
		var r observed.Flow
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return err
		}
		if r.Verdict != observed.Allow {
			continue
		}
		num, proto, _ := strings.Cut(r.Port, "/")
		var port uint16
		fmt.Sscan(num, &port)
		src, dst := byName[r.From], byName[r.To]
		remote := igEndpoint{Addr: r.To, Kind: "raw"}
		if dst.labels != nil {
			remote = igEndpoint{Addr: "198.18.0.2", Kind: "pod", Namespace: dst.namespace, PodLabels: dst.labels}
		}
		if err := enc.Encode(igEvent{Type: "normal", K8s: igK8s{Namespace: src.namespace, PodName: "p"}, PktType: "OUTGOING",
			Proto: proto, Port: port, PodLabels: src.labels, Dst: remote}); err != nil {
			return err
		}
		if dst.labels != nil {
			if err := enc.Encode(igEvent{Type: "normal", K8s: igK8s{Namespace: dst.namespace, PodName: "p"}, PktType: "HOST",
				Proto: proto, Port: port, PodLabels: dst.labels,
				Dst: igEndpoint{Addr: "198.18.0.1", Kind: "pod", Namespace: src.namespace, PodLabels: src.labels}}); err != nil {
				return err
			}
		}
	}
	if err := gw.Flush(); err != nil {
		return err
	}
	return g.Close()
}

// The fields of Inspektor Gadget's trace network event (v0.30.0,
// pkg/gadgets/trace/network/types.Event) that its advisor reads.
type igEvent struct {
	Type      string            `json:"type"`
	K8s       igK8s             `json:"k8s"`
	PktType   string            `json:"pktType"`
	Proto     string            `json:"proto"`
	Port      uint16            `json:"port"`
	PodLabels map[string]string `json:"podLabels"`
	Dst       igEndpoint        `json:"dst"`
}

type igK8s struct {
	Namespace string `json:"namespace"`
	PodName   string `json:"podName"`
}

type igEndpoint struct {
	Addr      string            `json:"addr"`
	Kind      string            `json:"kind"`
	Namespace string            `json:"namespace,omitempty"`
	PodLabels map[string]string `json:"podlabels,omitempty"`
}
