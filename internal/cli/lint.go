package cli

import (
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/lint"
	"github.com/netpol/netpol/internal/words"
)

func newLint() *cobra.Command {
	var in inputFlags
	var output, failOn string
	cmd := &cobra.Command{
		Use:   "lint -f MANIFESTS",
		Short: "Find policy mistakes: overridden, shadowed and dead rules, blocked DNS",
		Long: strings.Replace(`lint reads policies together with the cluster state they apply to and reports
what is probably a mistake, each finding with a severity, a stable code, the
object and field, and a one-line hint:

CODES

Findings about traffic are asked of the engine for the pods of the input (one
pair of pods per pair of behaviour classes): "overridden" means the trace
says an admin rule decided. A flow in the counts is a pair of pods and a
range of ports no rule splits.

The exit code is for CI: 0 when no finding reaches --fail-on, 1 when one
does, 2 when the input is invalid.`, "CODES\n", lintCodes(), 1),
		Example: `  netpol lint -f examples/lint
  netpol lint -f examples/tenants -o json
  netpol lint -f cluster/ -f policies/ --fail-on warning -o sarif > netpol.sarif
  netpol lint --context prod --fail-on none`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			threshold, err := parseFailOn(failOn)
			if err != nil {
				return usageError{err}
			}
			// lint reads admin policies with unknown fields as --lenient
			// does, so that the rest of them is linted too, and reports
			// the fields itself: as errors unless --lenient was given.
			lenient := in.lenient
			in.lenient = true
			e, diags, err := in.build(cmd)
			if err != nil {
				in.warn(cmd.ErrOrStderr(), diags)
				return err
			}
			p := startProgress(cmd, in.quiet)
			p.Stage("linting", nil, "")
			findings := lint.Run(e, diags, lint.Options{Lenient: lenient})
			p.Stop()
			if in.quiet {
				findings = without(findings, lint.CodeInput)
			}
			w := cmd.OutOrStdout()
			switch output {
			case "json":
				err = writeJSON(w, lintJSON(findings))
			case "sarif":
				err = writeJSON(w, sarifLog(findings))
			default:
				writeLintText(w, findings)
			}
			if err != nil {
				return err
			}
			if threshold != 0 && lint.Worst(findings) >= threshold {
				return errSilent{fmt.Errorf("findings at or above %s", threshold)}
			}
			return nil
		},
	}
	in.register(cmd)
	outputFlag(cmd, &output, "text", "json", "sarif")
	cmd.Flags().StringVar(&failOn, "fail-on", "error", "exit 1 when a finding has this severity or a higher one: error, warning, info or none")
	return cmd
}

// parseFailOn reads --fail-on; none is 0, which no finding reaches.
func parseFailOn(s string) (lint.Severity, error) {
	if s == "none" {
		return 0, nil
	}
	sev, err := lint.ParseSeverity(s)
	if err != nil {
		return 0, fmt.Errorf("--fail-on: %w", err)
	}
	return sev, nil
}

func without(fs []lint.Finding, code string) []lint.Finding {
	var out []lint.Finding
	for _, f := range fs {
		if f.Code != code {
			out = append(out, f)
		}
	}
	return out
}

// writeLintText groups findings by object, most severe first.
func writeLintText(w io.Writer, findings []lint.Finding) {
	counts := map[lint.Severity]int{}
	for i, f := range findings {
		counts[f.Severity]++
		if i == 0 || findings[i-1].Object != f.Object {
			if i > 0 {
				fmt.Fprintln(w)
			}
			fmt.Fprint(w, f.Object)
			if o := f.Origin.String(); o != "" {
				fmt.Fprintf(w, " in %s", o)
			}
			fmt.Fprintln(w)
		}
		field := ""
		if f.Field != "" {
			field = f.Field + ": "
		}
		fmt.Fprintf(w, "  %-7s %s: %s%s\n", f.Severity, f.Code, field, f.Message)
		if f.Hint != "" {
			fmt.Fprintf(w, "          hint: %s\n", f.Hint)
		}
	}
	if len(findings) == 0 {
		fmt.Fprintln(w, "no findings")
		return
	}
	fmt.Fprintf(w, "\n%s: %s, %s, %s\n", words.Count(len(findings), "finding"),
		words.Count(counts[lint.Error], "error"), words.Count(counts[lint.Warning], "warning"), words.CountAs(counts[lint.Info], "info", "info"))
}

type findingJSON struct {
	lint.Finding
	File     string `json:"file,omitempty"`
	Document int    `json:"document,omitempty"`
}

type lintOut struct {
	Findings []findingJSON  `json:"findings"`
	Summary  map[string]int `json:"summary"`
}

func lintJSON(findings []lint.Finding) lintOut {
	out := lintOut{Findings: []findingJSON{}, Summary: map[string]int{"error": 0, "warning": 0, "info": 0}}
	for _, f := range findings {
		out.Findings = append(out.Findings, findingJSON{Finding: f, File: f.Origin.File, Document: f.Origin.Doc})
		out.Summary[f.Severity.String()]++
	}
	return out
}

// SARIF 2.1.0, the subset code-scanning tools read.
type sarif struct {
	Version string     `json:"version"`
	Schema  string     `json:"$schema"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifRule struct {
	ID               string    `json:"id"`
	ShortDescription sarifText `json:"shortDescription"`
	Help             sarifText `json:"help"`
}

type sarifResult struct {
	RuleID     string          `json:"ruleId"`
	RuleIndex  int             `json:"ruleIndex"`
	Level      string          `json:"level"`
	Message    sarifText       `json:"message"`
	Locations  []sarifLocation `json:"locations"`
	Properties map[string]any  `json:"properties,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation *sarifPhysical `json:"physicalLocation,omitempty"`
	LogicalLocations []sarifLogical `json:"logicalLocations"`
}

type sarifPhysical struct {
	ArtifactLocation struct {
		URI string `json:"uri"`
	} `json:"artifactLocation"`
}

type sarifLogical struct {
	Name               string `json:"name"`
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

var sarifLevel = map[lint.Severity]string{lint.Error: "error", lint.Warning: "warning", lint.Info: "note"}

// lintCodes lists the registry's codes for --help, each with its summary,
// wrapped to fit 80 columns.
func lintCodes() string {
	width := 0
	for _, r := range lint.Rules {
		width = max(width, len(r.Code))
	}
	indent := strings.Repeat(" ", 2+width+2)
	var b strings.Builder
	for _, r := range lint.Rules {
		var lines []string // the summary, wrapped to what is left of 80 columns
		for _, word := range strings.Fields(r.Summary) {
			if n := len(lines) - 1; n >= 0 && len(indent)+len(lines[n])+1+len(word) <= 80 {
				lines[n] += " " + word
			} else {
				lines = append(lines, word)
			}
		}
		fmt.Fprintf(&b, "  %-*s  %s\n", width, r.Code, strings.Join(lines, "\n"+indent))
	}
	return b.String()
}

func sarifLog(findings []lint.Finding) sarif {
	driver := sarifDriver{Name: "netpol", InformationURI: "https://github.com/netpol/netpol"}
	ruleIndex := map[string]int{}
	for i, r := range lint.Rules {
		ruleIndex[r.Code] = i
		driver.Rules = append(driver.Rules, sarifRule{ID: r.Code, ShortDescription: sarifText{r.Summary}, Help: sarifText{r.Help}})
	}
	run := sarifRun{Tool: sarifTool{Driver: driver}, Results: []sarifResult{}}
	for _, f := range findings {
		text := f.Message
		if f.Field != "" {
			text = f.Field + ": " + text
		}
		if f.Hint != "" {
			text += "\nHint: " + f.Hint
		}
		loc := sarifLocation{LogicalLocations: []sarifLogical{{Name: f.Object.Name, FullyQualifiedName: strings.TrimSpace(f.Object.String() + " " + f.Field), Kind: "object"}}}
		if uri := artifactURI(f.Origin); uri != "" {
			loc.PhysicalLocation = &sarifPhysical{}
			loc.PhysicalLocation.ArtifactLocation.URI = uri
		}
		index, ok := ruleIndex[f.Code]
		if !ok {
			index = -1 // SARIF's "no rule given"; the registry should have it
		}
		res := sarifResult{RuleID: f.Code, RuleIndex: index, Level: sarifLevel[f.Severity], Message: sarifText{text}, Locations: []sarifLocation{loc}}
		if f.Example != nil || f.Field != "" {
			res.Properties = map[string]any{}
			if f.Field != "" {
				res.Properties["field"] = f.Field
			}
			if f.Example != nil {
				res.Properties["example"] = f.Example
			}
		}
		run.Results = append(run.Results, res)
	}
	return sarif{Version: "2.1.0", Schema: "https://json.schemastore.org/sarif-2.1.0.json", Runs: []sarifRun{run}}
}

// artifactURI is the file an object came from as a URI reference: relative
// paths stay relative (SARIF viewers resolve them against the checkout),
// stdin and the live cluster have none.
func artifactURI(o diag.Origin) string {
	switch o.File {
	case "", "-", "cluster":
		return ""
	}
	if filepath.IsAbs(o.File) {
		return (&url.URL{Scheme: "file", Path: filepath.ToSlash(o.File)}).String()
	}
	return (&url.URL{Path: filepath.ToSlash(o.File)}).String()
}
