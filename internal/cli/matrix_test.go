package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/synth"
)

// shopCluster: a DNS pod in kube-system; in shop a bare batch pod, a
// StatefulSet's db-0 and two replicas of the Deployment web (named by
// their ReplicaSet, as a cluster dump has them). web takes 80 and 443 from
// anyone; db takes 5432 only from the canary replica of web, so that the
// two replicas disagree towards db. Ports declared: 53/tcp, 53/udp, 80,
// 443, 5432.
const shopCluster = `
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Pod
metadata: {name: dns, namespace: kube-system, labels: {app: dns}}
spec: {containers: [{name: c, ports: [{containerPort: 53, protocol: UDP}, {containerPort: 53}]}]}
---
apiVersion: v1
kind: Pod
metadata: {name: batch, namespace: shop, labels: {app: batch}}
spec: {containers: [{name: c}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: db-0
  namespace: shop
  labels: {app: db}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: u1, controller: true}]
spec: {containers: [{name: c, ports: [{containerPort: 5432}]}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-7d4b9c8f6d-x2k9p
  namespace: shop
  labels: {app: web, pod-template-hash: 7d4b9c8f6d}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-7d4b9c8f6d, uid: u2, controller: true}]
spec: {containers: [{name: c, ports: [{containerPort: 80}, {containerPort: 443}]}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-7d4b9c8f6d-m4tq7
  namespace: shop
  labels: {app: web, pod-template-hash: 7d4b9c8f6d, canary: "true"}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-7d4b9c8f6d, uid: u2, controller: true}]
spec: {containers: [{name: c, ports: [{containerPort: 80}, {containerPort: 443}]}]}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db, namespace: shop}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress: [{from: [{podSelector: {matchLabels: {app: web, canary: "true"}}}], ports: [{port: 5432}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress: [{ports: [{port: 80}, {port: 443}]}]
`

func runMatrix(t *testing.T, in string, args ...string) string {
	t.Helper()
	code, out, stderr := run(t, in, append([]string{"matrix", "-f", "-"}, args...)...)
	if code != 0 {
		t.Fatalf("matrix %v: exit %d: %s", args, code, stderr)
	}
	return out
}

func wantOutput(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n%s\nwant:\n%s", what, got, want)
	}
}

// TestMatrixText: ports with identical tables share one, rows are
// numbered and grouped by namespace, columns headed by the numbers with a
// space between namespaces, Deployment pods without their template hash.
func TestMatrixText(t *testing.T) {
	want := `53/tcp, 53/udp   (rows: from, columns: to, numbered as the rows; . allowed, X denied)
                           1 2345
kube-system 1 dns          . .XXX
shop        2 batch        . .XXX
            3 db-0         . ..XX
            4 web-*-m4tq7  . .X.X
            5 web-*-x2k9p  . .XX.

80/tcp, 443/tcp   (rows: from, columns: to, numbered as the rows; . allowed, X denied)
                           1 2345
kube-system 1 dns          . .X..
shop        2 batch        . .X..
            3 db-0         . ....
            4 web-*-m4tq7  . .X..
            5 web-*-x2k9p  . .X..

5432/tcp   (rows: from, columns: to, numbered as the rows; . allowed, X denied)
                           1 2345
kube-system 1 dns          . .XXX
shop        2 batch        . .XXX
            3 db-0         . ..XX
            4 web-*-m4tq7  . ...X
            5 web-*-x2k9p  . .XX.

5 pods, 5 ports: 4 behaviour classes decided
`
	wantOutput(t, "text", runMatrix(t, shopCluster), want)
}

// TestMatrixTextNumbersDownwards: past nine columns the numbers are
// written downwards, one digit per line.
func TestMatrixTextNumbersDownwards(t *testing.T) {
	var in strings.Builder
	for _, name := range []string{"p01", "p02", "p03", "p04", "p05", "p06", "p07", "p08", "p09", "p10", "p11"} {
		in.WriteString("---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: a}\nspec: {containers: [{name: c}]}\n")
	}
	want := `80/tcp   (rows: from, columns: to, numbered as the rows; . allowed, X denied)
                   11
          12345678901
a  1 p01  ...........
   2 p02  ...........
   3 p03  ...........
   4 p04  ...........
   5 p05  ...........
   6 p06  ...........
   7 p07  ...........
   8 p08  ...........
   9 p09  ...........
  10 p10  ...........
  11 p11  ...........

11 pods, 1 port: 1 behaviour class decided
`
	wantOutput(t, "text", runMatrix(t, in.String(), "--ports", "80"), want)
}

// TestMatrixByWorkload: the replicas of web disagree towards db (only the
// canary may connect): '~', not a guess; a workload towards itself is
// decided between its pods (web's replicas cannot reach each other on
// 53), a lone pod reaches itself.
func TestMatrixByWorkload(t *testing.T) {
	legend := "(rows: from, columns: to, numbered as the rows; . allowed, X denied, ~ some pairs of their pods allowed and some denied)"
	want := `53/tcp, 53/udp   ` + legend + `
                              1 234
kube-system 1 pod/dns         . X.X
shop        2 deployment/web  . X.X
            3 pod/batch       . X.X
            4 statefulset/db  . X..

80/tcp, 443/tcp   ` + legend + `
                              1 234
kube-system 1 pod/dns         . ..X
shop        2 deployment/web  . ..X
            3 pod/batch       . ..X
            4 statefulset/db  . ...

5432/tcp   ` + legend + `
                              1 234
kube-system 1 pod/dns         . X.X
shop        2 deployment/web  . X.~
            3 pod/batch       . X.X
            4 statefulset/db  . X..

4 workloads of 5 pods, 5 ports: 4 behaviour classes decided
`
	wantOutput(t, "text --by workload", runMatrix(t, shopCluster, "--by", "workload"), want)

	wantCSV := `from,to,port,protocol,allowed,mixed
kube-system/pod/dns,kube-system/pod/dns,5432,TCP,true,false
kube-system/pod/dns,shop/deployment/web,5432,TCP,false,false
kube-system/pod/dns,shop/pod/batch,5432,TCP,true,false
kube-system/pod/dns,shop/statefulset/db,5432,TCP,false,false
shop/deployment/web,kube-system/pod/dns,5432,TCP,true,false
shop/deployment/web,shop/deployment/web,5432,TCP,false,false
shop/deployment/web,shop/pod/batch,5432,TCP,true,false
shop/deployment/web,shop/statefulset/db,5432,TCP,false,true
shop/pod/batch,kube-system/pod/dns,5432,TCP,true,false
shop/pod/batch,shop/deployment/web,5432,TCP,false,false
shop/pod/batch,shop/pod/batch,5432,TCP,true,false
shop/pod/batch,shop/statefulset/db,5432,TCP,false,false
shop/statefulset/db,kube-system/pod/dns,5432,TCP,true,false
shop/statefulset/db,shop/deployment/web,5432,TCP,false,false
shop/statefulset/db,shop/pod/batch,5432,TCP,true,false
shop/statefulset/db,shop/statefulset/db,5432,TCP,true,false
`
	wantOutput(t, "csv --by workload", runMatrix(t, shopCluster, "--by", "workload", "--ports", "5432", "-o", "csv"), wantCSV)

	wantJSON := `[
{"from":"shop/deployment/web","to":"shop/deployment/web","port":5432,"protocol":"TCP","allowed":false},
{"from":"shop/deployment/web","to":"shop/pod/batch","port":5432,"protocol":"TCP","allowed":true},
{"from":"shop/deployment/web","to":"shop/statefulset/db","port":5432,"protocol":"TCP","allowed":false,"mixed":true},
{"from":"shop/pod/batch","to":"shop/deployment/web","port":5432,"protocol":"TCP","allowed":false},
{"from":"shop/pod/batch","to":"shop/pod/batch","port":5432,"protocol":"TCP","allowed":true},
{"from":"shop/pod/batch","to":"shop/statefulset/db","port":5432,"protocol":"TCP","allowed":false},
{"from":"shop/statefulset/db","to":"shop/deployment/web","port":5432,"protocol":"TCP","allowed":false},
{"from":"shop/statefulset/db","to":"shop/pod/batch","port":5432,"protocol":"TCP","allowed":true},
{"from":"shop/statefulset/db","to":"shop/statefulset/db","port":5432,"protocol":"TCP","allowed":true}
]
`
	out := runMatrix(t, shopCluster, "--by", "workload", "--ports", "5432", "-o", "json", "-n", "shop")
	wantOutput(t, "json --by workload", out, wantJSON)
	var cells []map[string]any
	if err := json.Unmarshal([]byte(out), &cells); err != nil || len(cells) != 9 {
		t.Errorf("json --by workload: %d cells, %v", len(cells), err)
	}

	wantMD := `**5432/tcp**   (. allowed, X denied, ~ some pairs of their pods allowed and some denied)

| from \ to | shop/deployment/web | shop/statefulset/db |
|---|---|---|
| shop/deployment/web | X | ~ |
| shop/statefulset/db | X | . |
`
	wantOutput(t, "md --by workload", runMatrix(t, shopCluster, "--by", "workload", "--ports", "5432", "-o", "md", "-l", "app in (web,db)"), wantMD)
}

// TestMatrixJSONAndMarkdownPerPod: the cell formats name pods in full.
func TestMatrixJSONAndMarkdownPerPod(t *testing.T) {
	wantJSON := `[
{"from":"shop/web-7d4b9c8f6d-m4tq7","to":"shop/web-7d4b9c8f6d-m4tq7","port":80,"protocol":"TCP","allowed":true},
{"from":"shop/web-7d4b9c8f6d-m4tq7","to":"shop/web-7d4b9c8f6d-m4tq7","port":5432,"protocol":"TCP","allowed":true},
{"from":"shop/web-7d4b9c8f6d-m4tq7","to":"shop/web-7d4b9c8f6d-x2k9p","port":80,"protocol":"TCP","allowed":true},
{"from":"shop/web-7d4b9c8f6d-m4tq7","to":"shop/web-7d4b9c8f6d-x2k9p","port":5432,"protocol":"TCP","allowed":false},
{"from":"shop/web-7d4b9c8f6d-x2k9p","to":"shop/web-7d4b9c8f6d-m4tq7","port":80,"protocol":"TCP","allowed":true},
{"from":"shop/web-7d4b9c8f6d-x2k9p","to":"shop/web-7d4b9c8f6d-m4tq7","port":5432,"protocol":"TCP","allowed":false},
{"from":"shop/web-7d4b9c8f6d-x2k9p","to":"shop/web-7d4b9c8f6d-x2k9p","port":80,"protocol":"TCP","allowed":true},
{"from":"shop/web-7d4b9c8f6d-x2k9p","to":"shop/web-7d4b9c8f6d-x2k9p","port":5432,"protocol":"TCP","allowed":true}
]
`
	wantOutput(t, "json", runMatrix(t, shopCluster, "-l", "app=web", "--ports", "80,5432", "-o", "json"), wantJSON)

	wantMD := `**80/tcp, 443/tcp**   (. allowed, X denied)

| from \ to | shop/batch | shop/db-0 | shop/web-7d4b9c8f6d-m4tq7 | shop/web-7d4b9c8f6d-x2k9p |
|---|---|---|---|---|
| shop/batch | . | X | . | . |
| shop/db-0 | . | . | . | . |
| shop/web-7d4b9c8f6d-m4tq7 | . | X | . | . |
| shop/web-7d4b9c8f6d-x2k9p | . | X | . | . |
`
	wantOutput(t, "md", runMatrix(t, shopCluster, "-n", "shop", "--ports", "80,443", "-o", "md"), wantMD)
}

// TestMatrixConnList: only what is allowed, over every port (web takes
// 80 and 443 only; db only 5432 from the canary), self pairs left out;
// per workload, what only some pairs of pods may use says so.
func TestMatrixConnList(t *testing.T) {
	want := `FROM                       TO                         ALLOWED
kube-system/dns            shop/batch                 all
kube-system/dns            shop/web-7d4b9c8f6d-m4tq7  tcp 80,443
kube-system/dns            shop/web-7d4b9c8f6d-x2k9p  tcp 80,443
shop/batch                 kube-system/dns            all
shop/batch                 shop/web-7d4b9c8f6d-m4tq7  tcp 80,443
shop/batch                 shop/web-7d4b9c8f6d-x2k9p  tcp 80,443
shop/db-0                  kube-system/dns            all
shop/db-0                  shop/batch                 all
shop/db-0                  shop/web-7d4b9c8f6d-m4tq7  tcp 80,443
shop/db-0                  shop/web-7d4b9c8f6d-x2k9p  tcp 80,443
shop/web-7d4b9c8f6d-m4tq7  kube-system/dns            all
shop/web-7d4b9c8f6d-m4tq7  shop/batch                 all
shop/web-7d4b9c8f6d-m4tq7  shop/db-0                  tcp 5432
shop/web-7d4b9c8f6d-m4tq7  shop/web-7d4b9c8f6d-x2k9p  tcp 80,443
shop/web-7d4b9c8f6d-x2k9p  kube-system/dns            all
shop/web-7d4b9c8f6d-x2k9p  shop/batch                 all
shop/web-7d4b9c8f6d-x2k9p  shop/web-7d4b9c8f6d-m4tq7  tcp 80,443
`
	wantOutput(t, "connlist", runMatrix(t, shopCluster, "-o", "connlist"), want)

	wantWorkload := `FROM                 TO                   ALLOWED
kube-system/pod/dns  shop/deployment/web  tcp 80,443
kube-system/pod/dns  shop/pod/batch       all
shop/deployment/web  kube-system/pod/dns  all
shop/deployment/web  shop/deployment/web  tcp 80,443
shop/deployment/web  shop/pod/batch       all
shop/deployment/web  shop/statefulset/db  some pod pairs: tcp 5432
shop/pod/batch       kube-system/pod/dns  all
shop/pod/batch       shop/deployment/web  tcp 80,443
shop/statefulset/db  kube-system/pod/dns  all
shop/statefulset/db  shop/deployment/web  tcp 80,443
shop/statefulset/db  shop/pod/batch       all
`
	wantOutput(t, "connlist --by workload", runMatrix(t, shopCluster, "-o", "connlist", "--by", "workload"), wantWorkload)

	// --ports narrows the list to the ports named.
	wantPorts := `FROM                       TO                         ALLOWED
shop/db-0                  shop/web-7d4b9c8f6d-m4tq7  tcp 80
shop/db-0                  shop/web-7d4b9c8f6d-x2k9p  tcp 80
shop/web-7d4b9c8f6d-m4tq7  shop/db-0                  tcp 5432
shop/web-7d4b9c8f6d-m4tq7  shop/web-7d4b9c8f6d-x2k9p  tcp 80
shop/web-7d4b9c8f6d-x2k9p  shop/web-7d4b9c8f6d-m4tq7  tcp 80
`
	wantOutput(t, "connlist --ports", runMatrix(t, shopCluster, "-o", "connlist", "-l", "app in (web,db)", "--ports", "80,5432"), wantPorts)
}

// TestMatrixClassPairs: the class view as pairs (--classes --pairs) lists
// each class's pods and, per class, the classes it reaches grouped by the
// ports allowed; a class of one pod has no verdict towards itself.
func TestMatrixClassPairs(t *testing.T) {
	const p80, p5432 = `{"protocol":"TCP","port":80}`, `{"protocol":"TCP","port":5432}`
	want := `{
"ports": [` + p80 + `,` + p5432 + `],
"classes": [
{"class":0,"pods":["kube-system/dns","shop/batch"]},
{"class":1,"pods":["shop/db-0"]},
{"class":2,"pods":["shop/web-7d4b9c8f6d-m4tq7"]},
{"class":3,"pods":["shop/web-7d4b9c8f6d-x2k9p"]}
],
"verdicts": [
{"from":0,"to":[{"classes":[0],"allowed":[` + p80 + `,` + p5432 + `]},{"classes":[1],"allowed":[]},{"classes":[2,3],"allowed":[` + p80 + `]}]},
{"from":1,"to":[{"classes":[0],"allowed":[` + p80 + `,` + p5432 + `]},{"classes":[2,3],"allowed":[` + p80 + `]}]},
{"from":2,"to":[{"classes":[0],"allowed":[` + p80 + `,` + p5432 + `]},{"classes":[1],"allowed":[` + p5432 + `]},{"classes":[3],"allowed":[` + p80 + `]}]},
{"from":3,"to":[{"classes":[0],"allowed":[` + p80 + `,` + p5432 + `]},{"classes":[1],"allowed":[]},{"classes":[2],"allowed":[` + p80 + `]}]}
]
}
`
	out := runMatrix(t, shopCluster, "-o", "json", "--classes", "--pairs", "--ports", "80,5432")
	wantOutput(t, "json --classes --pairs", out, want)
	var v struct {
		Classes  []struct{ Pods []string }
		Verdicts []struct {
			From int
			To   []struct{ Classes []int }
		}
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || len(v.Classes) != 4 || len(v.Verdicts) != 4 {
		t.Errorf("json --classes: %d classes, %d verdicts, %v", len(v.Classes), len(v.Verdicts), err)
	}
	// Without --ports, every port: 1-65535 of each protocol, in ranges.
	out = runMatrix(t, shopCluster, "-o", "json", "--classes", "--pairs")
	const all = `{"protocol":"TCP","port":1,"endPort":65535},{"protocol":"UDP","port":1,"endPort":65535},{"protocol":"SCTP","port":1,"endPort":65535}`
	const web = `{"protocol":"TCP","port":80},{"protocol":"TCP","port":443}`
	for _, line := range []string{
		`"ports": [` + all + `],`,
		`{"from":1,"to":[{"classes":[0],"allowed":[` + all + `]},{"classes":[2,3],"allowed":[` + web + `]}]},`,
		`{"from":2,"to":[{"classes":[0],"allowed":[` + all + `]},{"classes":[1],"allowed":[` + p5432 + `]},{"classes":[3],"allowed":[` + web + `]}]},`,
	} {
		if !strings.Contains(out, "\n"+line+"\n") {
			t.Errorf("json --classes lacks the line %s:\n%s", line, out)
		}
	}
}

// TestMatrixClassSides: the class view (--classes) on the shop: written
// from its two NetworkPolicies. No policy selects a pod for egress, so
// every egress walk is empty (the default allows); the db admits the
// canary web pod on 5432 and the web pods admit everyone on 80 (443 is
// not asked), each isolated by its policy (rest Deny); dns and batch are
// selected by nothing.
func TestMatrixClassSides(t *testing.T) {
	const p80, p5432 = `{"protocol":"TCP","port":80}`, `{"protocol":"TCP","port":5432}`
	want := `{
"ports": [` + p80 + `,` + p5432 + `],
"sets": [
{"set":0,"classes":[[2,2]]},
{"set":1,"classes":[[0,3]]}
],
"answers": [
{"answer":0,"tier":"NetworkPolicy","rest":"Deny","rules":[{"outcome":"Accept","ports":[` + p5432 + `],"set":0,"policy":"NetworkPolicy shop/db","rule":"ingress[0]"}]},
{"answer":1,"tier":"NetworkPolicy","rest":"Deny","rules":[{"outcome":"Accept","ports":[` + p80 + `],"set":1,"policy":"NetworkPolicy shop/web","rule":"ingress[0]"}]}
],
"classes": [
{"class":0,"pods":["kube-system/dns","shop/batch"],"egress":[],"ingress":[]},
{"class":1,"pods":["shop/db-0"],"egress":[],"ingress":[0]},
{"class":2,"pods":["shop/web-7d4b9c8f6d-m4tq7"],"egress":[],"ingress":[1]},
{"class":3,"pods":["shop/web-7d4b9c8f6d-x2k9p"],"egress":[],"ingress":[1]}
]
}
`
	wantOutput(t, "json --classes", runMatrix(t, shopCluster, "-o", "json", "--classes", "--ports", "80,5432"), want)
}

// TestClassSidesAgreeWithPairs reads the class view as a user would (the
// steps walked as --help says) and compares every pair of classes on
// every port where a range of either view starts or ends with the pairs
// view, which the class matrix decides pair by pair.
func TestClassSidesAgreeWithPairs(t *testing.T) {
	inputs := map[string]string{}
	for _, dir := range []string{"tenants", "cluster-network-policy", "domains", "lint", "services", "diff/old", "diff/new"} {
		inputs[dir] = filepath.Join("..", "..", "examples", dir)
	}
	dump := filepath.Join(t.TempDir(), "1k.yaml")
	writeDump(t, dump, synth.Size1k)
	inputs["synth 1k"] = dump
	total := 0
	for name, path := range inputs {
		t.Run(name, func(t *testing.T) {
			views := [2]string{}
			for i, extra := range [][]string{nil, {"--pairs"}} {
				code, out, stderr := run(t, "", append([]string{"matrix", "-q", "-f", path, "-o", "json", "--classes"}, extra...)...)
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				views[i] = out
			}
			checked := compareClassViews(t, views[0], views[1])
			t.Logf("%d class pairs x ports compared", checked)
			total += checked
		})
	}
	// The 1k dump alone holds millions; too few says the views were empty.
	if total < 1_000_000 {
		t.Errorf("%d verdicts compared, want the 1k dump's millions", total)
	}
}

type jsonRange struct {
	Protocol      string
	Port, EndPort int
}

func inRanges(rs []jsonRange, proto string, port int) bool {
	for _, r := range rs {
		if r.Protocol == proto && port >= r.Port && port <= max(r.Port, r.EndPort) {
			return true
		}
	}
	return false
}

// compareClassViews decodes both views and compares them; it returns the
// verdicts compared.
func compareClassViews(t *testing.T, sidesJSON, pairsJSON string) int {
	t.Helper()
	var sides struct {
		Sets []struct {
			Classes [][2]int
		}
		Answers []struct {
			Rest  string
			Rules []struct {
				Outcome string
				Ports   []jsonRange
				Set     int
			}
		}
		Classes []struct {
			Pods            []string
			Egress, Ingress []int
		}
	}
	var pairs struct {
		Classes []struct {
			Pods []string
		}
		Verdicts []struct {
			From int
			To   []struct {
				Classes []int
				Allowed []jsonRange
			}
		}
	}
	if err := json.Unmarshal([]byte(sidesJSON), &sides); err != nil {
		t.Fatalf("--classes: %v", err)
	}
	if err := json.Unmarshal([]byte(pairsJSON), &pairs); err != nil {
		t.Fatalf("--classes --pairs: %v", err)
	}
	if len(sides.Classes) != len(pairs.Classes) {
		t.Fatalf("%d classes, --pairs %d", len(sides.Classes), len(pairs.Classes))
	}
	for c := range sides.Classes {
		if !slices.Equal(sides.Classes[c].Pods, pairs.Classes[c].Pods) {
			t.Fatalf("class %d: pods %v, --pairs %v", c, sides.Classes[c].Pods, pairs.Classes[c].Pods)
		}
	}
	// The ports to probe: where any range starts or ends, and next to it.
	probes := map[string]map[int]bool{"TCP": {1: true, 65535: true}, "UDP": {1: true, 65535: true}, "SCTP": {1: true, 65535: true}}
	note := func(rs []jsonRange) {
		for _, r := range rs {
			for _, p := range []int{r.Port - 1, r.Port, max(r.Port, r.EndPort), max(r.Port, r.EndPort) + 1} {
				if p >= 1 && p <= 65535 {
					probes[r.Protocol][p] = true
				}
			}
		}
	}
	for _, a := range sides.Answers {
		for _, r := range a.Rules {
			note(r.Ports)
		}
	}
	for _, v := range pairs.Verdicts {
		for _, g := range v.To {
			note(g.Allowed)
		}
	}
	inSet := func(set, d int) bool {
		for _, r := range sides.Sets[set].Classes {
			if d >= r[0] && d <= r[1] {
				return true
			}
		}
		return false
	}
	// walk is one side as --help says: the first rule of a step whose
	// ports and set hold the flow decides the step, else its rest; the
	// first step that is not Next decides, and after the last, allowed.
	walk := func(steps []int, peer int, proto string, port int) bool {
		for _, a := range steps {
			outcome := sides.Answers[a].Rest
			for _, r := range sides.Answers[a].Rules {
				if inRanges(r.Ports, proto, port) && inSet(r.Set, peer) {
					outcome = r.Outcome
					break
				}
			}
			switch outcome {
			case "Accept":
				return true
			case "Deny":
				return false
			}
		}
		return true
	}
	checked, bad := 0, 0
	for _, v := range pairs.Verdicts {
		for _, g := range v.To {
			for _, d := range g.Classes {
				for proto, ports := range probes {
					for port := range ports {
						want := inRanges(g.Allowed, proto, port)
						got := walk(sides.Classes[v.From].Egress, d, proto, port) && walk(sides.Classes[d].Ingress, v.From, proto, port)
						checked++
						if got != want && bad < 5 {
							bad++
							t.Errorf("class %d -> class %d on %d/%s: --classes %v, --pairs %v", v.From, d, port, proto, got, want)
						}
					}
				}
			}
		}
	}
	return checked
}

// TestPortFolder: ports fold into ranges per protocol, in protocol order.
func TestPortFolder(t *testing.T) {
	r := func(proto l4.Protocol, first, last uint16) l4.Range {
		return l4.Range{Proto: proto, First: first, Last: last}
	}
	tcp, udp, sctp := l4.TCP, l4.UDP, l4.SCTP
	for _, tc := range []struct {
		ports []l4.Range
		pick  string // one character per port: 1 picked
		want  string
	}{
		{[]l4.Range{r(udp, 53, 53), r(tcp, 80, 80), r(tcp, 81, 81), r(tcp, 82, 82), r(tcp, 443, 443)}, "11111", "tcp 80-82,443; udp 53"},
		{[]l4.Range{r(tcp, 80, 80), r(tcp, 81, 81), r(tcp, 82, 82)}, "101", "tcp 80,82"},
		{[]l4.Range{r(tcp, 80, 80)}, "0", ""},
		{[]l4.Range{r(tcp, 1, 79), r(tcp, 80, 80), r(tcp, 81, 65535), r(udp, 1, 65535), r(sctp, 1, 65535)}, "11111", "all"},
		{[]l4.Range{r(tcp, 1, 79), r(tcp, 80, 80), r(tcp, 81, 65535), r(udp, 1, 65535), r(sctp, 1, 65535)}, "10110", "tcp 1-79,81-65535; udp all"},
		{[]l4.Range{r(tcp, 1, 65535), r(udp, 1, 65535)}, "11", "tcp all; udp all"}, // SCTP not decided: not "all"
	} {
		f := newPortFolder(tc.ports)
		if got := string(f.appendFold(nil, func(k int) bool { return tc.pick[k] == '1' })); got != tc.want {
			t.Errorf("fold(%v, %s) = %q, want %q", tc.ports, tc.pick, got, tc.want)
		}
	}
}

func TestMatrixFlagCombinations(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--by", "team"}, `--by "team": want pod or workload`},
		{[]string{"--classes"}, "--classes is a JSON view of the classes: it needs -o json"},
		{[]string{"--classes", "-o", "json", "--by", "workload"}, "--classes is a JSON view of the classes"},
		{[]string{"--by", "workload", "--staged"}, "--staged marks the cells of the pod tables"},
		{[]string{"-o", "connlist", "--staged"}, "--staged marks the cells of the pod tables"},
		{[]string{"--by", "workload", "-o", "svg"}, "-o svg draws classes of pods, not workloads"},
		{[]string{"--services", "-o", "connlist"}, "--services prints text, json or csv"},
	} {
		code, _, stderr := run(t, shopCluster, append([]string{"matrix", "-f", "-"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestMatrixHelpTeachesTheFormats: each format and flag is explained with
// an example of its output.
func TestMatrixHelpTeachesTheFormats(t *testing.T) {
	code, out, _ := run(t, "", "matrix", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{
		"output format: text, json, csv, md, connlist,", "dot, svg (default \"text\")",
		"-o connlist lists only what is allowed",
		"shop/api  shop/web  tcp 80-82,443; udp 53",
		"--by workload makes rows and columns the workloads",
		"'~' in text and md",
		"-o json --classes prints the behaviour classes",
		`"ports":[{"protocol":"TCP","port":80,"endPort":82}],"set":3,`,
		"walk c's egress steps with\nd as the peer",
		"web-7d4b9c8f6d-x2k9p as web-*-x2k9p",
		"numbered as the rows",
		"netpol matrix -f cluster/ --by workload -o connlist",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("matrix --help lacks %q", want)
		}
	}
}

// TestMatrixRefusesNamesTheAPIServerWould: a name that is no Kubernetes
// name (here one that would split a CSV cell) is refused with the field at
// fault, as the API server refuses it, instead of reaching any output.
func TestMatrixRefusesNamesTheAPIServerWould(t *testing.T) {
	const in = `apiVersion: v1
kind: Pod
metadata: {name: "a,b", namespace: x}
spec: {containers: [{name: c}]}
`
	code, out, stderr := run(t, in, "matrix", "-f", "-", "--ports", "80", "-o", "csv")
	if code != 2 || out != "" || !strings.Contains(stderr, "-: Pod x/a,b: metadata.name: a lowercase RFC 1123 subdomain") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing, and the name's field", code, out, stderr)
	}
}

// TestMatrixTextShortNamesStayDistinct: two pods that would shorten to
// the same name keep their full names.
func TestMatrixTextShortNamesStayDistinct(t *testing.T) {
	var in strings.Builder
	for _, p := range [][2]string{{"web-aaa-x1", "aaa"}, {"web-bbb-x1", "bbb"}, {"web-aaa-y2", "aaa"}} {
		in.WriteString("---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + p[0] + ", namespace: a, labels: {pod-template-hash: " + p[1] + "}}\nspec: {containers: [{name: c}]}\n")
	}
	want := `80/tcp   (rows: from, columns: to, numbered as the rows; . allowed, X denied)
                123
a 1 web-aaa-x1  ...
  2 web-*-y2    ...
  3 web-bbb-x1  ...

3 pods, 1 port: 1 behaviour class decided
`
	wantOutput(t, "text", runMatrix(t, in.String(), "--ports", "80"), want)
}
