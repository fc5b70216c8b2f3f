package scenario

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/words"
)

// MaxMismatchesShown bounds the traces printed per step: the first few
// explain the cause; the count tells the size.
const MaxMismatchesShown = 5

func word(allowed bool) string {
	if allowed {
		return "allowed"
	}
	return "denied"
}

// WriteText prints one line per scenario, and for failures each mismatching
// flow with its trace.
func WriteText(w io.Writer, results []Result) (passed, failed int) {
	for _, r := range results {
		if r.Passed() {
			passed++
			fmt.Fprintf(w, "PASS  %s  (%s, %s)\n", r.Scenario.Name, r.Scenario.File, words.Count(r.Checked(), "flow"))
			continue
		}
		failed++
		fmt.Fprintf(w, "FAIL  %s  (%s)\n", r.Scenario.Name, r.Scenario.File)
		WriteFailure(w, r)
	}
	fmt.Fprintf(w, "\n%d passed, %d failed\n", passed, failed)
	return passed, failed
}

// WriteFailure prints what went wrong in r.
func WriteFailure(w io.Writer, r Result) {
	if r.Err != nil {
		fmt.Fprintf(w, "  error:\n%s", indentLines(r.Err.Error(), "    "))
		return
	}
	for _, s := range r.Steps {
		if s.Err != nil {
			fmt.Fprintf(w, "  %s: error:\n%s", s.Name, indentLines(s.Err.Error(), "    "))
			continue
		}
		if len(s.Mismatches) == 0 {
			continue
		}
		fmt.Fprintf(w, "  %s: %d of %s differ\n", s.Name, len(s.Mismatches), words.Count(s.Checked, "flow"))
		for i, m := range s.Mismatches {
			if i == MaxMismatchesShown {
				fmt.Fprintf(w, "    ... and %d more\n", len(s.Mismatches)-i)
				break
			}
			if m.Reach != nil {
				fmt.Fprintf(w, "    %s -> %s %s: expected reach %s, got %s (%s)\n", m.From, m.To, m.Port, m.Reach.Want, m.Reach.Got, m.Reach.Summary)
			} else {
				fmt.Fprintf(w, "    %s -> %s %s: expected %s, got %s\n", m.From, m.To, m.Port, word(m.Expected), word(!m.Expected))
			}
			if !m.Flow.Src.IP.IsValid() {
				continue // no backend: no trace
			}
			var b strings.Builder
			engine.WriteTrace(&b, m.Flow, m.Verdict)
			fmt.Fprint(w, indentLines(b.String(), "      "))
		}
	}
}

func indentLines(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

// JUnit report, as CI systems read it.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes one test case per scenario.
func WriteJUnit(w io.Writer, results []Result) error {
	suite := junitSuite{Name: "netpol"}
	for _, r := range results {
		c := junitCase{Name: r.Scenario.Name, ClassName: r.Scenario.File}
		suite.Tests++
		if !r.Passed() {
			suite.Failures++
			var b strings.Builder
			WriteFailure(&b, r)
			c.Failure = &junitFailure{Message: "verdicts differ from the expectation", Text: b.String()}
		}
		suite.Cases = append(suite.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{suite}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
