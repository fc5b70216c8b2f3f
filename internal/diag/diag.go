// Package diag carries findings about input (errors and warnings) with the
// place they came from: file, document, object and field path. Every layer
// that reads user input reports through it, so a message always points at the
// line a user has to change. It imports nothing from netpol but escape.
package diag

import (
	"fmt"
	"strings"

	"github.com/netpol/netpol/internal/escape"
)

// Origin is where an object was read from.
type Origin struct {
	File string // path, "-" for stdin, or a source name such as "cluster"
	Doc  int    // 1-based document number within the file; 0 when unknown
	Item int    // 1-based item within a list document (PodList, List, ...); 0 when not in a list
}

func (o Origin) String() string {
	if o.File == "" {
		return ""
	}
	// A list item is named by its path in the document, as a field is, so
	// that one file from "kubectl get pods -o yaml" still points at the item.
	var where []string
	if o.Doc > 0 {
		where = append(where, fmt.Sprintf("document %d", o.Doc))
	}
	if o.Item > 0 {
		where = append(where, fmt.Sprintf("items[%d]", o.Item-1))
	}
	if len(where) == 0 {
		return o.File
	}
	return o.File + " (" + strings.Join(where, ", ") + ")"
}

// Severity orders findings.
type Severity uint8

const (
	Warning Severity = iota + 1
	Error
)

func (s Severity) String() string {
	if s == Error {
		return "error"
	}
	return "warning"
}

// Diagnostic is one finding. Object is "Kind namespace/name" (or "Kind name").
type Diagnostic struct {
	Severity Severity
	Origin   Origin
	Object   string
	Field    string
	Message  string
}

// ObjectKind is the kind of the object the finding is about ("" when it
// names none).
func (d Diagnostic) ObjectKind() string {
	kind, _, _ := strings.Cut(d.Object, " ")
	return kind
}

func (d Diagnostic) String() string {
	var b strings.Builder
	if o := d.Origin.String(); o != "" {
		b.WriteString(o)
		b.WriteString(": ")
	}
	if d.Object != "" {
		b.WriteString(d.Object)
		b.WriteString(": ")
	}
	if d.Field != "" {
		b.WriteString(d.Field)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	// Files, objects and messages quote what users wrote: show it, never
	// let it steer the terminal that prints the finding.
	return escape.Controls(b.String())
}

// List collects findings in the order they were found.
type List []Diagnostic

// Errors returns only the errors.
func (l List) Errors() List { return l.filter(Error) }

// Warnings returns only the warnings.
func (l List) Warnings() List { return l.filter(Warning) }

func (l List) filter(s Severity) List {
	var out List
	for _, d := range l {
		if d.Severity == s {
			out = append(out, d)
		}
	}
	return out
}

// Err returns the errors of l as one error, or nil when there are none.
func (l List) Err() error {
	errs := l.Errors()
	if len(errs) == 0 {
		return nil
	}
	return InputError(errs)
}

// InputError is bad input: the CLI exits 2 for it.
type InputError List

func (e InputError) Error() string {
	lines := make([]string, len(e))
	for i, d := range e {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// Reporter collects findings for one object.
type Reporter struct {
	Origin Origin
	Object string
	List   *List
}

// Errorf records an error at field.
func (r Reporter) Errorf(field, format string, args ...any) {
	r.add(Error, field, fmt.Sprintf(format, args...))
}

// Warnf records a warning at field.
func (r Reporter) Warnf(field, format string, args ...any) {
	r.add(Warning, field, fmt.Sprintf(format, args...))
}

func (r Reporter) add(s Severity, field, msg string) {
	*r.List = append(*r.List, Diagnostic{Severity: s, Origin: r.Origin, Object: r.Object, Field: field, Message: msg})
}
