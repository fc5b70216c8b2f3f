package state

import (
	"fmt"
	"net/netip"
	"sort"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/source"
)

// Service is a destination people name: its ports lead to backends, on
// target ports. Policy never sees a Service; it applies after the
// translation, to the backend pod and target port (DESIGN.md).
type Service struct {
	Namespace *Namespace
	Name      string
	Type      corev1.ServiceType // ClusterIP when the input leaves it out
	// ClusterIPs are the virtual addresses, IPv4 first when there is one;
	// none for a headless or ExternalName Service.
	ClusterIPs   []netip.Addr
	Headless     bool
	ExternalName string
	// Selector is nil for a Service without one (its backends come from
	// EndpointSlices only).
	Selector labels.Selector
	Ports    []ServicePort
	// FromSlices says the backends came from EndpointSlices, not the selector.
	FromSlices bool
	Origin     diag.Origin
}

// Key is "namespace/name".
func (s *Service) Key() string { return s.Namespace.Name + "/" + s.Name }

// TargetPort is a Service port's targetPort: a number, or a container port
// name resolved per backend pod.
type TargetPort struct {
	Num  uint16
	Name string
}

func (t TargetPort) String() string {
	if t.Name != "" {
		return t.Name
	}
	return fmt.Sprint(t.Num)
}

// ServicePort is one port of a Service with the backends it leads to.
type ServicePort struct {
	Name     string
	Port     l4.Port // the Service's own port and protocol
	Target   TargetPort
	NodePort int32
	Backends []Backend
}

// String is the port as messages write it: "web=80/tcp", or "80/tcp"
// without a name.
func (sp ServicePort) String() string { return namedPort(sp.Name, sp.Port) }

// Backend is where a Service port leads: an address and the port there.
// Pod is nil for an address that no pod of the input owns (an
// EndpointSlice may name any address).
type Backend struct {
	Pod  *Pod
	IP   netip.Addr
	Port l4.Port
}

// Service returns the Service namespace/name, or nil.
func (c *Cluster) Service(namespace, name string) *Service {
	return c.services[namespace+"/"+name]
}

// ServiceByIP returns the Service whose cluster IP is ip, or nil.
func (c *Cluster) ServiceByIP(ip netip.Addr) *Service { return c.servicesByIP[ip] }

// ServiceNameLabel ties an EndpointSlice to its Service.
const ServiceNameLabel = discoveryv1.LabelServiceName

// pendingService is a Service read but not yet given backends, which needs
// every pod and EndpointSlice first.
type pendingService struct {
	o   source.Object
	svc *Service
}

type pendingSlice struct {
	o     source.Object
	slice *discoveryv1.EndpointSlice
}

// addService validates a Service as the API server would and records it;
// its backends are resolved once every pod is known (resolveServices).
func (b *builder) addService(o source.Object, v *corev1.Service) {
	ns := b.namespace(defaultNS(v.Namespace))
	if b.duplicate(o, declaredIn("Service", ns.Name, v.Name)) {
		return
	}
	r := o.Reporter(&b.diags)
	s := &Service{Namespace: ns, Name: v.Name, Type: v.Spec.Type, ExternalName: v.Spec.ExternalName, Origin: o.Origin}
	if s.Type == "" {
		s.Type = corev1.ServiceTypeClusterIP
	}
	ok := true
	switch s.Type {
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	case corev1.ServiceTypeExternalName:
		if v.Spec.ExternalName == "" {
			r.Errorf("spec.externalName", "Required value for type ExternalName")
			ok = false
		}
	default:
		r.Errorf("spec.type", "unsupported value %q (want ClusterIP, NodePort, LoadBalancer or ExternalName)", s.Type)
		ok = false
	}
	ips := v.Spec.ClusterIPs
	field := "spec.clusterIPs"
	if len(ips) == 0 && v.Spec.ClusterIP != "" {
		ips, field = []string{v.Spec.ClusterIP}, "spec.clusterIP"
	}
	for i, a := range ips {
		if a == corev1.ClusterIPNone {
			s.Headless = true
			continue
		}
		ip, err := netip.ParseAddr(a)
		if err != nil {
			f := field
			if field == "spec.clusterIPs" {
				f = fmt.Sprintf("%s[%d]", field, i)
			}
			r.Errorf(f, "not an IP address: %q", a)
			ok = false
			continue
		}
		s.ClusterIPs = append(s.ClusterIPs, ip.Unmap())
	}
	// IPv4 first, as for pods, so that a single-family answer is stable.
	sort.SliceStable(s.ClusterIPs, func(i, j int) bool { return s.ClusterIPs[i].Is4() && !s.ClusterIPs[j].Is4() })
	if v.Spec.Selector != nil {
		s.Selector = labels.SelectorFromSet(v.Spec.Selector)
	}
	names := map[string]bool{}
	for i, p := range v.Spec.Ports {
		f := fmt.Sprintf("spec.ports[%d]", i)
		if p.Name == "" && len(v.Spec.Ports) > 1 {
			// The API server refuses it: EndpointSlices match ports by name.
			r.Errorf(f+".name", "Required value: a Service with more than one port names each")
			ok = false
			continue
		}
		if names[p.Name] {
			r.Errorf(f+".name", "Duplicate value: %q", p.Name)
			ok = false
			continue
		}
		names[p.Name] = true
		port, err := servicePort(p)
		if err != nil {
			r.Errorf(f+err.field, "%s", err.msg)
			ok = false
			continue
		}
		s.Ports = append(s.Ports, port)
	}
	if !ok {
		return
	}
	b.services = append(b.services, pendingService{o: o, svc: s})
}

type fieldError struct{ field, msg string }

func servicePort(p corev1.ServicePort) (ServicePort, *fieldError) {
	proto := l4.TCP
	if p.Protocol != "" {
		var err error
		if proto, err = l4.ParseProtocol(string(p.Protocol)); err != nil {
			return ServicePort{}, &fieldError{".protocol", err.Error()}
		}
	}
	if p.Port < 1 || p.Port > 65535 {
		return ServicePort{}, &fieldError{".port", fmt.Sprintf("must be 1-65535, got %d", p.Port)}
	}
	out := ServicePort{Name: p.Name, Port: l4.Port{Proto: proto, Num: uint16(p.Port)}, NodePort: p.NodePort}
	switch {
	case p.TargetPort.Type == intstr.String && p.TargetPort.StrVal != "":
		out.Target.Name = p.TargetPort.StrVal
	case p.TargetPort.Type == intstr.Int && p.TargetPort.IntVal != 0:
		if p.TargetPort.IntVal < 1 || p.TargetPort.IntVal > 65535 {
			return ServicePort{}, &fieldError{".targetPort", fmt.Sprintf("must be 1-65535, got %d", p.TargetPort.IntVal)}
		}
		out.Target.Num = uint16(p.TargetPort.IntVal)
	default:
		out.Target.Num = out.Port.Num // the API server defaults targetPort to port
	}
	return out, nil
}

// addEndpointSlice validates an EndpointSlice; it is tied to its Service
// once every Service is known.
func (b *builder) addEndpointSlice(o source.Object, v *discoveryv1.EndpointSlice) {
	ns := defaultNS(v.Namespace)
	if b.duplicate(o, declaredIn("EndpointSlice", ns, v.Name)) {
		return
	}
	r := o.Reporter(&b.diags)
	ok := true
	switch v.AddressType {
	case discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6, discoveryv1.AddressTypeFQDN:
	default:
		r.Errorf("addressType", "unsupported value %q (want IPv4, IPv6 or FQDN)", v.AddressType)
		ok = false
	}
	for i, ep := range v.Endpoints {
		if v.AddressType == discoveryv1.AddressTypeFQDN {
			continue
		}
		for j, a := range ep.Addresses {
			if _, err := netip.ParseAddr(a); err != nil {
				r.Errorf(fmt.Sprintf("endpoints[%d].addresses[%d]", i, j), "not an IP address: %q", a)
				ok = false
			}
		}
	}
	for i, p := range v.Ports {
		if p.Port != nil && (*p.Port < 1 || *p.Port > 65535) {
			r.Errorf(fmt.Sprintf("ports[%d].port", i), "must be 1-65535, got %d", *p.Port)
			ok = false
		}
		if p.Protocol != nil {
			if _, err := l4.ParseProtocol(string(*p.Protocol)); err != nil {
				r.Errorf(fmt.Sprintf("ports[%d].protocol", i), "%v", err)
				ok = false
			}
		}
	}
	if v.Labels[ServiceNameLabel] == "" {
		r.Warnf("metadata.labels", "no %s label: the slice belongs to no Service, ignored", ServiceNameLabel)
		return
	}
	if ok {
		b.slices = append(b.slices, pendingSlice{o: o, slice: v})
	}
}

// resolveServices gives every Service its backends, once pods are indexed:
// from its EndpointSlices when the input has any, else from its selector as
// the endpoint controller would.
func (b *builder) resolveServices() {
	c := b.c
	c.services = map[string]*Service{}
	c.servicesByIP = map[netip.Addr]*Service{}
	bySvc := map[string][]pendingSlice{}
	for _, ps := range b.slices {
		key := defaultNS(ps.slice.Namespace) + "/" + ps.slice.Labels[ServiceNameLabel]
		bySvc[key] = append(bySvc[key], ps)
	}
	for _, p := range b.services {
		s := p.svc
		key := s.Key()
		r := p.o.Reporter(&b.diags)
		switch slices := bySvc[key]; {
		case s.Type == corev1.ServiceTypeExternalName:
			// A DNS alias: no backends, nothing policy sees.
		case len(slices) > 0:
			s.FromSlices = true
			for _, ps := range slices {
				b.sliceBackends(s, ps)
			}
		case s.Selector == nil:
			r.Warnf("spec.selector", "no selector and no EndpointSlice in the input: the Service leads nowhere")
		default:
			b.selectorBackends(s)
		}
		delete(bySvc, key)
		c.Services = append(c.Services, s)
		c.services[key] = s
		for _, ip := range s.ClusterIPs {
			if other := c.servicesByIP[ip]; other != nil {
				r.Errorf("spec.clusterIPs", "cluster IP %s is also Service %s's", ip, other.Key())
				continue
			}
			c.servicesByIP[ip] = s
		}
	}
	for key, slices := range bySvc {
		for _, ps := range slices {
			ps.o.Reporter(&b.diags).Warnf("metadata.labels["+ServiceNameLabel+"]", "Service %s is not in the input", key)
		}
	}
	sort.Slice(c.Services, func(i, j int) bool { return c.Services[i].Key() < c.Services[j].Key() })
}

// selectorBackends are the endpoint controller's: the pods of the Service's
// namespace that match the selector, have an address and are ready; a named
// targetPort is resolved per pod (against its port of that protocol), and a
// pod that does not declare it is left out, as the controller leaves it out.
func (b *builder) selectorBackends(s *Service) {
	for _, pod := range b.c.PodsIn(s.Namespace) {
		if !s.Selector.Matches(pod.Labels) || pod.NotReady || len(pod.IPs) == 0 {
			continue
		}
		for i := range s.Ports {
			sp := &s.Ports[i]
			port := l4.Port{Proto: sp.Port.Proto, Num: sp.Target.Num}
			if sp.Target.Name != "" {
				var ok bool
				if port, ok = pod.NamedPort(sp.Target.Name, sp.Port.Proto); !ok {
					continue
				}
			}
			for _, ip := range pod.IPs {
				sp.Backends = append(sp.Backends, Backend{Pod: pod, IP: ip, Port: port})
			}
		}
	}
}

// sliceBackends adds the ready endpoints of one EndpointSlice to the ports
// of s they serve (matched by port name, as kube-proxy matches them).
func (b *builder) sliceBackends(s *Service, ps pendingSlice) {
	v := ps.slice
	if v.AddressType == discoveryv1.AddressTypeFQDN {
		return // kube-proxy ignores FQDN slices
	}
	r := ps.o.Reporter(&b.diags)
	type address struct {
		pod *Pod
		ip  netip.Addr
	}
	var ready []address
	for ei, ep := range v.Endpoints {
		if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
			continue
		}
		for ai, a := range ep.Addresses {
			ip := netip.MustParseAddr(a).Unmap() // validated by addEndpointSlice
			ready = append(ready, address{pod: b.endpointPod(r, s, ep.TargetRef, ip, fmt.Sprintf("endpoints[%d]", ei), ai), ip: ip})
		}
	}
	for i, p := range v.Ports {
		name := ""
		if p.Name != nil {
			name = *p.Name
		}
		var sp *ServicePort
		for j := range s.Ports {
			if s.Ports[j].Name == name {
				sp = &s.Ports[j]
			}
		}
		if sp == nil {
			r.Errorf(fmt.Sprintf("ports[%d].name", i), "Service %s has no port named %q (it has: %s)", s.Key(), name, portNames(s))
			continue
		}
		if p.Port == nil {
			continue // no port: the endpoints serve nothing for it
		}
		port := l4.Port{Proto: l4.TCP, Num: uint16(*p.Port)}
		if p.Protocol != nil {
			port.Proto, _ = l4.ParseProtocol(string(*p.Protocol)) // validated by addEndpointSlice
		}
		for _, a := range ready {
			ip := a.ip
			if a.pod != nil {
				if pip, ok := a.pod.IP(a.ip); ok {
					ip = pip // the pod's own address of the slice's family
				}
			}
			sp.Backends = append(sp.Backends, Backend{Pod: a.pod, IP: ip, Port: port})
		}
	}
}

// endpointPod is the pod an endpoint address stands for: the pod its
// targetRef names (the input may have given that pod another address, or
// none that we did not assign), else the pod owning the address. A
// reference to a pod the input lacks, or an address no pod owns, is a
// dangling reference: a warning, and the address is decided as one outside
// the cluster.
func (b *builder) endpointPod(r diag.Reporter, s *Service, ref *corev1.ObjectReference, ip netip.Addr, field string, ai int) *Pod {
	if ref != nil && ref.Kind == "Pod" {
		ns := ref.Namespace
		if ns == "" {
			ns = s.Namespace.Name
		}
		if pod := b.c.Pod(ns + "/" + ref.Name); pod != nil {
			return pod
		}
		r.Warnf(field+".targetRef", "pod %s/%s is not in the input: %s is decided as an address outside the cluster", ns, ref.Name, ip)
		return nil
	}
	if pod := b.c.PodByIP(ip); pod != nil {
		return pod
	}
	r.Warnf(fmt.Sprintf("%s.addresses[%d]", field, ai), "%s is no pod's address in the input: decided as an address outside the cluster", ip)
	return nil
}

func portNames(s *Service) string {
	var out []string
	for _, p := range s.Ports {
		n := p.Name
		if n == "" {
			n = `""`
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return "no ports"
	}
	return fmt.Sprint(out)
}
