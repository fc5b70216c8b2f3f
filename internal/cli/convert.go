package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/convert"
	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/diff"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/manifest"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/words"
)

func newConvert() *cobra.Command {
	var in inputFlags
	var to, output, outDir string
	cmd := &cobra.Command{
		Use:   "convert -f MANIFESTS --to clusternetworkpolicy",
		Short: "Rewrite admin and baseline policies as ClusterNetworkPolicies, proven equal",
		Long: `convert writes a ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2,
network-policy-api v0.2.0) for every AdminNetworkPolicy and
BaselineAdminNetworkPolicy of the input, in either shape netpol reads, and
proves the result before it writes anything: each ClusterNetworkPolicy,
read back as kubectl would apply it, normalises rule for rule to what the
policy it replaces does (so it decides alike for every pod and address,
today's and later ones), and, for inputs of up to 2,000 pods, the engine
decides every pair of the input's pods on every port the same with the
ClusterNetworkPolicies in place of the originals. Apply them, then delete
the originals.

Kept: names, labels and annotations (not kubectl's last-applied copy), the
priority, the subject, every rule in its order with its name and peers.
Allow becomes Accept; ports become protocols; the tier is Admin, or
Baseline at priority 1000 for the BaselineAdminNetworkPolicy (it came after
every Baseline ClusterNetworkPolicy). Each policy is annotated
netpol.io/converted-from with what it replaces.

What a ClusterNetworkPolicy cannot say is listed, each at its object and
field, and nothing is written (exit 1): the KEP shape's sameLabels,
notSameLabels and related, more than 25 rules, peers or ports, a name a
ClusterNetworkPolicy of the input has, a place among policies of equal
priority that would move. A difference the engine finds is printed as
netpol diff prints it (exit 1). An input with nothing to convert says so
(exit 0).

--out-dir writes the whole input converted: each file of -f with the
converted documents left out, and clusternetworkpolicies.yaml, so that
netpol diff MANIFESTS OUT-DIR shows the proof for yourself.`,
		Example: `  netpol convert -f examples/tenants --to clusternetworkpolicy > cnp.yaml
  netpol convert -f cluster/ --to clusternetworkpolicy --out-dir converted/
  netpol diff cluster/ converted/
  netpol convert --context prod --to clusternetworkpolicy -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to != "clusternetworkpolicy" {
				return usageError{fmt.Errorf("--to %q: the one target is clusternetworkpolicy", to)}
			}
			if outDir != "" && (len(in.files) != 1 || in.files[0] == "-") {
				return usageError{fmt.Errorf("--out-dir writes the files of one -f FILE|DIR (not stdin)")}
			}
			in.builder = &pipeline.Builder{Options: in.pipelineOptions()}
			before, err := in.load(cmd)
			if err != nil {
				return err
			}
			res := convert.ToClusterNetworkPolicies(in.kept.objects)
			stderr := cmd.ErrOrStderr()
			if len(res.Policies) == 0 {
				fmt.Fprintln(stderr, "nothing to convert: the input has no AdminNetworkPolicy or BaselineAdminNetworkPolicy")
				return nil
			}
			if len(res.Problems) > 0 {
				for _, p := range res.Problems {
					fmt.Fprintf(stderr, "cannot convert: %s\n", p)
				}
				return errSilent{fmt.Errorf("%s cannot be carried over", words.Count(len(res.Problems), "part"))}
			}
			data, err := manifest.YAML(res.Policies)
			if err != nil {
				return err
			}
			converted, err := readConverted(&in, data)
			if err != nil {
				return err
			}
			if problems := convert.Prove(res, converted); len(problems) > 0 {
				for _, p := range problems {
					fmt.Fprintf(stderr, "not proven: %s\n", p)
				}
				return errSilent{fmt.Errorf("the conversion is not proven")}
			}
			engineChecked := len(before.Cluster().Pods) <= engineCheckPods
			if engineChecked {
				after, err := rebuildConverted(&in, res.Replaced, converted)
				if err != nil {
					return err
				}
				if d := diff.Compare(before, after, diff.Options{Explain: true}); !d.Empty() {
					fmt.Fprintln(stderr, "the engine decides differently with the ClusterNetworkPolicies; nothing written:")
					writeDiffText(stderr, d, true, false)
					return errSilent{fmt.Errorf("the conversion changes verdicts")}
				}
			}
			switch {
			case outDir != "":
				err = writeConverted(outDir, in.files[0], res.Replaced, data)
			case output == "json":
				err = writeJSON(cmd.OutOrStdout(), map[string]any{"apiVersion": "v1", "kind": "List", "items": res.Policies})
			default:
				_, err = cmd.OutOrStdout().Write(data)
			}
			if err != nil {
				return troubleError{err}
			}
			fmt.Fprintln(stderr, convertSummary(res, before, engineChecked))
			return nil
		},
	}
	in.register(cmd)
	cmd.Flags().StringVar(&to, "to", "", "the API to convert to: clusternetworkpolicy")
	cmd.Flags().StringVar(&outDir, "out-dir", "", "write the whole input converted into this directory (each file of -f without the converted documents, and clusternetworkpolicies.yaml)")
	outputFlag(cmd, &output, "yaml", "json")
	return cmd
}

// engineCheckPods is the most pods whose pairs convert also decides with
// the engine, before and after, on top of the rule-by-rule proof: the
// engines' comparison costs pairs of behaviour classes (49 s at 10k pods).
const engineCheckPods = 2000

// readConverted reads the ClusterNetworkPolicies back as kubectl apply
// would send them: the written YAML, through the decoder.
func readConverted(in *inputFlags, data []byte) ([]source.Object, error) {
	shape, err := source.ParseANPShape(in.anpShape)
	if err != nil {
		return nil, usageError{err}
	}
	dec := &source.Decoder{Options: source.Options{ANPShape: shape, Lenient: in.lenient}}
	objects := dec.Decode("converted policies", data)
	if err := dec.Diags.Err(); err != nil {
		return nil, fmt.Errorf("the ClusterNetworkPolicies written do not read back: %w", err)
	}
	return objects, nil
}

// rebuildConverted builds the engine of the input with the replaced
// objects swapped for the converted ones.
func rebuildConverted(in *inputFlags, replaced, converted []source.Object) (*engine.Engine, error) {
	gone := map[diag.Origin]bool{}
	for _, o := range replaced {
		gone[o.Origin] = true
	}
	objects := slices.DeleteFunc(slices.Clone(in.kept.objects), func(o source.Object) bool { return gone[o.Origin] })
	e, _, err := in.builder.Build(append(objects, converted...), in.kept.decoded)
	return e, err
}

// convertSummary says what was converted and what the proof covered.
func convertSummary(res convert.Result, e *engine.Engine, engineChecked bool) string {
	kinds := map[string]int{}
	for _, o := range res.Replaced {
		kinds[o.Kind]++
	}
	var parts []string
	for _, k := range []string{"AdminNetworkPolicy", "BaselineAdminNetworkPolicy"} {
		if n := kinds[k]; n > 0 {
			parts = append(parts, policies(n, k))
		}
	}
	proof := "each reads back rule for rule as the policy it replaces"
	if engineChecked {
		proof += ", and the engine decides every pair of the input's " + words.Count(len(e.Cluster().Pods), "pod") + " on every port the same with them"
	}
	return fmt.Sprintf("converted %s into %s; %s (apply them, then delete the originals)",
		strings.Join(parts, " and "), policies(len(res.Policies), "ClusterNetworkPolicy"), proof)
}

// policies is "1 AdminNetworkPolicy", "2 AdminNetworkPolicies".
func policies(n int, kind string) string {
	if n == 1 {
		return "1 " + kind
	}
	return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(kind, "y"))
}

// convertedFile is where --out-dir puts the ClusterNetworkPolicies.
const convertedFile = "clusternetworkpolicies.yaml"

// writeConverted writes the input at root (a file or a directory) into dir without the documents of the replaced objects, and the
// ClusterNetworkPolicies beside it. A List document that holds a replaced
// item is refused: leaving out the whole document would lose its other
// items, and rewriting it would lose its text.
func writeConverted(dir, root string, replaced []source.Object, data []byte) error {
	gone := map[string]map[int]bool{} // file -> documents (1-based; 0: the only one)
	for _, o := range replaced {
		if o.Origin.Item > 0 {
			return fmt.Errorf("--out-dir: %s is an item of a List document; split the list, or write the policies to stdout", o.Origin)
		}
		if gone[o.Origin.File] == nil {
			gone[o.Origin.File] = map[int]bool{}
		}
		gone[o.Origin.File][o.Origin.Doc] = true
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, convertedFile)); err == nil {
		return fmt.Errorf("--out-dir: %s exists already; give an empty directory", filepath.Join(dir, convertedFile))
	}
	files, err := source.ReadFiles([]string{root}) // as the decoder read them
	if err != nil {
		return err
	}
	for _, f := range files {
		rel, err := filepath.Rel(root, f.Name)
		if err != nil || rel == "." {
			rel = filepath.Base(f.Name) // root is the file
		}
		text := f.Data
		if docs := gone[f.Name]; docs != nil {
			if text = withoutDocuments(text, docs); text == nil {
				continue // it held admin policies only
			}
		}
		out := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(out, text, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, convertedFile), data, 0o644)
}

// withoutDocuments is text without the documents docs numbers, as the
// decoder numbered them (SplitDocuments; 0 for a file of one document).
func withoutDocuments(text []byte, docs map[int]bool) []byte {
	split := source.SplitDocuments(text)
	var kept []string
	for i, doc := range split {
		if docs[i+1] || (len(split) == 1 && docs[0]) {
			continue
		}
		kept = append(kept, strings.TrimSuffix(string(doc), "\n"))
	}
	if len(kept) == 0 {
		return nil
	}
	return []byte(strings.Join(kept, "\n---\n") + "\n")
}
