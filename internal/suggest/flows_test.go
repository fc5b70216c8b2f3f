package suggest

import (
	"slices"
	"testing"

	"github.com/netpol/netpol/internal/l4"
)

func TestReadFlows(t *testing.T) {
	tcp, udp := func(n uint16) l4.Port { return l4.Port{Proto: l4.TCP, Num: n} }, func(n uint16) l4.Port { return l4.Port{Proto: l4.UDP, Num: n} }
	want := []Flow{{"app/client", "shop/web-0", tcp(8080), 3}, {"app/client", "198.18.200.7", udp(53), 1}}
	for name, in := range map[string]string{
		"csv with a header": "from,to,port,count\napp/client,shop/web-0,8080/tcp,3\napp/client,198.18.200.7,53/udp\n",
		"csv":               "app/client, shop/web-0, 8080, 3\napp/client,198.18.200.7,53/udp",
		"json":              `[{"from":"app/client","to":"shop/web-0","port":"8080/tcp","count":3},{"from":"app/client","to":"198.18.200.7","port":"53/udp"}]`,
	} {
		got, err := ReadFlows([]byte(in))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v %v, want %v", name, got, err, want)
		}
	}
	probe := `{"flows":[{"from":"a/x","to":"b/y","dstIP":"198.18.1.2","port":"80/tcp","kernel":"allowed","predicted":"allowed"},
	{"from":"a/x","to":"b/z","dstIP":"198.18.1.3","port":"80/tcp","kernel":"denied","predicted":"denied"}],"probed":2,"mismatches":0}`
	got, err := ReadFlows([]byte(probe))
	if want := []Flow{{"a/x", "198.18.1.2", tcp(80), 1}}; err != nil || !slices.Equal(got, want) {
		t.Errorf("lab probe JSON: %v %v, want %v (the allowed flow only)", got, err, want)
	}
	for in, wantErr := range map[string]string{
		"a,b\n":                      "flows line 1: 2 fields, want from,to,port[,count]",
		"a,b,http\n":                 `flows line 1: port "http": want one port, as 8080/tcp`,
		"a,b,80,0\n":                 `flows line 1: count "0": want a positive number`,
		`[{"from":"a","port":"80"}]`: "flows[0]: a flow needs from and to",
	} {
		if _, err := ReadFlows([]byte(in)); err == nil || err.Error() != wantErr {
			t.Errorf("%q: %v, want %q", in, err, wantErr)
		}
	}
}
