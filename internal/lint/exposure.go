package lint

import (
	"strconv"
	"strings"

	"github.com/netpol/netpol/internal/exposure"
	"github.com/netpol/netpol/internal/policy"
)

// exposed reports the rules that open workloads' ingress fully to every
// namespace's pods or to a whole address family (0.0.0.0/0, ::/0), with
// nothing before them that could take part back (exposure.Side.Open):
// a workload any new pod of any namespace, or the whole internet, may
// reach. One finding per rule and what it opens, naming the workloads.
// The default allow of a pod no policy isolates is not a rule anyone
// wrote, and is left to the reader of netpol exposure.
func (l *linter) exposed() {
	type key struct {
		ref   policy.Ref
		field string
		opens string
	}
	var order []key
	found := map[key]*Finding{}
	workloads := map[key][]string{}
	r := exposure.Of(l.e, exposure.Options{})
	for _, w := range r.Workloads {
		for _, o := range w.Ingress.Openings {
			en, opens := o.Entry, o.What
			field := "spec.ingress[" + strconv.Itoa(en.Source.Index) + "]"
			k := key{en.Policy, field, opens}
			if found[k] == nil {
				// Every namespace is often meant (a public front end);
				// every address also lets in whatever reaches the node.
				sev, what := Info, "every namespace's pods"
				switch opens {
				case "anything":
					sev, what = Warning, "every source (in the cluster and outside)"
				case "0.0.0.0/0", "::/0":
					sev, what = Warning, "every address ("+opens+")"
				}
				ports := "on " + en.Ports
				if en.Ports == "any" {
					ports = "on every port"
				}
				found[k] = &Finding{Severity: sev, Code: CodeExposed, Object: en.Policy, Origin: l.origin(en.Policy), Field: field,
					Message: "opens ingress to " + what + " " + ports + ": ",
					Hint:    "name the namespaces or blocks that need it (a namespaceSelector on kubernetes.io/metadata.name, narrower ipBlocks); netpol exposure lists what each workload is open to"}
				order = append(order, k)
			}
			if ws := workloads[k]; len(ws) == 0 || ws[len(ws)-1] != w.Display() {
				workloads[k] = append(ws, w.Display())
			}
		}
	}
	for _, k := range order {
		f := found[k]
		ws := workloads[k]
		shown := ws
		if len(shown) > 5 {
			shown = append(shown[:5:5], "and "+strconv.Itoa(len(ws)-5)+" more")
		}
		f.Message += strings.Join(shown, ", ")
		l.add(*f)
	}
}
