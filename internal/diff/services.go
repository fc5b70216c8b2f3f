package diff

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/state"
)

// ServiceChange is a Service port whose reach from the pods of one
// namespace changed: how many of the namespace's pods reach all, some or
// none of its backends ("1 all, 2 some"). Absent is a Service port only
// one side has.
type ServiceChange struct {
	FromNamespace string `json:"fromNamespace"`
	Service       string `json:"service"` // namespace/name
	Port          string `json:"port"`    // name=80/tcp, or 80/tcp
	Old           string `json:"old"`
	New           string `json:"new"`
}

// absent marks a Service port that one side does not have.
const absent = "absent"

// compareServices lists the Service ports whose reach from each namespace
// changed, over the pods both sides have.
func compareServices(old, new *engine.Engine, oldPods, newPods []*state.Pod) []ServiceChange {
	if len(old.Cluster().Services) == 0 && len(new.Cluster().Services) == 0 {
		return nil
	}
	before := reachByNamespace(old.ServiceMatrix(oldPods, old.Cluster().Services))
	after := reachByNamespace(new.ServiceMatrix(newPods, new.Cluster().Services))
	var out []ServiceChange
	for k, b := range before {
		a, ok := after[k]
		if !ok {
			a = absent
		}
		if a != b {
			out = append(out, ServiceChange{FromNamespace: k.ns, Service: k.svc, Port: k.port, Old: b, New: a})
		}
	}
	for k, a := range after {
		if _, ok := before[k]; !ok {
			out = append(out, ServiceChange{FromNamespace: k.ns, Service: k.svc, Port: k.port, Old: absent, New: a})
		}
	}
	sortServiceChanges(out)
	return out
}

type reachKey struct{ ns, svc, port string }

// reachByNamespace counts, per source namespace and Service port, the pods
// that reach all, some or none of the backends: "1 all, 2 some". Counts,
// not one word, so that a namespace whose pods disagree still shows a
// change in one of them.
func reachByNamespace(m *engine.ServiceMatrix) map[reachKey]string {
	counts := map[reachKey]*[4]int{}
	for i, src := range m.Sources {
		for j, c := range m.Columns {
			k := reachKey{ns: src.Namespace.Name, svc: c.Service.Key(), port: c.Port.String()}
			if counts[k] == nil {
				counts[k] = new([4]int)
			}
			counts[k][m.Reach(i, j)]++
		}
	}
	out := make(map[reachKey]string, len(counts))
	for k, n := range counts {
		var parts []string
		for _, r := range []engine.Reach{engine.ReachAll, engine.ReachSome, engine.ReachNone, engine.ReachNoBackends} {
			if n[r] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n[r], r))
			}
		}
		out[k] = strings.Join(parts, ", ")
	}
	return out
}

func sortServiceChanges(s []ServiceChange) {
	slices.SortFunc(s, func(a, b ServiceChange) int {
		return cmp.Or(cmp.Compare(a.FromNamespace, b.FromNamespace), cmp.Compare(a.Service, b.Service), cmp.Compare(a.Port, b.Port))
	})
}
