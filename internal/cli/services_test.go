package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// svcCluster: Service web (80 -> targetPort http) leads to web-0 (http =
// 8080) and web-1 (http = 9090); the NetworkPolicy lets client reach 8080
// only. A Service with a cluster IP and a dual-stack web-0 make the
// family choice visible.
const svcCluster = `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIPs: [{ip: 198.18.0.1}, {ip: "fd00::1"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 9090}]}]}
status: {podIP: 198.18.0.2}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: shop, labels: {app: client}}
spec: {containers: [{name: c}]}
status: {podIPs: [{ip: 198.18.0.10}, {ip: "fd00::10"}]}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {clusterIPs: [10.96.0.80, "fd00:96::80"], selector: {app: web}, ports: [{name: http, port: 80, targetPort: http}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{from: [{podSelector: {matchLabels: {app: client}}}], ports: [{port: 8080}]}]
`

func TestExplainService(t *testing.T) {
	const summary = "shop/client -> svc/shop/web port http 80/tcp (targetPort http): reachable through 1 of 2 backends\n"
	tests := []struct {
		name string
		args []string
		code int
		// out is a prefix of stdout, errOut a part of stderr
		out, errOut string
	}{
		{"svc/NS/NAME by port name", []string{"--to", "svc/shop/web", "--port", "http"}, 0, summary + `
ALLOWED  shop/client (198.18.0.10) -> shop/web-0 (198.18.0.1) port 8080/tcp
`, ""},
		{"DNS name by port number", []string{"--to", "web.shop.svc", "--port", "80"}, 0, summary, ""},
		{"full DNS name", []string{"--to", "web.shop.svc.cluster.local", "--port", "80/tcp"}, 0, summary, ""},
		{"IPv6 cluster IP: IPv6 backends only", []string{"--to", "fd00:96::80", "--port", "http"}, 0,
			"shop/client -> svc/shop/web port http 80/tcp (targetPort http): reachable through its only backend\n\nALLOWED  shop/client (fd00::10) -> shop/web-0 (fd00::1) port 8080/tcp\n", ""},
		{"exit code: a denied backend", []string{"--to", "10.96.0.80", "--port", "http", "--exit-code"}, 1, summary, ""},
		{"no such Service", []string{"--to", "svc/shop/wbe", "--port", "80"}, 2, "", `--to "svc/shop/wbe": no such Service (did you mean shop/web?)`},
		{"no such Service port", []string{"--to", "svc/shop/web", "--port", "https"}, 2, "", "Service shop/web has no port https (it has: http=80/tcp)"},
		{"a port of another protocol", []string{"--to", "svc/shop/web", "--port", "80/udp"}, 2, "", "Service shop/web has no port 80/udp"},
		{"--protocol as the API spells it", []string{"--to", "svc/shop/web", "--port", "80", "--protocol", "UDP"}, 2, "", "Service shop/web has no port 80/udp"},
		{"--protocol against the port's own", []string{"--to", "svc/shop/web", "--port", "80/tcp", "--protocol", "UDP"}, 2, "", `port "80/tcp" is TCP, but --protocol says UDP`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"explain", "-f", "-", "--from", "shop/client"}, tt.args...)
			code, out, errOut := run(t, svcCluster, args...)
			if code != tt.code || !strings.HasPrefix(out, tt.out) || !strings.Contains(errOut, tt.errOut) {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nwant prefix:\n%s\nstderr: %s\nwant: %s", code, tt.code, out, tt.out, errOut, tt.errOut)
			}
		})
	}
}

func TestExplainServiceJSON(t *testing.T) {
	code, out, stderr := run(t, svcCluster, "explain", "-f", "-", "--from", "shop/client", "--to", "svc/shop/web", "--port", "http", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var v struct {
		Allowed          bool
		Service, Summary string
		Reachable        int
		Port             struct {
			Name, Protocol, TargetPort string
			Port                       int
		}
		Backends []struct {
			Allowed bool
			To      struct{ Name, IP string }
			Port    int
			Ingress struct{ Allowed bool }
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(v)
	want := `{"Allowed":false,"Service":"shop/web","Summary":"reachable through 1 of 2 backends","Reachable":1,"Port":{"Name":"http","Protocol":"TCP","TargetPort":"http","Port":80},"Backends":[{"Allowed":true,"To":{"Name":"shop/web-0","IP":"198.18.0.1"},"Port":8080,"Ingress":{"Allowed":true}},{"Allowed":false,"To":{"Name":"shop/web-1","IP":"198.18.0.2"},"Port":9090,"Ingress":{"Allowed":false}}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// jq .allowed answers for a Service as for a pod: true when every
	// backend is allowed (the IPv6 cluster IP leads to web-0 alone).
	code, out, stderr = run(t, svcCluster, "explain", "-f", "-", "--from", "shop/client", "--to", "fd00:96::80", "--port", "80", "--protocol", "TCP", "-o", "json")
	var top struct{ Allowed *bool }
	if err := json.Unmarshal([]byte(out), &top); code != 0 || err != nil || top.Allowed == nil || !*top.Allowed {
		t.Errorf("every backend allowed: exit %d, %v, allowed %v; stderr %s", code, err, top.Allowed, stderr)
	}
}

// TestMatrixServices: sources x Service ports, in every format --services
// takes. web-0 and web-1 reach themselves through their Service
// (hairpin) but not each other.
func TestMatrixServices(t *testing.T) {
	tests := []struct {
		format, want string
	}{
		{"text", `Service ports   (rows: from; backends reached: all, some, none; - no backends)
             svc/shop/web:http=80/tcp
 shop/client                     some
  shop/web-0                     some
  shop/web-1                     some
`},
		{"csv", `from,service,port,name,protocol,reach
shop/client,shop/web,80,http,TCP,some
shop/web-0,shop/web,80,http,TCP,some
shop/web-1,shop/web,80,http,TCP,some
`},
	}
	for _, tt := range tests {
		code, out, stderr := run(t, svcCluster, "matrix", "-f", "-", "--services", "-o", tt.format)
		if code != 0 || out != tt.want {
			t.Errorf("-o %s: exit %d, stderr %s\ngot:\n%s\nwant:\n%s", tt.format, code, stderr, out, tt.want)
		}
	}
	code, out, _ := run(t, svcCluster, "matrix", "-f", "-", "--services", "-o", "json", "-n", "shop", "-l", "app=client")
	want := `[
  {
    "from": "shop/client",
    "service": "shop/web",
    "port": 80,
    "name": "http",
    "protocol": "TCP",
    "reach": "some"
  }
]
`
	if code != 0 || out != want {
		t.Errorf("-o json: exit %d\ngot:\n%s\nwant:\n%s", code, out, want)
	}
	if code, _, stderr := run(t, svcCluster, "matrix", "-f", "-", "--services", "--ports", "80"); code != 2 || !strings.Contains(stderr, "--services prints text, json or csv, and takes no --ports, --staged, --by or --classes") {
		t.Errorf("--services --ports: exit %d, stderr %s; want exit 2", code, stderr)
	}
}

// TestDiffServices: a policy that moves from the Service port to the
// target port shows in the Services section, in text and json.
func TestDiffServices(t *testing.T) {
	dir := t.TempDir()
	old, new := filepath.Join(dir, "old.yaml"), filepath.Join(dir, "new.yaml")
	policy := func(port string) string {
		return strings.Replace(svcCluster, "ports: [{port: 8080}]", "ports: [{port: "+port+"}]", 1)
	}
	if err := os.WriteFile(old, []byte(policy("80")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(new, []byte(policy("http")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := run(t, "", "diff", old, new)
	want := `
Services (pods of each namespace by the backends they reach: all, some, none)
  shop -> svc/shop/web:http=80/tcp  2 some, 1 none -> 1 all, 2 some
`
	if code != 1 || !strings.HasSuffix(out, want) {
		t.Errorf("exit %d, stderr %s\ngot:\n%s\nwant the end:\n%s", code, stderr, out, want)
	}
	// The pull-request comment carries them too.
	_, out, _ = run(t, "", "diff", old, new, "-o", "md")
	if want := "\n#### Services\n\n| from pods of | Service port | backends reached, before | after |\n|---|---|---|---|\n| shop | svc/shop/web:http=80/tcp | 2 some, 1 none | 1 all, 2 some |\n"; !strings.Contains(out, want) {
		t.Errorf("markdown:\n%s\nwant:\n%s", out, want)
	}
	code, out, _ = run(t, "", "diff", old, new, "-o", "json")
	if code != 1 {
		t.Errorf("json: exit %d, want 1", code)
	}
	var v struct{ Services []serviceChangeJSON }
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(v.Services)
	if want := `[{"fromNamespace":"shop","service":"shop/web","port":"http=80/tcp","old":"2 some, 1 none","new":"1 all, 2 some"}]`; string(got) != want {
		t.Errorf("json services: got %s, want %s", got, want)
	}
}

// serviceChangeJSON reads diff's JSON back with the field names it has.
type serviceChangeJSON struct {
	FromNamespace string `json:"fromNamespace"`
	Service       string `json:"service"`
	Port          string `json:"port"`
	Old           string `json:"old"`
	New           string `json:"new"`
}
