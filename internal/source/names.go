package source

import (
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation"
)

// invalidName checks an object's name and namespace as the API server
// does, so that files cannot hold what a cluster never would: names reach
// file paths (the lab's files per node), nft comments, Markdown and
// terminals, and a name such as "../../x" or one holding a quote or an
// escape sequence must stop here. It returns the field at fault and why,
// or "" when both are valid.
func invalidName(kind, name, namespace string) (field, msg string) {
	check, plain := validation.IsDNS1123Subdomain, plainSubdomain(name) // most kinds, custom resources too
	switch kind {
	case "Namespace":
		check, plain = validation.IsDNS1123Label, plainLabel(name, false)
	case "Service":
		check, plain = validation.IsDNS1035Label, false
	}
	if !plain {
		if errs := check(name); len(errs) > 0 {
			return "metadata.name", strings.Join(errs, "; ")
		}
	}
	if namespace == "" || plainLabel(namespace, false) {
		return "", ""
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return "metadata.namespace", strings.Join(errs, "; ")
	}
	return "", ""
}

// invalidLabels checks an object's labels as the API server does (they
// are printed in selectors and findings as they are), and says what is
// wrong with the first bad one in key order, or "".
func invalidLabels(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	labels := m.GetLabels()
	var bad []string // rare: sorted only when there is one
	for k, v := range labels {
		if plainKey(k) && (v == "" || plainLabel(v, true)) {
			continue
		}
		if len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	sort.Strings(bad)
	k := bad[0]
	if errs := validation.IsQualifiedName(k); len(errs) > 0 {
		return "key " + strconv.Quote(k) + ": " + strings.Join(errs, "; ")
	}
	return "value of " + k + ": " + strings.Join(validation.IsValidLabelValue(labels[k]), "; ")
}

// The API server's checks above are regular expressions, and a dump asks
// them the same few strings again and again: 6 % of a one-flow explain at
// 1k pods. Strings of the plainest form are valid without asking: the
// functions below answer true only for strings the checks accept
// (FuzzPlainNames holds them to the library), and leave every other
// string to the library, which also words the error.

// plainLabel: 1-63 characters, letters and digits at both ends, dashes
// (and with mixed, also capitals, dots and underscores) inside. Not mixed,
// it is a DNS-1123 label (IsDNS1123Label); mixed, a label value or the
// name part of a label key (IsValidLabelValue, IsQualifiedName).
func plainLabel(s string, mixed bool) bool {
	if len(s) == 0 || len(s) > 63 || !alnum(s[0], mixed) || !alnum(s[len(s)-1], mixed) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		c := s[i]
		if !alnum(c, mixed) && c != '-' && !(mixed && (c == '.' || c == '_')) {
			return false
		}
	}
	return true
}

func alnum(c byte, upper bool) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || upper && 'A' <= c && c <= 'Z'
}

// plainSubdomain: DNS-1123 labels joined by dots, at most 253 characters
// (IsDNS1123Subdomain).
func plainSubdomain(s string) bool {
	if len(s) > 253 {
		return false
	}
	for part := range strings.SplitSeq(s, ".") {
		if !plainLabel(part, false) {
			return false
		}
	}
	return true
}

// plainKey: a label key, with or without a prefix (IsQualifiedName).
func plainKey(k string) bool {
	prefix, name, ok := strings.Cut(k, "/")
	if !ok {
		return plainLabel(k, true)
	}
	return plainSubdomain(prefix) && plainLabel(name, true)
}
