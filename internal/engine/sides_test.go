package engine_test

import (
	"fmt"
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/source"
)

// TestSidesDualStack: the random clusters of TestExplainMatrixAgree are
// IPv4 only, so the families are pinned here. x/a and x/b are dual-stack,
// x/c IPv6 only, x/d IPv4 only. Egress of x/b is allowed to
// fd00:198:18:1::/64 and 198.18.1.4/32 only: towards x/a the flow takes
// IPv4, which the IPv6 block does not hold, so x/b reaches x/d alone; x/c
// shares only IPv6 with x/b, and its address is outside the block.
func TestSidesDualStack(t *testing.T) {
	e := semEngineFrom(t, dualStack+`
---
apiVersion: v1
kind: Pod
metadata: {name: d, namespace: x, labels: {app: d}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIPs: [{ip: 198.18.1.4}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: out, namespace: x}
spec:
  podSelector: {matchLabels: {app: b}}
  policyTypes: [Egress]
  egress:
  - to: [{ipBlock: {cidr: "fd00:198:18:1::/64"}}, {ipBlock: {cidr: 198.18.1.4/32}}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: in, namespace: x}
spec:
  podSelector: {}
  policyTypes: [Ingress]
  ingress:
  - ports: [{port: http}]
`, source.Options{}, engine.Options{})
	c := e.Cluster()
	ports := []l4.Port{{Proto: l4.TCP, Num: 80}, {Proto: l4.TCP, Num: 8080}, {Proto: l4.TCP, Num: 9090}}
	sides := e.Sides(c.Pods, ports, nil)
	allowed := func(i, j, k int) bool {
		ci, cj := sides.Class[i], sides.Class[j]
		return sides.Allowed(ci, cj, k)
	}
	// Written from the policies: every pod's ingress allows its own
	// "http" port only (a: 80, d: 8080; b and c declare none), and b's
	// egress only towards d.
	want := map[string]bool{
		"x/a -> x/d 8080": true, "x/b -> x/d 8080": true, "x/c -> x/a 80": true, "x/d -> x/a 80": true,
		"x/c -> x/d 8080": false, // no family in common
		"x/d -> x/c 80":   false,
		"x/b -> x/a 80":   false, // over IPv4: not in b's blocks
	}
	got := map[string]bool{}
	for i, s := range c.Pods {
		for j, d := range c.Pods {
			if i == j {
				continue
			}
			for k, p := range ports {
				key := fmt.Sprintf("%s -> %s %d", s.Key(), d.Key(), p.Num)
				got[key] = allowed(i, j, k)
				f, ok := e.PodFlow(s, d, p)
				if decided := ok && e.Decide(f).Allowed; got[key] != decided {
					t.Errorf("%s: sides %v, Decide %v", key, got[key], decided)
				}
			}
		}
	}
	for key, w := range want {
		if got[key] != w {
			t.Errorf("%s: %v, want %v", key, got[key], w)
		}
	}
	n := 0
	for _, v := range got {
		if v {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d connections allowed, want the 4 listed", n)
	}
}
