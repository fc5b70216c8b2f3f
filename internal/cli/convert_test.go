package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/convert"
	"github.com/netpol/netpol/internal/diff"
	"github.com/netpol/netpol/internal/manifest"
	"github.com/netpol/netpol/internal/pipeline"
)

// TestConvertCommand: the tenants example converts, proven and written
// to stdout or as a whole converted input that netpol diff finds equal;
// an input with a KEP field writes nothing and exits 1; an input without
// admin policies says there is nothing to do.
func TestConvertCommand(t *testing.T) {
	code, out, stderr := run(t, "", "convert", "-f", "../../examples/tenants", "--to", "clusternetworkpolicy")
	if code != 0 || strings.Count(out, "kind: ClusterNetworkPolicy") != 5 || strings.Contains(out, "kind: AdminNetworkPolicy") {
		t.Fatalf("exit %d, stderr %s\n%s", code, stderr, out)
	}
	if want := "converted 4 AdminNetworkPolicies and 1 BaselineAdminNetworkPolicy into 5 ClusterNetworkPolicies; each reads back rule for rule as the policy it replaces, and the engine decides every pair of the input's 9 pods on every port the same with them (apply them, then delete the originals)\n"; stderr != want {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	code, out, _ = run(t, "", "convert", "-f", "../../examples/tenants", "--to", "clusternetworkpolicy", "-o", "json")
	var list struct {
		Kind  string
		Items []struct{ Kind, APIVersion string }
	}
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || list.Kind != "List" || len(list.Items) != 5 || list.Items[0].Kind != "ClusterNetworkPolicy" {
		t.Errorf("-o json: exit %d, %v: %+v", code, err, list)
	}

	dir := filepath.Join(t.TempDir(), "converted")
	if code, _, stderr := run(t, "", "convert", "-f", "../../examples/tenants", "--to", "clusternetworkpolicy", "--out-dir", dir); code != 0 {
		t.Fatalf("--out-dir: exit %d: %s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	// admin-policies.yaml held the admin policies only.
	if got := strings.Join(names, " "); got != "clusternetworkpolicies.yaml namespaces.yaml nodes.yaml tenant-policies.yaml workloads.yaml" {
		t.Errorf("--out-dir wrote %s", got)
	}
	if code, out, stderr := run(t, "", "diff", "../../examples/tenants", dir); code != 0 || out != "no connectivity changes\n" {
		t.Errorf("diff of the input and its conversion: exit %d, %q %s", code, out, stderr)
	}
	if code, _, stderr := run(t, "", "convert", "-f", "../../examples/tenants", "--to", "clusternetworkpolicy", "--out-dir", dir); code != 2 || !strings.Contains(stderr, "exists already") {
		t.Errorf("--out-dir over an earlier conversion: exit %d, %s", code, stderr)
	}

	code, out, stderr = run(t, "", "convert", "-f", "../../examples/lint", "--to", "clusternetworkpolicy", "-q")
	if code != 1 || out != "" || stderr != "cannot convert: ../../examples/lint/admin-policies.yaml (document 4): AdminNetworkPolicy same-namespace: spec.ingress[0].from[0].namespaces.related: Self: a ClusterNetworkPolicy cannot select namespaces relative to the subject's own; write one policy per namespace with a namespaceSelector on kubernetes.io/metadata.name\n" {
		t.Errorf("a KEP field: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, out, stderr = run(t, "", "convert", "-f", "../../examples/services", "--to", "clusternetworkpolicy")
	if code != 0 || out != "" || stderr != "nothing to convert: the input has no AdminNetworkPolicy or BaselineAdminNetworkPolicy\n" {
		t.Errorf("NetworkPolicies only: exit %d, %q %q", code, out, stderr)
	}
	for _, args := range [][]string{
		{"convert", "-f", "../../examples/tenants"},
		{"convert", "-f", "../../examples/tenants", "--to", "networkpolicy"},
		{"convert", "-f", "-", "--to", "clusternetworkpolicy", "--out-dir", dir},
	} {
		if code, _, _ := run(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// TestConvertProofSeesADifference: the proof is the engine's, over what
// was written: ClusterNetworkPolicies that say something else (an Accept
// turned Deny) make a difference diff reports.
func TestConvertProofSeesADifference(t *testing.T) {
	in := inputFlags{files: []string{"../../examples/tenants"}, quiet: true}
	in.builder = &pipeline.Builder{}
	cmd := &cobra.Command{}
	before, err := in.load(cmd)
	if err != nil {
		t.Fatal(err)
	}
	res := convert.ToClusterNetworkPolicies(in.kept.objects)
	data, err := manifest.YAML(res.Policies)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"as converted": string(data), "an Accept turned Deny": strings.Replace(string(data), "action: Accept", "action: Deny", 1)} {
		converted, err := readConverted(&in, []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		after, err := rebuildConverted(&in, res.Replaced, converted)
		if err != nil {
			t.Fatal(err)
		}
		if d := diff.Compare(before, after, diff.Options{}); d.Empty() != (name == "as converted") {
			t.Errorf("%s: diff empty %v", name, d.Empty())
		}
		if problems := convert.Prove(res, converted); (len(problems) == 0) != (name == "as converted") {
			t.Errorf("%s: proof %v", name, problems)
		}
	}
}
