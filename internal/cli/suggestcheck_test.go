package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

// TestSuggestCheckAgreesWithMatrixAndDiff checks suggest's numbers on
// examples/tenants and examples/suggest/flows.csv by another way than
// suggest.Verify: the pod-by-pod matrix of netpol matrix -o json before,
// and after with the suggestion (--enforce) added, its cells counted here
// pair by pair against each destination's declared ports; and netpol diff
// from the input to the input with the suggestion, its lost port ranges
// counted the same way. The numbers are the ones examples/suggest/README
// gives: 72 cells, 13 lost, 18 open that no flow was seen on.
func TestSuggestCheckAgreesWithMatrixAndDiff(t *testing.T) {
	const tenants, flows = "../../examples/tenants", "../../examples/suggest/flows.csv"
	dir := t.TempDir()
	code, out, stderr := run(t, "", "suggest", "-f", tenants, "--flows", flows, "--enforce", "-o", "json")
	if code != 0 {
		t.Fatalf("suggest: exit %d: %s", code, stderr)
	}
	var sug struct {
		Report struct{ Flows, Allowed, Lost, OpenUnobserved, Cells int }
	}
	if err := json.Unmarshal([]byte(out), &sug); err != nil {
		t.Fatal(err)
	}
	if r := sug.Report; r.Flows != 4 || r.Allowed != 4 || r.Cells != 72 || r.Lost != 13 || r.OpenUnobserved != 18 {
		t.Errorf("suggest's report %+v, want 4 flows allowed, 72 cells, 13 lost, 18 open unobserved", r)
	}
	// NEW: the input and the suggestion, in one directory for diff.
	newDir := filepath.Join(dir, "new")
	if code, _, stderr := run(t, "", "suggest", "-f", tenants, "--flows", flows, "--enforce", "--out-dir", filepath.Join(newDir, "suggested")); code != 0 {
		t.Fatalf("suggest --out-dir: exit %d: %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(tenants, "*.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(newDir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The pods and their declared ports, read from the input by the
	// decoder and the snapshot only (no engine decides here).
	dec := &source.Decoder{}
	objs, err := dec.Load([]string{tenants}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, _, err := pipeline.Build(objs, dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pods := e.Cluster().Pods
	for _, p := range pods {
		if p.HostNetwork || len(p.IPs) == 0 || !p.IPs[0].Is4() {
			t.Fatalf("%s: the count below takes pods off the host network with an IPv4 address (every pair has a family in common)", p.Key())
		}
	}
	type cell struct{ from, to, port string }
	declared := func(p *state.Pod) []string {
		var out []string
		for _, cp := range p.Ports {
			out = append(out, cp.Port.String())
		}
		return out
	}
	matrix := func(args ...string) map[cell]bool {
		code, out, stderr := run(t, "", append([]string{"matrix", "-o", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("matrix %q: exit %d: %s", args, code, stderr)
		}
		var rows []struct {
			From, To, Protocol string
			Port               int
			Allowed            bool
		}
		if err := json.Unmarshal([]byte(out), &rows); err != nil {
			t.Fatal(err)
		}
		m := map[cell]bool{}
		for _, r := range rows {
			m[cell{r.From, r.To, strconv.Itoa(r.Port) + "/" + strings.ToLower(r.Protocol)}] = r.Allowed
		}
		return m
	}
	before := matrix("-f", tenants)
	after := matrix("-f", newDir)
	// flows.csv, cell by cell.
	observed := map[cell]bool{
		{"blue-web/frontend-0", "blue-db/postgres-0", "5432/tcp"}:                     true,
		{"blue-web/frontend-1", "blue-db/postgres-0", "5432/tcp"}:                     true,
		{"monitoring/prometheus-s67w7fvjnh-52ws8", "blue-web/frontend-0", "8080/tcp"}: true,
		{"monitoring/prometheus-s67w7fvjnh-52ws8", "blue-web/frontend-1", "8080/tcp"}: true,
	}
	var cells, lost, open int
	for _, s := range pods {
		for _, d := range pods {
			if s == d {
				continue
			}
			for _, port := range declared(d) {
				c := cell{s.Key(), d.Key(), port}
				b, okb := before[c]
				a, oka := after[c]
				if !okb || !oka {
					t.Fatalf("matrix has no cell %v", c)
				}
				cells++
				if b && !a {
					lost++
				}
				if a && !observed[c] {
					open++
				}
			}
		}
	}
	if cells != 72 || lost != 13 || open != 18 {
		t.Errorf("from the matrices: %d cells, %d lost, %d open unobserved; want 72, 13, 18", cells, lost, open)
	}

	// diff OLD NEW: its lost ranges, counted on the declared ports of
	// each pair of its entries.
	code, out, stderr = run(t, "", "diff", tenants, newDir, "-o", "json")
	if code != 1 {
		t.Fatalf("diff: exit %d, want 1 (changes): %s", code, stderr)
	}
	var d struct {
		Groups []struct {
			FromNamespace, ToNamespace string
			Entries                    []struct {
				From, To []string
				Lost     []struct {
					Protocol      string
					Port, EndPort int
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	byKey := map[string]*state.Pod{}
	for _, p := range pods {
		byKey[p.Key()] = p
	}
	diffLost := 0
	for _, g := range d.Groups {
		for _, en := range g.Entries {
			for _, from := range en.From {
				for _, to := range en.To {
					s, dst := byKey[g.FromNamespace+"/"+from], byKey[g.ToNamespace+"/"+to]
					if s == dst {
						continue
					}
					for _, cp := range dst.Ports {
						for _, r := range en.Lost {
							last := max(r.EndPort, r.Port)
							if strings.EqualFold(r.Protocol, cp.Port.Proto.String()) && int(cp.Port.Num) >= r.Port && int(cp.Port.Num) <= last {
								diffLost++
							}
						}
					}
				}
			}
		}
	}
	if diffLost != 13 {
		t.Errorf("diff's lost ranges cover %d pairs x declared ports, want 13", diffLost)
	}
}
