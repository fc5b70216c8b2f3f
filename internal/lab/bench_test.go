package lab_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/netpol/netpol/internal/compile"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/lab"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/synth"
)

// BenchmarkLabDatapath measures what policies cost the packets: the TCP
// connection rate and the UDP round trip between two real pods on two lab
// nodes, in the 10k-pod cluster (100 nodes) with 0, 1,000 and 10,000
// NetworkPolicies (and 1 per 100 admin policies). Only the two pods and
// their nodes exist as namespaces; the agents program the whole cluster's
// policies for their 100 local pods each. Every TCP connection and every
// UDP exchange uses a new source port, so each one is a new conntrack entry
// that the rules decide.
//
// The pair is the same in all three clusters (the pods are generated before
// the policies): the server is the node-001 pod with the longest ingress
// table, the client the first node-002 pod it accepts on a TCP port, so the
// packets walk real rule lists on both sides.
func BenchmarkLabDatapath(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	policies := []int{0, 1000, 10000}
	clusters := make([][]source.Object, len(policies))
	engines := make([]*engine.Engine, len(policies))
	for i, n := range policies {
		size := synth.Size10k
		size.Name, size.NetPols, size.Admin, size.Nodes = fmt.Sprintf("10k-%d", n), n, n/100, 100
		clusters[i] = synth.Cluster(size)
		e, _, err := pipeline.Build(clusters[i], nil, pipeline.Options{})
		if err != nil {
			b.Fatal(err)
		}
		engines[i] = e
	}
	client, server, tcp, udp, rules := pickPair(b, engines)
	b.Logf("client %s, server %s (%d ingress rules with 10k policies), %s and %s", client, server, rules, tcp, udp)

	for i, n := range policies {
		func() {
			l, err := lab.PlanPods(labName("bn"), engines[i].Cluster(), client, server)
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := l.Down(); err != nil {
					b.Errorf("lab down: %v", err)
				}
			}()
			if err := l.Up(netpolBinary, manifestsOf(b, clusters[i]), io.Discard); err != nil {
				b.Fatal(err)
			}
			for j := range l.Pods {
				if l.Pods[j].Key == server && !slices.Contains(l.Pods[j].Ports, udp) {
					l.Pods[j].Ports = append(l.Pods[j].Ports, udp) // listen even if undeclared
				}
			}
			servers, err := l.Serve()
			if err != nil {
				b.Fatal(err)
			}
			defer servers.Close()
			if err := l.WaitProgrammed(context.Background(), 3*time.Minute); err != nil {
				b.Fatal(err)
			}
			var src, dst lab.Pod
			for _, p := range l.Pods {
				if p.Key == client {
					src = p
				} else {
					dst = p
				}
			}
			for _, port := range []l4.Port{tcp, udp} {
				what := "tcp-connect"
				if port.Proto == l4.UDP {
					what = "udp-roundtrip"
				}
				b.Run(fmt.Sprintf("policies=%d/%s", n, what), func(b *testing.B) {
					for b.Loop() {
						ok, err := l.Probe(src, dst.IP, port)
						if err != nil || !ok {
							b.Fatalf("%s -> %s %s: allowed %v, %v", client, server, port, ok, err)
						}
					}
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
				})
			}
		}()
	}
}

// pickPair finds a server on node-001 with many ingress rules and a client
// on node-002 that every cluster allows to reach it on one TCP and one UDP
// port of the server (the UDP port: any the server may receive, served by
// the lab whatever the pod declares).
func pickPair(b *testing.B, engines []*engine.Engine) (client, server string, tcp, udp l4.Port, rules int) {
	e := engines[len(engines)-1]
	ir := compile.Node(e, synth.NodeName(0))
	tables := map[string]int{}
	for _, t := range ir.Tables {
		tables[t.Name] = len(t.Rules)
	}
	type candidate struct {
		pod   string
		rules int
	}
	var servers []candidate
	for _, p := range ir.Pods {
		servers = append(servers, candidate{p.Pod, tables[p.Ingress]})
	}
	// Longest tables first; ties by name, so the choice is stable.
	for i := range servers {
		for j := i + 1; j < len(servers); j++ {
			if servers[j].rules > servers[i].rules || servers[j].rules == servers[i].rules && servers[j].pod < servers[i].pod {
				servers[i], servers[j] = servers[j], servers[i]
			}
		}
	}
	allowedEverywhere := func(from, to string, port l4.Port) bool {
		for _, e := range engines {
			src, err1 := e.Endpoint(from)
			dst, err2 := e.Endpoint(to)
			if err1 != nil || err2 != nil || !e.Allowed(engine.Flow{Src: src, Dst: dst, Port: port}) {
				return false
			}
		}
		return true
	}
	for _, s := range servers {
		sp := e.Cluster().Pod(s.pod)
		for _, c := range e.Cluster().Pods {
			if c.Node != synth.NodeName(1) || c.HostNetwork {
				continue
			}
			for _, cp := range sp.Ports {
				if cp.Port.Proto != l4.TCP || !allowedEverywhere(c.Key(), s.pod, cp.Port) {
					continue
				}
				for _, u := range []l4.Port{{Proto: l4.UDP, Num: 53}, {Proto: l4.UDP, Num: cp.Port.Num}} {
					if allowedEverywhere(c.Key(), s.pod, u) {
						return c.Key(), s.pod, cp.Port, u, s.rules
					}
				}
			}
		}
	}
	b.Fatal("no client/server pair is allowed in every cluster")
	return
}

// manifestsOf writes typed objects as the JSON stream the agents read.
func manifestsOf(b *testing.B, objs []source.Object) []byte {
	var buf bytes.Buffer
	for _, o := range objs {
		data, err := json.Marshal(o.Value)
		if err != nil {
			b.Fatal(err)
		}
		buf.Write(data)
		buf.WriteByte('\n')
	}
	return buf.Bytes()
}
