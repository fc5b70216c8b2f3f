package lab_test

import (
	"context"
	"encoding/json"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// webService: two web pods on two nodes behind Service shop/web (port 80
// to the pods' named port http, 8080), dual stack, its IPv4 cluster IP
// outside the lab's range. Every web pod is isolated; only web-0 (open)
// admits the client, and the other pod nobody.
const webService = `
apiVersion: v1
kind: Node
metadata: {name: node-1}
status: {addresses: [{type: InternalIP, address: 198.19.255.1}, {type: InternalIP, address: "fd00:198:19::1"}]}
---
apiVersion: v1
kind: Node
metadata: {name: node-2}
status: {addresses: [{type: InternalIP, address: 198.19.255.2}, {type: InternalIP, address: "fd00:198:19::2"}]}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {kubernetes.io/metadata.name: shop}}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: shop, labels: {app: client}}
spec: {nodeName: node-1, containers: [{name: c}]}
status: {podIPs: [{ip: 198.18.1.1}, {ip: "fd00:198:18:1::1"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: shop, labels: {app: other}}
spec: {nodeName: node-2, containers: [{name: c}]}
status: {podIPs: [{ip: 198.18.1.2}, {ip: "fd00:198:18:1::2"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: shop, labels: {app: web, open: "yes"}}
spec: {nodeName: node-1, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIPs: [{ip: 198.18.2.1}, {ip: "fd00:198:18:2::1"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, labels: {app: web}}
spec: {nodeName: node-2, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIPs: [{ip: 198.18.2.2}, {ip: "fd00:198:18:2::2"}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  clusterIPs: [10.96.0.80, "fd00:96::80"]
  ipFamilies: [IPv4, IPv6]
  ipFamilyPolicy: RequireDualStack
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-isolated, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Ingress]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: open-web, namespace: shop}
spec:
  podSelector: {matchLabels: {open: "yes"}}
  ingress: [{from: [{podSelector: {matchLabels: {app: client}}}], ports: [{port: http}]}]
`

// TestLabServiceTranslation: the lab plays kube-proxy. Connections to the
// Service's addresses (IPv4 one the lab chose, the IPv6 cluster IP) are
// translated on the client's node to a backend and its target port, and
// netpol's rules judge the backend: the client reaches web-0 and never
// web-1, over both families; the other pod reaches neither.
func TestLabServiceTranslation(t *testing.T) {
	requireLab(t)
	l := upLab(t, labName("svc"), webService)
	if len(l.Services) != 1 {
		t.Fatalf("lab services = %+v, want shop/web", l.Services)
	}
	s := l.Services[0]
	want := []netip.Addr{netip.MustParseAddr("198.19.254.1"), netip.MustParseAddr("fd00:96::80")}
	if !slices.Equal(s.Addrs, want) || !slices.Equal(s.Declared, []netip.Addr{netip.MustParseAddr("10.96.0.80")}) {
		t.Errorf("shop/web served at %v (declared %v), want %v (declared 10.96.0.80)", s.Addrs, s.Declared, want)
	}
	cells := l.ProbeServices(context.Background(), nil, nil)
	got := map[string]string{}
	for _, c := range cells {
		if c.Err != nil {
			t.Errorf("%s -> %s at %s: %v", c.From, c.Service, c.Addr, c.Err)
		}
		var reached []string
		for pod := range c.Reached {
			reached = append(reached, pod)
		}
		slices.Sort(reached)
		got[c.From+" "+c.Addr.String()] = strings.Join(reached, ",")
	}
	wantReached := map[string]string{
		"shop/client 198.19.254.1": "shop/web-0",
		"shop/client fd00:96::80":  "shop/web-0",
		"shop/other 198.19.254.1":  "",
		"shop/other fd00:96::80":   "",
		"shop/web-0 198.19.254.1":  "", // web-1 admits nobody; web-0 itself is hairpin
		"shop/web-0 fd00:96::80":   "",
		"shop/web-1 198.19.254.1":  "",
		"shop/web-1 fd00:96::80":   "",
	}
	for k, w := range wantReached {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("%s reached %q (probed %v), want %q", k, g, ok, w)
		}
	}
	if len(got) != len(wantReached) {
		t.Errorf("probed %d source/address pairs, want %d: %v", len(got), len(wantReached), got)
	}
	// The command compares each backend with the model's prediction.
	out, err := exec.Command(netpolBinary, "lab", "probe", "--services", "--name", l.Name, "-o", "json").Output()
	if err != nil {
		t.Fatalf("lab probe --services: %v: %s", err, out)
	}
	var probe struct {
		Backends           []struct{ From, Addr, Backend, Kernel, Predicted string }
		Probed, Mismatches int
	}
	if err := json.Unmarshal(out, &probe); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var rows []string
	for _, b := range probe.Backends {
		if b.From == "shop/client" || b.From == "shop/web-0" {
			rows = append(rows, strings.Join([]string{b.From, b.Addr, b.Backend, b.Kernel, b.Predicted}, " "))
		}
	}
	wantRows := []string{
		"shop/client 198.19.254.1 shop/web-0 allowed allowed",
		"shop/client 198.19.254.1 shop/web-1 denied denied",
		"shop/client fd00:96::80 shop/web-0 allowed allowed",
		"shop/client fd00:96::80 shop/web-1 denied denied",
		"shop/web-0 198.19.254.1 shop/web-0 hairpin not compared",
		"shop/web-0 198.19.254.1 shop/web-1 denied denied",
		"shop/web-0 fd00:96::80 shop/web-0 hairpin not compared",
		"shop/web-0 fd00:96::80 shop/web-1 denied denied",
	}
	slices.Sort(rows)
	if !slices.Equal(rows, wantRows) || probe.Probed != 16 || probe.Mismatches != 0 {
		t.Errorf("lab probe --services: %d backends probed, %d mismatches; rows\n%s\nwant 16, 0 and\n%s",
			probe.Probed, probe.Mismatches, strings.Join(rows, "\n"), strings.Join(wantRows, "\n"))
	}
	// The translation is the lab's, not the agents': it is in its own
	// table on every node.
	for _, n := range l.Nodes {
		out, err := exec.Command("ip", "netns", "exec", n.Namespace, "nft", "list", "table", "inet", "netpol-lab-proxy").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "numgen inc mod 2") {
			t.Errorf("node %s: no round-robin translation: %v: %s", n.Name, err, out)
		}
	}
}
