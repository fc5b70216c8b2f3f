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
