package suggest

import (
	"slices"
	"testing"

	"github.com/netpol/netpol/internal/l4"
)

func TestReadFlows(t *testing.T) {
	tcp, udp := func(n uint16) l4.Port { return l4.Port{Proto: l4.TCP, Num: n} }, func(n uint16) l4.Port { return l4.Port{Proto: l4.UDP, Num: n} }
	want := []Flow{{"app/client", "shop/web-0", tcp(8080), 3, false}, {"app/client", "198.18.200.7", udp(53), 1, false}}
	for name, in := range map[string]string{
		"csv with a header": "from,to,port,count\napp/client,shop/web-0,8080/tcp,3\napp/client,198.18.200.7,53/udp\n",
		"csv":               "app/client, shop/web-0, 8080, 3\napp/client,198.18.200.7,53/udp",
		"json":              `[{"from":"app/client","to":"shop/web-0","port":"8080/tcp","count":3},{"from":"app/client","to":"198.18.200.7","port":"53/udp"}]`,
	} {
		got, _, err := ReadFlows([]byte(in))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v %v, want %v", name, got, err, want)
		}
	}
	probe := `{"flows":[{"from":"a/x","to":"b/y","dstIP":"198.18.1.2","port":"80/tcp","kernel":"allowed","predicted":"allowed"},
	{"from":"a/x","to":"b/z","dstIP":"198.18.1.3","port":"80/tcp","kernel":"denied","predicted":"denied"}],"probed":2,"mismatches":0}`
	got, _, err := ReadFlows([]byte(probe))
	if want := []Flow{{"a/x", "198.18.1.2", tcp(80), 1, false}}; err != nil || !slices.Equal(got, want) {
		t.Errorf("lab probe JSON: %v %v, want %v (the allowed flow only)", got, err, want)
	}
	for in, wantErr := range map[string]string{
		"a,b\n":                      "flows line 1: 2 fields, want from,to,port[,count]",
		"a,b,http\n":                 `flows line 1: port "http": a port name needs the destination's pods; name the port by number`,
		"a,b,80,0\n":                 `flows line 1: count "0": want a positive number`,
		`[{"from":"a","port":"80"}]`: "flows[0]: a flow needs from and to",
		// Lines are the file's: blank lines and the header count.
		"from,to,port\n\na,b\n": "flows line 3: 2 fields, want from,to,port[,count]",
		"\n\na,b,80\na,b\n":     "flows line 4: 2 fields, want from,to,port[,count]",
	} {
		if _, _, err := ReadFlows([]byte(in)); err == nil || err.Error() != wantErr {
			t.Errorf("%q: %v, want %q", in, err, wantErr)
		}
	}
}

// TestReadRecords: the agent's record file, one JSON object a line:
// allowed lines become flows (equal ones merged, counts summed), denied
// lines are counted and left out, and a pretty-printed lab probe object is
// still told apart from it.
func TestReadRecords(t *testing.T) {
	tcp := func(n uint16) l4.Port { return l4.Port{Proto: l4.TCP, Num: n} }
	records := `{"from":"shop/Deployment/web","to":"198.18.0.7","port":"5432/tcp","verdict":"allow","count":12,"first":"2026-11-25T01:00:00Z","last":"2026-11-25T01:05:00Z","node":"node-1"}
{"from":"shop/Deployment/web","to":"shop/StatefulSet/db","port":"5432/tcp","verdict":"deny","count":3,"first":"2026-11-25T01:00:00Z","last":"2026-11-25T01:01:00Z","node":"node-1"}

{"from":"app/client","to":"shop/Deployment/web","port":"8080/tcp","verdict":"allow","count":2,"first":"2026-11-25T01:00:00Z","last":"2026-11-25T01:02:00Z","node":"node-2"}
{"from":"shop/Deployment/web","to":"198.18.0.7","port":"5432/tcp","verdict":"allow","count":5,"first":"2026-11-25T01:06:00Z","last":"2026-11-25T01:07:00Z","node":"node-1"}
{"from":"shop/Deployment/web","to":"shop/StatefulSet/db","port":"5432/tcp","verdict":"deny","count":1,"first":"2026-11-25T01:03:00Z","last":"2026-11-25T01:03:00Z","node":"node-2"}
`
	got, denied, err := ReadFlows([]byte(records))
	want := []Flow{{"shop/Deployment/web", "198.18.0.7", tcp(5432), 17, true}, {"app/client", "shop/Deployment/web", tcp(8080), 2, true}}
	if err != nil || !slices.Equal(got, want) || denied != 2 {
		t.Errorf("records: %v, %d denied, %v; want %v, 2 denied", got, denied, err, want)
	}
	probe := `{
  "flows": [
    {"from": "a/x", "to": "b/y", "dstIP": "198.18.1.2", "port": "80/tcp", "kernel": "allowed"}
  ],
  "probed": 1
}`
	if got, denied, err := ReadFlows([]byte(probe)); err != nil || !slices.Equal(got, []Flow{{"a/x", "198.18.1.2", tcp(80), 1, false}}) || denied != 0 {
		t.Errorf("pretty lab probe JSON: %v, %d denied, %v; want a/x -> 198.18.1.2 80/tcp", got, denied, err)
	}
	for in, wantErr := range map[string]string{
		`{"from":"a/x","to":"b/y","port":"80/tcp","verdict":"allow","count":1}` + "\n" + `{"from":"a/x","to":"b/y","port":"80/tcp","count":1}`:                     `flows line 2: verdict "": want allow or deny`,
		`{"from":"a/x","to":"b/y","port":"80/tcp","verdict":"allow","count":1}` + "\n\n" + `{"from":"a/x","to":"b/y","port":"eighty","verdict":"allow","count":1}`: `flows line 3: port "eighty": want one port, as 8080/tcp`,
		`{"from":"a/x","to":"b/y","port":"80/tcp","verdict":"allow","count":1}` + "\n" + `{"from":"a/x",`:                                                          "flows line 2: unexpected end of JSON input",
		`{"from":"a/x","to":"b/y","port":"80/tcp","verdict":"allow"}`:                                                                                              "flows line 1: count 0: want a positive number",
		`{"from":"a/x","to":"b/y","port":"0/tcp","verdict":"allow","count":1}`:                                                                                     `flows line 1: port "0/tcp": want one port, as 8080/tcp`,
		"{\n  \"flows\": [\n    {\"from\": \"a/x\",,}\n  ]\n}":                                                                                                     "flows line 3: invalid character ',' looking for beginning of object key string",
		`{"from":"a/x","to":"b/y","port":"80/tcp","verdict":"maybe","count":1}`:                                                                                    `flows line 1: verdict "maybe": want allow or deny`,
	} {
		if _, _, err := ReadFlows([]byte(in)); err == nil || err.Error() != wantErr {
			t.Errorf("%q: %v, want %q", in, err, wantErr)
		}
	}
}

// TestMerge: flows of several files, equal in from, to and port, become
// one, counts summed, in the order they first appear.
func TestMerge(t *testing.T) {
	tcp := func(n uint16) l4.Port { return l4.Port{Proto: l4.TCP, Num: n} }
	got := Merge([]Flow{{"a/x", "b/y", tcp(80), 2, false}, {"a/x", "b/y", tcp(81), 1, false}, {"b/y", "a/x", tcp(80), 4, false}, {"a/x", "b/y", tcp(80), 3, false}})
	want := []Flow{{"a/x", "b/y", tcp(80), 5, false}, {"a/x", "b/y", tcp(81), 1, false}, {"b/y", "a/x", tcp(80), 4, false}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// FuzzReadFlows: no input makes ReadFlows panic, and what it returns is
// flows with both ends and a positive count.
func FuzzReadFlows(f *testing.F) {
	for _, seed := range []string{
		"from,to,port,count\napp/client,shop/web-0,8080/tcp,3\n",
		`[{"from":"a/x","to":"b/y","port":"80/tcp","count":2}]`,
		`{"flows":[{"from":"a/x","to":"b/y","dstIP":"198.18.1.2","port":"80/tcp","kernel":"allowed"}]}`,
		`{"from":"shop/Deployment/web","to":"198.18.0.7","port":"5432/tcp","verdict":"allow","count":12,"first":"2026-11-25T01:00:00Z","last":"2026-11-25T01:05:00Z","node":"node-1"}` + "\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		flows, denied, err := ReadFlows(data)
		if err != nil {
			return
		}
		if denied < 0 {
			t.Errorf("%d denied", denied)
		}
		for _, fl := range flows {
			if fl.From == "" || fl.To == "" || fl.Count < 1 {
				t.Errorf("flow %+v", fl)
			}
		}
	})
}

// TestReadFlowsAsTheAPISpellsPorts: a flow's port written the way the
// Kubernetes API writes one (a number, a container port's name, and the
// protocol in a field of its own) reads as the flow it means. A name is
// the destination's: every pod a workload names must declare it alike.
func TestReadFlowsAsTheAPISpellsPorts(t *testing.T) {
	e := build(t, `
apiVersion: v1
kind: Pod
metadata: {name: db-0, namespace: shop, labels: {app: db}, ownerReferences: [{kind: StatefulSet, name: db, apiVersion: apps/v1, uid: u1, controller: true}]}
spec: {containers: [{name: c, ports: [{name: postgres, containerPort: 5432}, {name: dns, containerPort: 53, protocol: UDP}, {name: metrics, containerPort: 9187}]}]}
status: {podIP: 198.18.0.1}
---
apiVersion: v1
kind: Pod
metadata: {name: db-1, namespace: shop, labels: {app: db}, ownerReferences: [{kind: StatefulSet, name: db, apiVersion: apps/v1, uid: u1, controller: true}]}
spec: {containers: [{name: c, ports: [{name: postgres, containerPort: 5432}, {name: metrics, containerPort: 9188}]}]}
status: {podIP: 198.18.0.2}
`)
	ends := NewEnds(e.Cluster())
	tcp, udp := func(n uint16) l4.Port { return l4.Port{Proto: l4.TCP, Num: n} }, func(n uint16) l4.Port { return l4.Port{Proto: l4.UDP, Num: n} }
	for in, want := range map[string]Flow{
		`[{"from": "shop/web-0", "to": "shop/db-0", "port": 5432, "protocol": "TCP"}]`:             {"shop/web-0", "shop/db-0", tcp(5432), 1, false},
		`[{"from": "shop/web-0", "to": "shop/db-0", "port": 53, "protocol": "UDP"}]`:               {"shop/web-0", "shop/db-0", udp(53), 1, false},
		`[{"from": "shop/web-0", "to": "shop/db-0", "port": "53", "protocol": "udp", "count": 2}]`: {"shop/web-0", "shop/db-0", udp(53), 2, false},
		`[{"from": "shop/web-0", "to": "shop/db-0", "port": "postgres"}]`:                          {"shop/web-0", "shop/db-0", tcp(5432), 1, false},
		`[{"from": "shop/web-0", "to": "shop/db-0", "port": "dns", "protocol": "UDP"}]`:            {"shop/web-0", "shop/db-0", udp(53), 1, false},
		`[{"from": "shop/web-0", "to": "shop/StatefulSet/db", "port": "postgres"}]`:                {"shop/web-0", "shop/StatefulSet/db", tcp(5432), 1, false},
		`[{"from": "shop/web-0", "to": "198.18.0.2", "port": "postgres"}]`:                         {"shop/web-0", "198.18.0.2", tcp(5432), 1, false},
		"shop/web-0,shop/db-0,postgres\n":                                                          {"shop/web-0", "shop/db-0", tcp(5432), 1, false},
	} {
		got, _, err := ends.ReadFlows([]byte(in))
		if err != nil || !slices.Equal(got, []Flow{want}) {
			t.Errorf("%s: %v %v, want %v", in, got, err, want)
		}
	}
	for in, wantErr := range map[string]string{
		`[{"from": "a/x", "to": "shop/db-0", "port": 5432, "protocol": "ICMP"}]`:           `flows[0]: protocol: unknown protocol "ICMP" (want TCP, UDP or SCTP)`,
		`[{"from": "a/x", "to": "shop/db-0", "port": "5432/tcp", "protocol": "UDP"}]`:      `flows[0]: port "5432/tcp" is TCP, but protocol says UDP`,
		`[{"from": "a/x", "to": "shop/db-0", "port": true}]`:                               `flows (JSON): port: true is neither a number nor a string`,
		`[{"from": "a/x", "to": "shop/db-0", "port": "postgres", "protocol": "UDP"}]`:      `flows[0]: port "postgres/udp": shop/db-0 declares no container port named "postgres" over UDP`,
		`[{"from": "a/x", "to": "shop/StatefulSet/db", "port": "dns", "protocol": "UDP"}]`: `flows[0]: port "dns/udp": shop/db-1 declares no container port named "dns" over UDP`,
		`[{"from": "a/x", "to": "shop/StatefulSet/db", "port": "metrics"}]`:                `flows[0]: port "metrics" of shop/StatefulSet/db: shop/db-0 declares it as 9187/tcp, shop/db-1 as 9188/tcp; name the port by number`,
		`[{"from": "a/x", "to": "198.18.9.9", "port": "postgres"}]`:                        `flows[0]: port "postgres": no pod has the address 198.18.9.9, so nothing names its ports; name the port by number`,
		`[{"from": "a/x", "to": "shop/db-9", "port": "postgres"}]`:                         `flows[0]: flow names pod shop/db-9, which the input does not have`,
	} {
		if _, _, err := ends.ReadFlows([]byte(in)); err == nil || err.Error() != wantErr {
			t.Errorf("%s:\n got %v\nwant %s", in, err, wantErr)
		}
	}
	// Without the input's pods, a name has nothing to resolve against.
	if _, _, err := ReadFlows([]byte(`[{"from":"a/x","to":"b/y","port":"http"}]`)); err == nil || err.Error() != `flows[0]: port "http": a port name needs the destination's pods; name the port by number` {
		t.Errorf("a name without pods: %v", err)
	}
}
