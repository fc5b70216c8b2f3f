package lab_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/lab"
	"github.com/netpol/netpol/internal/observed"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/suggest"
)

// shopCluster: a Deployment web (web-1 on node-1, web-2 on node-2, as a
// dump has them: owned by their ReplicaSet), a StatefulSet db (db-0 on
// node-2), and a bare pod other/client on node-1. No policy.
const shopCluster = `
apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: v1
kind: Node
metadata: {name: node-2}
---
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {kubernetes.io/metadata.name: shop}}
---
apiVersion: v1
kind: Namespace
metadata: {name: other, labels: {kubernetes.io/metadata.name: other}}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
  labels: {app: web, pod-template-hash: 5d8f9c7b6d}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f9c7b6d, uid: u1, controller: true}]
spec: {nodeName: node-1, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: web-2
  namespace: shop
  labels: {app: web, pod-template-hash: 5d8f9c7b6d}
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f9c7b6d, uid: u1, controller: true}]
spec: {nodeName: node-2, containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
---
apiVersion: v1
kind: Pod
metadata:
  name: db-0
  namespace: shop
  labels: {app: db, statefulset.kubernetes.io/pod-name: db-0}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: u2, controller: true}]
spec: {nodeName: node-2, containers: [{name: c, ports: [{name: pg, containerPort: 5432}]}]}
---
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: other, labels: {app: client}}
spec: {nodeName: node-1, containers: [{name: c, ports: [{containerPort: 9000}]}]}
`

// TestLabSuggestRoundTrip is the loop of netpol suggest with real packets:
// the application's traffic is generated in the lab and recorded by the
// agents; suggest turns the record into policies; applied staged, they
// change nothing and the audit log has no would-deny for the recorded
// traffic (but has one for a connection that was never recorded); applied
// enforced, the recorded flows still pass and the unrecorded one is
// denied.
func TestLabSuggestRoundTrip(t *testing.T) {
	requireLab(t)
	l := upLabWith(t, labName("sug"), shopCluster, func(l *lab.Lab) { l.Record = true })
	pods := map[string]lab.Pod{}
	for _, p := range l.Pods {
		pods[p.Key] = p
	}
	tcp := func(n uint16) l4.Port { return l4.Port{Proto: l4.TCP, Num: n} }
	type conn struct {
		from, to string
		port     l4.Port
	}
	recorded := []conn{
		{"shop/web-1", "shop/db-0", tcp(5432)},
		{"shop/web-2", "shop/db-0", tcp(5432)},
		{"other/client", "shop/web-1", tcp(8080)},
		{"other/client", "shop/web-2", tcp(8080)},
	}
	unrecorded := conn{"other/client", "shop/db-0", tcp(5432)}
	probe := func(when string, c conn, want bool) {
		t.Helper()
		got, err := l.Probe(pods[c.from], pods[c.to].IP, c.port)
		if err != nil || got != want {
			t.Fatalf("%s: %s -> %s %s: connected=%v err=%v, want %v", when, c.from, c.to, c.port, got, err, want)
		}
	}
	for _, c := range recorded {
		probe("the application's traffic", c, true)
	}

	// What each node recorded. web-1 -> db-0 crosses nodes: both record
	// it. web-2 -> db-0 is local to node-2: one connection, recorded once.
	want := []string{
		"node-1: other/client -> shop/Deployment/web 8080/tcp allow x2",
		"node-1: shop/Deployment/web -> shop/StatefulSet/db 5432/tcp allow x1",
		"node-2: other/client -> shop/Deployment/web 8080/tcp allow x1",
		"node-2: shop/Deployment/web -> shop/StatefulSet/db 5432/tcp allow x2",
	}
	var got []string
	var records bytes.Buffer
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, records = readRecords(t, l)
		if slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	flows, denied, err := suggest.ReadFlows(records.Bytes())
	if err != nil || denied != 0 {
		t.Fatalf("reading the records: %d denied, %v", denied, err)
	}
	current, err := os.ReadFile(l.ManifestDir() + "/cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	apply := func(enforce bool) {
		t.Helper()
		dec := &source.Decoder{}
		e, _, err := pipeline.Build(dec.Decode("lab.yaml", current), dec.Diags, pipeline.Options{})
		if err != nil {
			t.Fatal(err)
		}
		nps, err := suggest.Suggest(e.Cluster(), flows, suggest.Options{Enforce: enforce})
		if err != nil {
			t.Fatal(err)
		}
		if len(nps) != 3 {
			t.Fatalf("%d policies suggested, want 3 (web, db, client)", len(nps))
		}
		docs, err := suggest.YAML(nps)
		if err != nil {
			t.Fatal(err)
		}
		next, err := lab.ApplyManifests(current, docs)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.WriteManifests(next); err != nil {
			t.Fatal(err)
		}
		if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
			t.Fatal(err)
		}
	}

	apply(false)
	for _, c := range recorded {
		probe("staged", c, true)
	}
	probe("staged, never recorded", unrecorded, true)
	// The staged policies would deny only the unrecorded connection: on
	// the client's egress (node-1) and on db-0's ingress (node-2).
	wantWould := []string{
		"node-1: would-deny egress other/client -> shop/db-0 TCP 5432",
		"node-2: would-deny ingress other/client -> shop/db-0 TCP 5432",
	}
	var would []string
	deadline = time.Now().Add(5 * time.Second)
	for {
		would = nil
		for _, n := range []string{"node-1", "node-2"} {
			for _, line := range readAudit(t, l.AuditLog(n)) {
				if strings.HasPrefix(line, "would-deny") {
					f := strings.Fields(line) // verdict dir src ip -> dst ip proto port: ...
					would = append(would, fmt.Sprintf("%s: %s %s %s -> %s %s %s", n, f[0], f[1], f[2], f[5], f[7], strings.TrimSuffix(f[8], ":")))
				}
			}
		}
		if len(would) >= len(wantWould) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	slices.Sort(would)
	if !slices.Equal(would, wantWould) {
		t.Errorf("would-deny lines while staged:\n%s\nwant:\n%s", strings.Join(would, "\n"), strings.Join(wantWould, "\n"))
	}

	apply(true)
	for _, c := range recorded {
		probe("enforced", c, true)
	}
	probe("enforced, never recorded", unrecorded, false)
	probe("enforced, never recorded", conn{"shop/db-0", "shop/web-2", tcp(8080)}, false)

	// The denied attempts are recorded too, where they were dropped: on
	// the client's node for its egress, on db-0's for its own.
	wantDenied := []string{
		"node-1: other/client -> shop/StatefulSet/db 5432/tcp deny x1",
		"node-2: shop/StatefulSet/db -> shop/Deployment/web 8080/tcp deny x1",
	}
	var recordedDenies []string
	deadline = time.Now().Add(5 * time.Second)
	for {
		recordedDenies = nil
		all, _ := readRecords(t, l)
		for _, r := range all {
			if strings.Contains(r, " deny ") {
				recordedDenies = append(recordedDenies, r)
			}
		}
		if slices.Equal(recordedDenies, wantDenied) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !slices.Equal(recordedDenies, wantDenied) {
		t.Errorf("denied connections recorded:\n%s\nwant:\n%s", strings.Join(recordedDenies, "\n"), strings.Join(wantDenied, "\n"))
	}
}

// TestLabRecordSurvivesRestart: an agent killed (SIGKILL, nothing saved on
// the way out) and started again continues the record it had written: the
// same connection made before and after counts twice. (The kernel folds a
// flow's repeats within 10 s; the new agent's first sync rewrites its
// table, folding sets included, so the second connection is logged.)
func TestLabRecordSurvivesRestart(t *testing.T) {
	requireLab(t)
	l := upLabWith(t, labName("rec"), shopCluster, func(l *lab.Lab) { l.Record = true })
	pods := map[string]lab.Pod{}
	for _, p := range l.Pods {
		pods[p.Key] = p
	}
	connect := func(want string) {
		t.Helper()
		if ok, err := l.Probe(pods["shop/web-2"], pods["shop/db-0"].IP, l4.Port{Proto: l4.TCP, Num: 5432}); !ok || err != nil {
			t.Fatalf("web-2 -> db-0: connected=%v err=%v", ok, err)
		}
		waitFor(t, "node-2's record holds "+want, func() bool {
			got, _ := readRecords(t, l)
			return slices.Equal(got, []string{want})
		})
	}
	connect("node-2: shop/Deployment/web -> shop/StatefulSet/db 5432/tcp allow x1")
	if err := l.RestartAgent(netpolBinary, "node-2"); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitProgrammed(context.Background(), 20*time.Second); err != nil {
		t.Fatal(err)
	}
	connect("node-2: shop/Deployment/web -> shop/StatefulSet/db 5432/tcp allow x2")
}

// TestLabRecordFoldsRepeats: every packet of a one-way UDP flow is a new
// connection to conntrack until a reply is seen; the kernel logs the flow
// once a window, not once a packet, so a chatty sender neither inflates
// the record nor spends the log's rate limit that other flows need.
func TestLabRecordFoldsRepeats(t *testing.T) {
	requireLab(t)
	l := upLabWith(t, labName("fol"), shopCluster, func(l *lab.Lab) { l.Record = true })
	pods := map[string]lab.Pod{}
	for _, p := range l.Pods {
		pods[p.Key] = p
	}
	// Nothing listens on 9999/udp: the datagrams go one way.
	dst := net.JoinHostPort(pods["shop/web-1"].IP.String(), "9999")
	err := l.InPod(pods["other/client"], func() error {
		conn, err := net.Dial("udp4", dst)
		if err != nil {
			return err
		}
		defer conn.Close()
		for range 20 {
			_, _ = conn.Write([]byte("metric:1|c")) // refused replies are ICMP, not the flow's
			time.Sleep(5 * time.Millisecond)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"node-1: other/client -> shop/Deployment/web 9999/udp allow x1"}
	var got []string
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, _ = readRecords(t, l)
		if slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !slices.Equal(got, want) {
		t.Errorf("records:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// readRecords reads the lab agents' records: one summary per entry,
// sorted, and the files' lines together.
func readRecords(t *testing.T, l *lab.Lab) ([]string, bytes.Buffer) {
	t.Helper()
	var out []string
	var all bytes.Buffer
	for _, n := range l.Nodes {
		data, err := os.ReadFile(l.RecordFile(n.Name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		all.Write(data)
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if line == "" {
				continue
			}
			var f observed.Flow
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				t.Fatalf("%s: %v: %s", l.RecordFile(n.Name), err, line)
			}
			out = append(out, fmt.Sprintf("%s: %s -> %s %s %s x%d", f.Node, f.From, f.To, f.Port, f.Verdict, f.Count))
		}
	}
	slices.Sort(out)
	return out, all
}
