// Command synth writes a synthetic cluster (internal/synth) as one YAML
// stream, for the end-to-end measurements of BENCHMARKS.md and for anyone
// who wants to reproduce them:
//
//	go run ./hack/synth -size 10k > /tmp/10k.yaml
//	go run ./hack/synth -size 10k -pr > /tmp/10k-pr.yaml   # for netpol diff
//	netpol explain -f /tmp/10k.yaml --from ns-0001/... --to ... --port 80
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/netpol/netpol/internal/synth"
)

func main() {
	size := flag.String("size", "1k", "1k, 2k, 10k or 100k; scale-10k, scale-30k or scale-150k: pods running with addresses on 100, 300 or 1,500 nodes (the agent's scale benchmarks)")
	pr := flag.Bool("pr", false, "the cluster after a small pull request (synth.SmallPR: three NetworkPolicies removed, an admin rule turned, two pods relabelled), to diff against the cluster")
	flag.Parse()
	sizes := map[string]synth.Size{"1k": synth.Size1k, "2k": synth.Size2k, "10k": synth.Size10k, "30k": synth.Size30k, "100k": synth.Size100k,
		"scale-10k": synth.Scale10k, "scale-30k": synth.Scale30k, "scale-150k": synth.Scale150k}
	s, ok := sizes[*size]
	if !ok {
		fmt.Fprintf(os.Stderr, "synth: -size %q: want 1k, 2k, 10k, 100k, scale-10k, scale-30k or scale-150k\n", *size)
		os.Exit(2)
	}
	objects := synth.Cluster(s)
	if *pr {
		objects = synth.SmallPR(objects)
	}
	w := bufio.NewWriter(os.Stdout)
	if err := synth.WriteYAML(w, objects); err != nil {
		fmt.Fprintln(os.Stderr, "synth:", err)
		os.Exit(1)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "synth:", err)
		os.Exit(1)
	}
}
