package engine_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
)

// classTopology: two web replicas alike, a lone db, a lone client. db
// takes 5432 from web only; web takes 80 from anyone.
const classTopology = `
apiVersion: v1
kind: Namespace
metadata: {name: a}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: a, labels: {app: client}}
spec: {containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: a, labels: {app: db}}
spec: {containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: a, labels: {app: web}}
spec: {containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-2, namespace: a, labels: {app: web}}
spec: {containers: [{name: c}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db, namespace: a}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress: [{from: [{podSelector: {matchLabels: {app: web}}}], ports: [{port: 5432}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: a}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{ports: [{port: 80}]}]
`

func TestClassMatrixRows(t *testing.T) {
	e := semEngine(t, classTopology, engine.Options{})
	ports := []l4.Port{{Proto: l4.TCP, Num: 80}, {Proto: l4.TCP, Num: 5432}}
	m := e.ClassMatrix(e.Cluster().Pods, ports)
	if got, want := fmt.Sprint(m.Class), "[0 1 2 2]"; got != want {
		t.Fatalf("classes of client, db, web-1, web-2: %s, want %s", got, want)
	}
	// One line per source class: per destination class, the verdict on 80
	// and on 5432 ('-' where the classes hold no pair of distinct pods).
	want := []string{
		"client: -- XX .X",
		"db:     .. -- .X",
		"web:    .. X. .X",
	}
	row := make([]bool, m.Classes()*len(ports))
	for c := range m.Classes() {
		m.Row(c, row)
		var cells []string
		for d := range m.Classes() {
			cell := ""
			for k := range ports {
				switch {
				case !m.Paired(c, d):
					cell += "-"
				case row[d*len(ports)+k]:
					cell += "."
				default:
					cell += "X"
				}
			}
			cells = append(cells, cell)
		}
		got := strings.Join(cells, " ")
		if w := want[c][strings.Index(want[c], ":")+1:]; strings.TrimSpace(w) != got {
			t.Errorf("row of %s: %s, want %s", want[c][:strings.Index(want[c], ":")], got, strings.TrimSpace(w))
		}
	}
}

// TestClassMatrixManyPorts: ports are decided 64 at a time; the ports
// past the first 64 are decided as well as the first.
func TestClassMatrixManyPorts(t *testing.T) {
	e := semEngine(t, classTopology, engine.Options{})
	var ports []l4.Port
	for n := uint16(1); n <= 100; n++ {
		ports = append(ports, l4.Port{Proto: l4.TCP, Num: n})
	}
	ports = append(ports, l4.Port{Proto: l4.TCP, Num: 5432}, l4.Port{Proto: l4.UDP, Num: 80})
	m := e.ClassMatrix(e.Cluster().Pods, ports)
	row := make([]bool, m.Classes()*len(ports))
	allowed := func(from, to int) string {
		m.Row(from, row)
		var out []string
		for k, p := range ports {
			if row[to*len(ports)+k] {
				out = append(out, p.String())
			}
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		from, to int
		want     string
	}{
		{0, 2, "80/tcp"},   // client -> web
		{2, 1, "5432/tcp"}, // web -> db
		{0, 1, ""},         // client -> db
		{2, 2, "80/tcp"},   // web -> the other web
	} {
		if got := allowed(tc.from, tc.to); got != tc.want {
			t.Errorf("class %d -> %d: allowed %q, want %q", tc.from, tc.to, got, tc.want)
		}
	}
}
