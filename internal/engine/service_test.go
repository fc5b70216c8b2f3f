package engine_test

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
)

// svcCluster: Service web (port 80, named http, targetPort http) leads to
// web-0 and web-1, which declare http as 8080, and web-2, which declares it
// as 9090; the NetworkPolicy lets client and the web pods reach the web
// pods on 8080 only, and not other. Service empty selects nothing.
const svcCluster = `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIPs: [{ip: 198.18.1.1}, {ip: "fd00::1"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.2}
---
apiVersion: v1
kind: Pod
metadata: {name: web-2, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 9090}]}]}
status: {podIP: 198.18.1.3}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: shop, labels: {app: client}}
spec: {containers: [{name: c}]}
status: {podIPs: [{ip: 198.18.1.10}, {ip: "fd00::10"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: other, namespace: shop, labels: {app: other}}
spec: {containers: [{name: c}]}
status: {podIP: 198.18.1.11}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  clusterIPs: [10.96.0.80, "fd00:96::80"]
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
---
apiVersion: v1
kind: Service
metadata: {name: empty, namespace: shop}
spec: {clusterIP: 10.96.0.81, selector: {app: none}, ports: [{port: 80}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: client}}}, {podSelector: {matchLabels: {app: web}}}]
    ports: [{port: 8080}]
`

// TestServiceNames pins the ways a user names a Service, and the errors
// for names that name none.
func TestServiceNames(t *testing.T) {
	e := semEngine(t, svcCluster, engine.Options{})
	tests := []struct {
		in, want string // want: the Service's key, "-" for not a Service name, or the error
	}{
		{"svc/shop/web", "shop/web"},
		{"web.shop.svc", "shop/web"},
		{"web.shop.svc.cluster.local", "shop/web"},
		{"10.96.0.80", "shop/web"},
		{"fd00:96::80", "shop/web"},
		{"198.18.1.1", "-"}, // a pod's address
		{"shop/web-0", "-"},
		{"svc/shop/wbe", `"svc/shop/wbe": no such Service (did you mean shop/web?)`},
		{"svc/shop", `"svc/shop": want svc/NAMESPACE/NAME`},
		{"web.svc", `"web.svc": want NAME.NAMESPACE.svc`},
	}
	for _, tt := range tests {
		svc, ok, err := e.ServiceName(tt.in)
		got := "-"
		switch {
		case err != nil:
			got = err.Error()
		case ok:
			got = svc.Key()
		}
		if got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestDecideService: the verdict per backend after translation, on the
// target port, over the connection's family, with the summary.
func TestDecideService(t *testing.T) {
	e := semEngine(t, svcCluster, engine.Options{})
	tests := []struct {
		from, port string
		via        string // the cluster IP the user named, if any
		want       string
	}{
		{"shop/client", "http", "", `reachable through 2 of 3 backends
shop/web-0 198.18.1.1:8080/tcp ALLOWED
shop/web-1 198.18.1.2:8080/tcp ALLOWED
shop/web-2 198.18.1.3:9090/tcp DENIED`},
		{"shop/client", "80/tcp", "fd00:96::80", `reachable through its only backend
shop/web-0 fd00::1:8080/tcp ALLOWED`},
		{"shop/other", "80", "", `not reachable: all 3 backends are denied
shop/web-0 198.18.1.1:8080/tcp DENIED
shop/web-1 198.18.1.2:8080/tcp DENIED
shop/web-2 198.18.1.3:9090/tcp DENIED`},
		// Hairpin: web-2 reaches itself through its own Service (allowed
		// whatever the policy: after translation it is the pod to
		// itself), and its peers on 8080.
		{"shop/web-2", "http", "", `reachable through 3 of 3 backends
shop/web-0 198.18.1.1:8080/tcp ALLOWED
shop/web-1 198.18.1.2:8080/tcp ALLOWED
shop/web-2 198.18.1.3:9090/tcp ALLOWED a pod can always reach itself`},
	}
	for _, tt := range tests {
		t.Run(tt.from+"->"+tt.port+tt.via, func(t *testing.T) {
			src, err := e.Endpoint(tt.from)
			if err != nil {
				t.Fatal(err)
			}
			svc, _, _ := e.ServiceName("svc/shop/web")
			spec, _ := l4.ParsePortSpec(tt.port)
			port, err := engine.ServicePort(svc, spec)
			if err != nil {
				t.Fatal(err)
			}
			var via netip.Addr
			if tt.via != "" {
				via = netip.MustParseAddr(tt.via)
			}
			v := e.DecideService(src, svc, port, via)
			lines := []string{v.Summary()}
			for _, b := range v.Backends {
				word := "DENIED"
				if b.Verdict.Allowed {
					word = "ALLOWED"
				}
				lines = append(lines, strings.TrimSpace(fmt.Sprintf("%s %s:%s %s %s", b.Flow.Dst, b.Flow.Dst.IP, b.Flow.Port, word, b.Verdict.Note)))
			}
			if got := strings.Join(lines, "\n"); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// TestServicePortErrors: a port the Service does not have names the ones it has.
func TestServicePortErrors(t *testing.T) {
	e := semEngine(t, svcCluster, engine.Options{})
	svc, _, _ := e.ServiceName("svc/shop/web")
	for _, tt := range []struct{ port, want string }{
		{"https", "Service shop/web has no port https (it has: http=80/tcp)"},
		{"80/udp", "Service shop/web has no port 80/udp (it has: http=80/tcp)"},
		{"8080", "Service shop/web has no port 8080 (it has: http=80/tcp)"},
	} {
		spec, _ := l4.ParsePortSpec(tt.port)
		if _, err := engine.ServicePort(svc, spec); err == nil || err.Error() != tt.want {
			t.Errorf("%s: got %v, want %s", tt.port, err, tt.want)
		}
	}
}

// TestServiceMatrix: all, some or none of the backends per source and
// Service port.
func TestServiceMatrix(t *testing.T) {
	e := semEngine(t, svcCluster, engine.Options{})
	c := e.Cluster()
	m := e.ServiceMatrix(c.Pods, c.Services)
	var lines []string
	for si, s := range m.Sources {
		var cells []string
		for ci, col := range m.Columns {
			cells = append(cells, col.String()+"="+m.Reach(si, ci).String())
		}
		lines = append(lines, s.Key()+": "+strings.Join(cells, " "))
	}
	want := `shop/client: svc/shop/empty:80/tcp=no-backends svc/shop/web:http=80/tcp=some
shop/other: svc/shop/empty:80/tcp=no-backends svc/shop/web:http=80/tcp=none
shop/web-0: svc/shop/empty:80/tcp=no-backends svc/shop/web:http=80/tcp=some
shop/web-1: svc/shop/empty:80/tcp=no-backends svc/shop/web:http=80/tcp=some
shop/web-2: svc/shop/empty:80/tcp=no-backends svc/shop/web:http=80/tcp=all`
	if got := strings.Join(lines, "\n"); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}
