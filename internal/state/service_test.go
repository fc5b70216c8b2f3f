package state_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

// servicesText prints every Service of c with its ports and backends, one
// port a line: "ns/name Type [cluster IPs] port->target: pod@ip:port ...".
func servicesText(c *state.Cluster) string {
	var lines []string
	for _, s := range c.Services {
		head := fmt.Sprintf("%s %s %v", s.Key(), s.Type, s.ClusterIPs)
		if s.Headless {
			head += " headless"
		}
		if s.FromSlices {
			head += " slices"
		}
		if len(s.Ports) == 0 {
			lines = append(lines, head)
		}
		for _, p := range s.Ports {
			var bs []string
			for _, b := range p.Backends {
				who := "-"
				if b.Pod != nil {
					who = b.Pod.Key()
				}
				bs = append(bs, fmt.Sprintf("%s@%s:%s", who, b.IP, b.Port))
			}
			lines = append(lines, fmt.Sprintf("%s %s %s->%s: %s", head, p.Name, p.Port, p.Target, strings.Join(bs, " ")))
		}
	}
	return strings.Join(lines, "\n")
}

func buildYAML(t *testing.T, yaml string) (*state.Cluster, string) {
	t.Helper()
	dec := &source.Decoder{}
	objs := dec.Decode("in.yaml", []byte(yaml))
	c, diags := state.Build(objs, state.Options{})
	return c, diagLines(append(dec.Diags, diags...))
}

const svcPods = `
apiVersion: v1
kind: Pod
metadata: {name: web-0, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}, {name: dns, containerPort: 5353, protocol: UDP}]}]}
status: {podIPs: [{ip: 198.18.1.1}, {ip: "fd00::1"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 9090}]}]}
status: {podIP: 198.18.1.2}
---
apiVersion: v1
kind: Pod
metadata: {name: web-2, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.3, conditions: [{type: Ready, status: "False"}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-3, namespace: other, labels: {app: web}}
spec: {containers: [{name: c, ports: [{name: http, containerPort: 8080}]}]}
status: {podIP: 198.18.1.4}
---
apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: shop, labels: {app: web}}
spec: {containers: [{name: c}]}
status: {podIP: 198.18.1.5, conditions: [{type: Ready, status: "True"}]}
`

// TestServiceBackends pins the translation a Service port makes: from the
// selector as the endpoint controller would (the Service's namespace only,
// ready pods only, a named targetPort resolved per pod and protocol, a pod
// that does not declare it left out), or from EndpointSlices when the input
// has some for the Service.
func TestServiceBackends(t *testing.T) {
	tests := []struct {
		name, yaml, want, diags string
	}{{
		name: "numeric targetPort, dual stack, not-ready pod left out",
		yaml: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  clusterIPs: ["fd00:96::1", 10.96.0.1]
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
`,
		want: "shop/web ClusterIP [10.96.0.1 fd00:96::1]  80/tcp->8080: shop/plain@198.18.1.5:8080/tcp shop/web-0@198.18.1.1:8080/tcp shop/web-0@fd00::1:8080/tcp shop/web-1@198.18.1.2:8080/tcp",
	}, {
		name: "named targetPort per pod and protocol; targetPort defaults to port",
		yaml: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec:
  type: NodePort
  clusterIP: 10.96.0.2
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: http, nodePort: 30080}
  - {name: dns, port: 53, protocol: UDP, targetPort: dns}
  - {name: direct, port: 8080}
`,
		want: `shop/web NodePort [10.96.0.2] http 80/tcp->http: shop/web-0@198.18.1.1:8080/tcp shop/web-0@fd00::1:8080/tcp shop/web-1@198.18.1.2:9090/tcp
shop/web NodePort [10.96.0.2] dns 53/udp->dns: shop/web-0@198.18.1.1:5353/udp shop/web-0@fd00::1:5353/udp
shop/web NodePort [10.96.0.2] direct 8080/tcp->8080: shop/plain@198.18.1.5:8080/tcp shop/web-0@198.18.1.1:8080/tcp shop/web-0@fd00::1:8080/tcp shop/web-1@198.18.1.2:8080/tcp`,
	}, {
		name: "headless, LoadBalancer and ExternalName",
		yaml: `
apiVersion: v1
kind: Service
metadata: {name: db, namespace: shop}
spec: {clusterIP: None, selector: {app: none}, ports: [{port: 5432}]}
---
apiVersion: v1
kind: Service
metadata: {name: lb, namespace: shop}
spec: {type: LoadBalancer, clusterIP: 10.96.0.3, selector: {app: none}, ports: [{port: 443}]}
---
apiVersion: v1
kind: Service
metadata: {name: ext, namespace: shop}
spec: {type: ExternalName, externalName: db.example.com}
`,
		want: `shop/db ClusterIP [] headless  5432/tcp->5432: 
shop/ext ExternalName []
shop/lb LoadBalancer [10.96.0.3]  443/tcp->443: `,
	}, {
		name: "EndpointSlices win over the selector; not-ready endpoints and dangling references",
		yaml: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {clusterIP: 10.96.0.4, selector: {app: web}, ports: [{name: http, port: 80, targetPort: http}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-abc, namespace: shop, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [198.18.1.1], targetRef: {kind: Pod, name: web-0}}
- {addresses: [198.18.1.2], conditions: {ready: false}}
- {addresses: [198.18.1.9], targetRef: {kind: Pod, name: gone}}
- {addresses: [203.0.113.7]}
`,
		want: "shop/web ClusterIP [10.96.0.4] slices http 80/tcp->http: shop/web-0@198.18.1.1:8080/tcp -@198.18.1.9:8080/tcp -@203.0.113.7:8080/tcp",
		diags: `warning: in.yaml (document 7): EndpointSlice shop/web-abc: endpoints[2].targetRef: pod shop/gone is not in the input: 198.18.1.9 is decided as an address outside the cluster
warning: in.yaml (document 7): EndpointSlice shop/web-abc: endpoints[3].addresses[0]: 203.0.113.7 is no pod's address in the input: decided as an address outside the cluster`,
	}, {
		// web-1 has no IPv6 address: the slice's address stands, with the
		// pod it names (it had the zero address).
		name: "an IPv6 endpoint whose pod has no IPv6 address in the input",
		yaml: `
apiVersion: v1
kind: Service
metadata: {name: web, namespace: shop}
spec: {clusterIP: "fd00:96::4", ipFamilies: [IPv6], selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-v6, namespace: shop, labels: {kubernetes.io/service-name: web}}
addressType: IPv6
ports: [{port: 8080, protocol: TCP}]
endpoints:
- {addresses: ["fd00::2"], targetRef: {kind: Pod, name: web-1}}
`,
		want: "shop/web ClusterIP [fd00:96::4] slices  80/tcp->8080: shop/web-1@fd00::2:8080/tcp",
	}, {
		name: "selector-less Service without EndpointSlices; slice of a missing Service",
		yaml: `
apiVersion: v1
kind: Service
metadata: {name: manual, namespace: shop}
spec: {clusterIP: 10.96.0.5, ports: [{port: 80}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: stray, namespace: shop, labels: {kubernetes.io/service-name: nope}}
addressType: IPv4
endpoints: [{addresses: [198.18.1.1]}]
`,
		want: "shop/manual ClusterIP [10.96.0.5]  80/tcp->80: ",
		diags: `warning: in.yaml (document 6): Service shop/manual: spec.selector: no selector and no EndpointSlice in the input: the Service leads nowhere
warning: in.yaml (document 7): EndpointSlice shop/stray: metadata.labels[kubernetes.io/service-name]: Service shop/nope is not in the input`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, diags := buildYAML(t, svcPods+"---"+tt.yaml)
			if got := servicesText(c); got != tt.want {
				t.Errorf("services:\n%s\nwant:\n%s", got, tt.want)
			}
			if diags != tt.diags {
				t.Errorf("findings:\n%s\nwant:\n%s", diags, tt.diags)
			}
		})
	}
}

// TestServiceErrors: malformed Services and EndpointSlices are errors that
// name the file, the object and the field, as the API server would refuse
// them.
func TestServiceErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{{
		name: "cluster IP",
		yaml: `{apiVersion: v1, kind: Service, metadata: {name: s, namespace: x}, spec: {clusterIP: 10.96.0.300, ports: [{port: 80}]}}`,
		want: `error: in.yaml: Service x/s: spec.clusterIP: not an IP address: "10.96.0.300"`,
	}, {
		name: "port range",
		yaml: `{apiVersion: v1, kind: Service, metadata: {name: s, namespace: x}, spec: {ports: [{port: 0}]}}`,
		want: `error: in.yaml: Service x/s: spec.ports[0].port: must be 1-65535, got 0`,
	}, {
		name: "targetPort range",
		yaml: `{apiVersion: v1, kind: Service, metadata: {name: s, namespace: x}, spec: {ports: [{port: 80, targetPort: 70000}]}}`,
		want: `error: in.yaml: Service x/s: spec.ports[0].targetPort: must be 1-65535, got 70000`,
	}, {
		name: "unnamed port among several",
		yaml: `{apiVersion: v1, kind: Service, metadata: {name: s, namespace: x}, spec: {ports: [{name: a, port: 80}, {port: 81}]}}`,
		want: `error: in.yaml: Service x/s: spec.ports[1].name: Required value: a Service with more than one port names each`,
	}, {
		name: "duplicate port name",
		yaml: `{apiVersion: v1, kind: Service, metadata: {name: s, namespace: x}, spec: {ports: [{name: a, port: 80}, {name: a, port: 81}]}}`,
		want: `error: in.yaml: Service x/s: spec.ports[1].name: Duplicate value: "a"`,
	}, {
		name: "protocol",
		yaml: `{apiVersion: v1, kind: Service, metadata: {name: s, namespace: x}, spec: {ports: [{port: 80, protocol: ICMP}]}}`,
		want: `error: in.yaml: Service x/s: spec.ports[0].protocol: unknown protocol "ICMP" (want TCP, UDP or SCTP)`,
	}, {
		name: "type",
		yaml: `{apiVersion: v1, kind: Service, metadata: {name: s, namespace: x}, spec: {type: Magic}}`,
		want: `error: in.yaml: Service x/s: spec.type: unsupported value "Magic" (want ClusterIP, NodePort, LoadBalancer or ExternalName)`,
	}, {
		name: "ExternalName without a name",
		yaml: `{apiVersion: v1, kind: Service, metadata: {name: s, namespace: x}, spec: {type: ExternalName}}`,
		want: `error: in.yaml: Service x/s: spec.externalName: Required value for type ExternalName`,
	}, {
		name: "slice port name the Service does not have",
		yaml: `{apiVersion: v1, kind: Service, metadata: {name: s, namespace: x}, spec: {clusterIP: 10.96.0.1, ports: [{name: http, port: 80}]}}
---
{apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: s-1, namespace: x, labels: {kubernetes.io/service-name: s}}, addressType: IPv4, ports: [{name: https, port: 8443}], endpoints: []}`,
		want: `error: in.yaml (document 2): EndpointSlice x/s-1: ports[0].name: Service x/s has no port named "https" (it has: [http])`,
	}, {
		name: "slice address",
		yaml: `{apiVersion: discovery.k8s.io/v1, kind: EndpointSlice, metadata: {name: s-1, namespace: x, labels: {kubernetes.io/service-name: s}}, addressType: IPv4, endpoints: [{addresses: [nope]}]}`,
		want: `error: in.yaml: EndpointSlice x/s-1: endpoints[0].addresses[0]: not an IP address: "nope"`,
	}, {
		name: "shared cluster IP",
		yaml: `{apiVersion: v1, kind: Service, metadata: {name: a, namespace: x}, spec: {clusterIP: 10.96.0.1, ports: [{port: 80}]}}
---
{apiVersion: v1, kind: Service, metadata: {name: b, namespace: x}, spec: {clusterIP: 10.96.0.1, ports: [{port: 80}]}}`,
		want: `warning: in.yaml (document 1): Service x/a: spec.selector: no selector and no EndpointSlice in the input: the Service leads nowhere
warning: in.yaml (document 2): Service x/b: spec.selector: no selector and no EndpointSlice in the input: the Service leads nowhere
error: in.yaml (document 2): Service x/b: spec.clusterIPs: cluster IP 10.96.0.1 is also Service x/a's`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, diags := buildYAML(t, tt.yaml)
			if diags != tt.want {
				t.Errorf("findings:\n%s\nwant:\n%s", diags, tt.want)
			}
		})
	}
}
