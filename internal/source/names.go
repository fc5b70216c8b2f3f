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
	check := validation.IsDNS1123Subdomain // most kinds, custom resources too
	switch kind {
	case "Namespace":
		check = validation.IsDNS1123Label
	case "Service":
		check = validation.IsDNS1035Label
	}
	if errs := check(name); len(errs) > 0 {
		return "metadata.name", strings.Join(errs, "; ")
	}
	if namespace == "" {
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
