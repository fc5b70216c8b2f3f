package source_test

import (
	"bytes"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

// fuzzSeeds are small valid manifests of every kind netpol reads, plus a few
// malformed ones.
var fuzzSeeds = []string{
	"apiVersion: v1\nkind: Namespace\nmetadata: {name: x, labels: {team: red}, annotations: {net.beta.kubernetes.io/network-policy: '{\"ingress\": {\"isolation\": \"DefaultDeny\"}}'}}\n",
	"apiVersion: v1\nkind: Node\nmetadata: {name: n1, labels: {zone: a}}\nstatus: {addresses: [{type: InternalIP, address: 198.19.255.7}]}\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x, labels: {app: a}}\nspec: {nodeName: n1, containers: [{name: c, ports: [{containerPort: 80, name: http}, {containerPort: 53, name: dns, protocol: UDP}]}]}\nstatus: {podIPs: [{ip: 198.18.0.5}, {ip: \"fd00::5\"}]}\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: h, namespace: x}\nspec: {nodeName: n1, hostNetwork: true, containers: [{name: c}]}\n",
	"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d, namespace: x}\nspec: {replicas: 3, selector: {matchLabels: {app: d}}, template: {metadata: {labels: {app: d}}, spec: {containers: [{name: c, ports: [{containerPort: 8080, name: http}]}]}}}\n",
	"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s, namespace: x}\nspec: {replicas: 2, selector: {}, template: {spec: {containers: []}}}\n",
	"apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: ds, namespace: x}\nspec: {selector: {}, template: {spec: {hostNetwork: true, containers: []}}}\n",
	"apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs, namespace: x}\nspec: {replicas: 1, selector: {}, template: {spec: {containers: []}}}\n",
	"apiVersion: v1\nkind: ReplicationController\nmetadata: {name: rc, namespace: x}\nspec: {replicas: 2, selector: {app: rc}, template: {metadata: {labels: {app: rc}}, spec: {containers: [{name: c, ports: [{containerPort: 80}]}]}}}\n",
	"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: x}\nspec: {template: {spec: {containers: []}}}\n",
	"apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: cj, namespace: x}\nspec: {schedule: '* * * * *', jobTemplate: {spec: {template: {spec: {containers: []}}}}}\n",
	"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: p, namespace: x}\nspec: {podSelector: {}, policyTypes: [Ingress, Egress], ingress: [{from: [{ipBlock: {cidr: 198.18.0.0/16, except: [198.18.1.0/24]}}, {namespaceSelector: {matchExpressions: [{key: team, operator: In, values: [red]}]}, podSelector: {}}], ports: [{port: 80, endPort: 90}, {port: http}]}], egress: [{}]}\n",
	"apiVersion: extensions/v1beta1\nkind: NetworkPolicy\nmetadata: {name: old, namespace: x}\nspec: {podSelector: {}, ingress: [{from: [], ports: []}]}\n",
	"apiVersion: policy.networking.k8s.io/v1alpha1\nkind: AdminNetworkPolicy\nmetadata: {name: a}\nspec: {priority: 3, subject: {namespaces: {}}, egress: [{action: Deny, to: [{networks: [198.18.0.0/15]}, {nodes: {matchLabels: {zone: a}}}], ports: [{portRange: {start: 1, end: 9}}]}, {action: Allow, to: [{domainNames: [example.com]}]}]}\n",
	"apiVersion: policy.networking.k8s.io/v1alpha1\nkind: AdminNetworkPolicy\nmetadata: {name: k}\nspec: {priority: 3, subject: {pods: {namespaceSelector: {}, podSelector: {}}}, ingress: [{action: Pass, from: [{namespaces: {sameLabels: [t]}}, {pods: {namespaces: {related: NotSelf}, podSelector: {}}}], ports: [{namedPort: http}]}]}\n",
	"apiVersion: policy.networking.k8s.io/v1alpha1\nkind: BaselineAdminNetworkPolicy\nmetadata: {name: default}\nspec: {subject: {namespaces: {}}, ingress: [{action: Deny, from: [{pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: a}}}}]}]}\n",
	"apiVersion: policy.networking.k8s.io/v1alpha1\nkind: BaselineAdminNetworkPolicy\nmetadata: {name: default}\nspec: {subject: {namespaces: {}}, ingress: [{action: Deny, from: [{namespaces: {notSameLabels: [t]}}]}]}\n",
	"apiVersion: policy.networking.k8s.io/v1alpha2\nkind: ClusterNetworkPolicy\nmetadata: {name: c}\nspec: {tier: Baseline, priority: 1, subject: {namespaces: {}}, ingress: [{action: Accept, from: [{namespaces: {}}], protocols: [{tcp: {destinationPort: {number: 80}}}, {udp: {destinationPort: {range: {start: 1, end: 99}}}}, {destinationNamedPort: dns}]}]}\n",
	"apiVersion: policy.networking.k8s.io/v1alpha2\nkind: ClusterNetworkPolicy\nmetadata: {name: c2}\nspec: {tier: Admin, priority: 0, subject: {pods: {namespaceSelector: {}, podSelector: {}}}, egress: [{action: Pass, to: [{networks: [\"fd00::/8\"]}]}]}\n",
	"apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: x}\nspec: {type: NodePort, clusterIPs: [10.96.0.1, \"fd00:96::1\"], selector: {app: a}, ports: [{name: http, port: 80, targetPort: http, nodePort: 30080}, {name: dns, port: 53, protocol: UDP, targetPort: 53}]}\n",
	"apiVersion: v1\nkind: Service\nmetadata: {name: head, namespace: x}\nspec: {clusterIP: None, selector: {app: a}, ports: [{port: 80}]}\n",
	"apiVersion: v1\nkind: Service\nmetadata: {name: ext, namespace: x}\nspec: {type: ExternalName, externalName: db.example.com}\n",
	"apiVersion: v1\nkind: Service\nmetadata: {name: manual, namespace: x}\nspec: {clusterIP: 10.96.0.2, ports: [{name: http, port: 80}]}\n",
	"apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: manual-1, namespace: x, labels: {kubernetes.io/service-name: manual}}\naddressType: IPv4\nports: [{name: http, port: 8080, protocol: TCP}]\nendpoints: [{addresses: [198.18.0.5], targetRef: {kind: Pod, name: a}}, {addresses: [203.0.113.1], conditions: {ready: false}}, {addresses: [198.18.9.9], targetRef: {kind: Pod, name: gone}}]\n",
	`{"apiVersion": "v1", "kind": "List", "items": [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 3, "template": {"spec": {"containers": []}}}}]}`,
	`{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "namespace": "x"}} {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b", "namespace": "x"}}`,
	"---\n---\nkind: x\n",
	"apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: y}\n",
	"apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: List, items: [{}]}]\n",
	"apiVersion: v1\nkind: PodList\nitems: [{metadata: {name: a, namespace: x}}, {kind: Namespace, metadata: {name: x}}]\n",
}

// exampleSeeds returns every manifest under the repository's examples (if
// there are any), one seed per file and one per directory.
func exampleSeeds() [][]byte {
	var seeds [][]byte
	perDir := map[string][]byte{}
	_ = filepath.WalkDir(filepath.Join("..", "..", "examples"), func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return nil
		}
		if ext := strings.ToLower(filepath.Ext(path)); ext != ".yaml" && ext != ".yml" && ext != ".json" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		seeds = append(seeds, data)
		dir := filepath.Dir(path)
		perDir[dir] = append(append(perDir[dir], "\n---\n"...), data...)
		return nil
	})
	dirs := make([]string, 0, len(perDir))
	for d := range perDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		seeds = append(seeds, perDir[d])
	}
	return seeds
}

// FuzzDecode feeds arbitrary bytes through the whole pipeline: nothing may
// panic, and every decoded object must be complete.
func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(strings.Join(fuzzSeeds, "\n---\n")))
	for _, s := range exampleSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The same bytes under both readings of the admin policies, and
		// leniently, so that policies without their unknown fields (the
		// fail-closed peers) go through the engine too.
		for _, opts := range []source.Options{{ANPShape: source.ShapeAuto}, {ANPShape: source.ShapeKEP, Lenient: true}} {
			shape := opts.ANPShape
			dec := &source.Decoder{Options: opts}
			objs := dec.Decode("fuzz.yaml", bytes.Clone(data))
			for _, o := range objs {
				if o.Kind == "" || o.Name == "" || o.Value == nil {
					t.Fatalf("incomplete object %+v", o)
				}
			}
			c, _ := state.Build(objs, state.Options{})
			set, _ := policy.Normalize(c.Policies)
			e := engine.New(c, set, engine.Options{LegacyNamespaceIsolation: shape == source.ShapeKEP})
			_ = e.PriorityOverlaps()
			if len(c.Pods) == 0 {
				continue
			}
			m := e.ServiceMatrix(c.Pods[:1], c.Services)
			for ci, col := range m.Columns {
				_ = m.Reach(0, ci)
				if src, err := e.Endpoint(c.Pods[0].Key()); err == nil {
					_ = e.DecideService(src, col.Service, col.Port, netip.Addr{}).Summary()
				}
			}
			pods := c.Pods
			if len(pods) > 2 {
				pods = pods[:2]
			}
			ports := []l4.Port{{Proto: l4.TCP, Num: 80}, {Proto: l4.UDP, Num: 53}}
			pm := e.Matrix(pods, pods, ports)
			for i, s := range pods {
				for j, d := range pods {
					src, err := e.Endpoint(s.Key())
					if err != nil {
						continue // a pod without an address
					}
					dst, err := e.Endpoint(d.Key())
					if err != nil {
						continue
					}
					for k, p := range ports {
						fl, err := e.NewFlow(src, dst, l4.PortSpec{Num: p.Num, Proto: p.Proto})
						if err != nil {
							continue
						}
						_ = e.Decide(fl)
						_ = pm.Allowed(i, j, k)
					}
					if fl, err := e.NewFlow(src, dst, l4.PortSpec{Name: "http"}); err == nil {
						_ = e.Decide(fl)
					}
				}
			}
		}
	})
}
