package source

import (
	"strings"

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
