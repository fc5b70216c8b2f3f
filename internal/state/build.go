package state

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/source"
)

// Options tune how a snapshot is built.
type Options struct {
	// ReplicaCap bounds the pods made for one workload; 0 means DefaultReplicaCap.
	ReplicaCap int
	// Observed: the objects are what an API server holds, so a pod is
	// where it is and has the addresses it has. One without an address
	// (not started yet) is in no set, and one without a node on no node,
	// instead of getting made-up ones as manifests do: an agent that made
	// one up would allow whatever real pod the cluster's IPAM gives that
	// address next, as the pod it was made up for.
	Observed bool
}

// DefaultReplicaCap keeps a 500-replica Deployment from flooding a matrix:
// replicas of one template behave identically anyway.
const DefaultReplicaCap = 10

// LegacyIsolationAnnotation is the namespace annotation of the v1beta1
// NetworkPolicy proposal: {"ingress": {"isolation": "DefaultDeny"}}.
const LegacyIsolationAnnotation = "net.beta.kubernetes.io/network-policy"

// Build makes a snapshot from decoded objects. Objects it does not model
// (policies) are passed through in Cluster.Policies.
func Build(objects []source.Object, opts Options) (*Cluster, diag.List) {
	if opts.ReplicaCap <= 0 {
		opts.ReplicaCap = DefaultReplicaCap
	}
	b := &builder{opts: opts, c: &Cluster{namespaces: map[string]*Namespace{}, nodes: map[string]*Node{}}, seen: map[declared]diag.Origin{}}
	// Namespaces and nodes first, so that pods and workloads find them
	// whatever the order of the input.
	policies := 0
	for _, o := range objects {
		switch v := o.Value.(type) {
		case *corev1.Namespace:
			b.addNamespace(o, v)
		case *corev1.Node:
			b.addNode(o, v)
		default:
			if !isClusterObject(v) {
				policies++
			}
		}
	}
	if policies > 0 {
		b.c.Policies = make([]source.Object, 0, policies)
	}
	for _, o := range objects {
		switch v := o.Value.(type) {
		case *corev1.Namespace, *corev1.Node:
		case *corev1.Pod:
			b.addPod(o, v.ObjectMeta.Labels, v.Namespace, v.Name, &v.Spec, &v.Status, podOwner(v))
		case *source.Pod:
			p := v.Typed()
			b.addPod(o, p.ObjectMeta.Labels, p.Namespace, p.Name, &p.Spec, &p.Status, podOwner(p))
		case *appsv1.Deployment:
			b.addDeployment(o, v)
		case *appsv1.ReplicaSet:
			b.addReplicas(o, v.Namespace, v.Name, "ReplicaSet", replicas(v.Spec.Replicas), &v.Spec.Template, nil)
		case *corev1.ReplicationController:
			b.addReplicationController(o, v)
		case *appsv1.StatefulSet:
			b.addStatefulSet(o, v)
		case *appsv1.DaemonSet:
			b.addDaemonSet(o, v)
		case *batchv1.Job:
			b.addReplicas(o, v.Namespace, v.Name, "Job", replicas(v.Spec.Parallelism), &v.Spec.Template, jobLabels(v.Name))
		case *batchv1.CronJob:
			name := v.Name + "-" + fmt.Sprintf("%08d", hash32(v.Namespace+"/"+v.Name)%100000000)
			b.addReplicas(o, v.Namespace, name, "CronJob", 1, &v.Spec.JobTemplate.Spec.Template, jobLabels(name))
		case *corev1.Service:
			b.addService(o, v)
		case *discoveryv1.EndpointSlice:
			b.addEndpointSlice(o, v)
		case *networkingv1.NetworkPolicy:
			b.namespace(defaultNS(v.Namespace))
			b.c.Policies = append(b.c.Policies, o)
		default:
			b.c.Policies = append(b.c.Policies, o)
		}
	}
	b.reportFinished()
	b.placePods()
	if !b.opts.Observed {
		b.assignAddresses()
	}
	b.c.index()
	b.resolveServices()
	return b.c, b.diags
}

type builder struct {
	opts  Options
	c     *Cluster
	diags diag.List
	seen  map[declared]diag.Origin // first origin, to catch duplicates
	// finished are the pods in phase Succeeded or Failed, left out.
	finished []string
	// services and slices wait for every pod (resolveServices).
	services []pendingService
	slices   []pendingSlice
}

// internLabels returns the label set of a pod with labels l: the one
// value every pod with the same labels shares. The replicas of a workload
// carry the same labels, and on 150k pods a copy each was 40 MB. Pods'
// labels are never written once built.
func (b *builder) internLabels(l map[string]string) labels.Set {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var key strings.Builder
	for _, k := range keys {
		// Lengths first: a workload's template labels are not checked, so
		// {"a": "b=c"} and {"a=b": "c"} must not read alike.
		key.WriteString(strconv.Itoa(len(k)))
		key.WriteByte(':')
		key.WriteString(k)
		key.WriteString(strconv.Itoa(len(l[k])))
		key.WriteByte(':')
		key.WriteString(l[k])
	}
	if set, ok := b.c.labelSets[key.String()]; ok {
		return set
	}
	set := make(labels.Set, len(l))
	for k, v := range l {
		set[k] = v
	}
	if b.c.labelSets == nil {
		b.c.labelSets = map[string]labels.Set{}
	}
	b.c.labelSets[key.String()] = set
	return set
}

// finishedNamed is how many finished pods the finding names: a cluster
// can hold thousands of completed Job pods.
const finishedNamed = 5

// reportFinished says, in one finding, which pods left the model because
// they finished: a finished pod holds no IP address in a cluster, so no
// policy applies to it, but a manifest that lists it should not lose it
// without a word.
func (b *builder) reportFinished() {
	n := len(b.finished)
	if n == 0 {
		return
	}
	sort.Strings(b.finished)
	names := strings.Join(b.finished[:min(n, finishedNamed)], ", ")
	if n > finishedNamed {
		names += fmt.Sprintf(" and %d more", n-finishedNamed)
	}
	msg := fmt.Sprintf("%d pods in phase Succeeded or Failed left out, as they hold no IP address: %s", n, names)
	if n == 1 {
		msg = "1 pod in phase Succeeded or Failed left out, as it holds no IP address: " + names
	}
	b.diags = append(b.diags, diag.Diagnostic{Severity: diag.Warning, Message: msg})
}

// NamespaceOf is the namespace of an object that names ns: "default" when
// it names none, as kubectl applies it.
func NamespaceOf(ns string) string { return defaultNS(ns) }

func defaultNS(ns string) string {
	if ns == "" {
		return "default"
	}
	return ns
}

func replicas(r *int32) int {
	if r == nil {
		return 1
	}
	return int(*r)
}

// declared names an object to catch duplicates, without concatenating
// its kind and names for each of 100k pods.
type declared struct{ kind, namespace, name string }

// declaredIn is the key of a namespaced object. Keys were "Kind ns/name",
// which a name with a slash in it shares with another ("a/b", "c" and
// "a", "b/c"): such names are keyed as one string, as they were.
func declaredIn(kind, namespace, name string) declared {
	if strings.Contains(namespace, "/") || strings.Contains(name, "/") {
		return declared{kind: kind, name: namespace + "/" + name}
	}
	return declared{kind, namespace, name}
}

// duplicate reports an object declared twice; the first declaration wins.
func (b *builder) duplicate(o source.Object, key declared) bool {
	if first, ok := b.seen[key]; ok {
		o.Reporter(&b.diags).Errorf("metadata.name", "declared twice (first at %s)", first)
		return true
	}
	b.seen[key] = o.Origin
	return false
}

// namespace returns the namespace called name, creating it implicitly.
func (b *builder) namespace(name string) *Namespace {
	ns := b.c.namespaces[name]
	if ns == nil {
		ns = &Namespace{Name: name, Labels: labels.Set{corev1.LabelMetadataName: name}}
		b.c.namespaces[name] = ns
		b.c.Namespaces = append(b.c.Namespaces, ns)
	}
	return ns
}

func (b *builder) addNamespace(o source.Object, v *corev1.Namespace) {
	if b.duplicate(o, declared{"Namespace", "", v.Name}) {
		return
	}
	ns := b.namespace(v.Name)
	ns.Declared = true
	ns.Labels = labels.Set{}
	for k, val := range v.Labels {
		ns.Labels[k] = val
	}
	// The API server always sets this label to the name; policies rely on it.
	ns.Labels[corev1.LabelMetadataName] = v.Name
	if a, ok := v.Annotations[LegacyIsolationAnnotation]; ok {
		var legacy struct {
			Ingress struct {
				Isolation string `json:"isolation"`
			} `json:"ingress"`
		}
		if err := json.Unmarshal([]byte(a), &legacy); err != nil {
			o.Reporter(&b.diags).Warnf("metadata.annotations["+LegacyIsolationAnnotation+"]", "not valid JSON, ignored: %v", err)
		} else {
			ns.LegacyIngressIsolation = legacy.Ingress.Isolation == "DefaultDeny"
		}
	}
}

func (b *builder) addNode(o source.Object, v *corev1.Node) {
	if b.duplicate(o, declared{"Node", "", v.Name}) {
		return
	}
	n := b.node(v.Name)
	n.Declared = true
	n.Labels = labels.Set{}
	for k, val := range v.Labels {
		n.Labels[k] = val
	}
	// The kubelet sets this label to its hostname, which --hostname-override
	// or a cloud provider's node names can set apart from the node's name:
	// node peers select on it as written. Input that lacks it (written by
	// hand) gets the kubelet's default, as nodes known only from pods do.
	if _, ok := n.Labels[corev1.LabelHostname]; !ok {
		n.Labels[corev1.LabelHostname] = v.Name
	}
	for i, a := range v.Status.Addresses {
		if a.Type != corev1.NodeInternalIP && a.Type != corev1.NodeExternalIP {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		if err != nil {
			o.Reporter(&b.diags).Errorf(fmt.Sprintf("status.addresses[%d].address", i), "not an IP address: %q", a.Address)
			continue
		}
		n.IPs = append(n.IPs, ip.Unmap())
	}
}

func (b *builder) node(name string) *Node {
	n := b.c.nodes[name]
	if n == nil {
		n = &Node{Name: name, Labels: labels.Set{corev1.LabelHostname: name}}
		b.c.nodes[name] = n
		b.c.Nodes = append(b.c.Nodes, n)
	}
	return n
}

// podOwner is the workload that made a Pod object, from its controller
// ownerReference, spelt as the pods of workload objects have it ("Deployment
// web"); "" for a bare pod. A Deployment's ReplicaSet is named after the
// Deployment and the pod-template-hash its pods carry, so such a
// ReplicaSet stands for its Deployment, which a dump may not hold.
func podOwner(p *corev1.Pod) string {
	for _, ref := range p.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		if hash := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ref.Kind == "ReplicaSet" && hash != "" {
			if name, ok := strings.CutSuffix(ref.Name, "-"+hash); ok && name != "" {
				return "Deployment " + name
			}
		}
		return ref.Kind + " " + ref.Name
	}
	return ""
}

// addPod adds one pod. owner is empty for a bare pod.
func (b *builder) addPod(o source.Object, podLabels map[string]string, namespace, name string, spec *corev1.PodSpec, status *corev1.PodStatus, owner string) {
	ns := b.namespace(defaultNS(namespace))
	if b.duplicate(o, declaredIn("Pod", ns.Name, name)) {
		return
	}
	if status != nil && finished(status) {
		b.finished = append(b.finished, ns.Name+"/"+name)
		return
	}
	p := &Pod{Namespace: ns, Name: name, Labels: b.internLabels(podLabels), Node: spec.NodeName, HostNetwork: spec.HostNetwork, Owner: owner, Origin: o.Origin}
	errorf := func(field, format string, args ...any) { o.Reporter(&b.diags).Errorf(field, format, args...) }
	// field names a port in a finding: only a port that has one pays for it.
	field := func(ci, pi int, name string) string {
		f := fmt.Sprintf("spec.containers[%d].ports[%d].%s", ci, pi, name)
		if status == nil { // a workload's template: Pod objects have a status, even empty
			f = "spec.template." + f
		}
		return f
	}
	n := 0
	for _, c := range spec.Containers {
		n += len(c.Ports)
	}
	if n > 0 {
		p.Ports = make([]ContainerPort, 0, n)
	}
	var names []string // port names, unique across the pod's containers (the API server's validation)
	for ci, c := range spec.Containers {
		for pi, cp := range c.Ports {
			proto := l4.TCP
			if cp.Protocol != "" {
				var err error
				if proto, err = l4.ParseProtocol(string(cp.Protocol)); err != nil {
					errorf(field(ci, pi, "protocol"), "%v", err)
					continue
				}
			}
			if cp.ContainerPort < 1 || cp.ContainerPort > 65535 {
				errorf(field(ci, pi, "containerPort"), "must be 1-65535, got %d", cp.ContainerPort)
				continue
			}
			if cp.Name != "" {
				if slices.Contains(names, cp.Name) {
					errorf(field(ci, pi, "name"), "Duplicate value: %q", cp.Name)
					continue
				}
				names = append(names, cp.Name)
			}
			p.Ports = append(p.Ports, ContainerPort{Name: cp.Name, Port: l4.Port{Proto: proto, Num: uint16(cp.ContainerPort)}})
		}
	}
	if len(p.Ports) == 0 {
		p.Ports = nil // as without ports
	}
	if status != nil {
		for _, c := range status.Conditions {
			p.NotReady = p.NotReady || c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse
		}
		ips := status.PodIPs
		if len(ips) == 0 && status.PodIP != "" {
			ips = []corev1.PodIP{{IP: status.PodIP}}
		}
		for i, pip := range ips {
			ip, err := netip.ParseAddr(pip.IP)
			if err != nil {
				errorf(fmt.Sprintf("status.podIPs[%d].ip", i), "not an IP address: %q", pip.IP)
				continue
			}
			p.IPs = append(p.IPs, ip.Unmap())
		}
	}
	b.c.Pods = append(b.c.Pods, p)
}

func (b *builder) addDeployment(o source.Object, v *appsv1.Deployment) {
	// A Deployment's pods are named <deployment>-<template hash>-<suffix>
	// and carry the template hash as a label, like the ReplicaSet it makes.
	hash := podTemplateHash(v.Namespace + "/" + v.Name)
	extra := map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: hash}
	b.addReplicas(o, v.Namespace, v.Name+"-"+hash, "Deployment", replicas(v.Spec.Replicas), &v.Spec.Template, extra)
}

// addReplicationController adds the pods of the ReplicationController: named
// <controller>-<suffix>, with the template's labels, as a ReplicaSet's.
func (b *builder) addReplicationController(o source.Object, v *corev1.ReplicationController) {
	if v.Spec.Template == nil { // a pointer here, unlike the apps/v1 workloads
		o.Reporter(&b.diags).Errorf("spec.template", "Required value")
		return
	}
	b.addReplicas(o, v.Namespace, v.Name, "ReplicationController", replicas(v.Spec.Replicas), v.Spec.Template, nil)
}

func (b *builder) addStatefulSet(o source.Object, v *appsv1.StatefulSet) {
	n := b.capped(o, replicas(v.Spec.Replicas))
	owner := "StatefulSet " + v.Name
	for i := 0; i < n; i++ {
		name := v.Name + "-" + strconv.Itoa(i)
		l := withLabels(v.Spec.Template.Labels, map[string]string{
			appsv1.StatefulSetPodNameLabel: name,
			appsv1.PodIndexLabel:           strconv.Itoa(i),
		})
		b.addPod(o, l, v.Namespace, name, &v.Spec.Template.Spec, nil, owner)
	}
}

func (b *builder) addDaemonSet(o source.Object, v *appsv1.DaemonSet) {
	owner := "DaemonSet " + v.Name
	var declared []*Node
	for _, n := range b.c.Nodes {
		if n.Declared {
			declared = append(declared, n)
		}
	}
	sort.Slice(declared, func(i, j int) bool { return declared[i].Name < declared[j].Name })
	if len(declared) == 0 {
		// No nodes in the input: one pod stands for the set.
		b.addPod(o, v.Spec.Template.Labels, v.Namespace, v.Name+"-"+suffix(v.Namespace+"/"+v.Name), &v.Spec.Template.Spec, nil, owner)
		return
	}
	for _, n := range declared {
		spec := v.Spec.Template.Spec
		spec.NodeName = n.Name
		b.addPod(o, v.Spec.Template.Labels, v.Namespace, v.Name+"-"+suffix(v.Namespace+"/"+v.Name+"/"+n.Name), &spec, nil, owner)
	}
}

// addReplicas adds n pods named <base>-<suffix> from a template.
func (b *builder) addReplicas(o source.Object, namespace, base, kind string, n int, tpl *corev1.PodTemplateSpec, extra map[string]string) {
	n = b.capped(o, n)
	l := withLabels(tpl.Labels, extra)
	for i := 0; i < n; i++ {
		name := base + "-" + suffix(namespace+"/"+base+"/"+strconv.Itoa(i))
		b.addPod(o, l, namespace, name, &tpl.Spec, nil, kind+" "+o.Name)
	}
}

func (b *builder) capped(o source.Object, n int) int {
	if n > b.opts.ReplicaCap {
		o.Reporter(&b.diags).Warnf("spec.replicas", "%d replicas; modelling %d (raise with --replica-cap)", n, b.opts.ReplicaCap)
		return b.opts.ReplicaCap
	}
	return n
}

func jobLabels(name string) map[string]string {
	return map[string]string{"job-name": name, "batch.kubernetes.io/job-name": name}
}

func withLabels(base, extra map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(extra))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// The characters Kubernetes uses for generated name suffixes (no vowels, no
// look-alikes).
const alphanums = "bcdfghjklmnpqrstvwxz2456789"

func suffix(seed string) string { return encode(hash64(seed), 5) }

func podTemplateHash(seed string) string { return encode(hash64("template/"+seed), 10) }

func encode(h uint64, n int) string {
	out := make([]byte, n)
	for i := range out {
		out[i] = alphanums[h%uint64(len(alphanums))]
		h /= uint64(len(alphanums))
	}
	return string(out)
}

// hash64 is the 64-bit FNV-1a hash of the concatenation of parts, without
// making it: names are hashed for every pod.
func hash64(parts ...string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for _, s := range parts {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= prime
		}
	}
	return h
}

func hash32(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

// placePods puts pods without a node on a declared node (stable: by hash of
// the pod key), and creates nodes that pods name but the input does not declare.
func (b *builder) placePods() {
	var declared []*Node
	for _, n := range b.c.Nodes {
		if n.Declared {
			declared = append(declared, n)
		}
	}
	sort.Slice(declared, func(i, j int) bool { return declared[i].Name < declared[j].Name })
	for _, p := range b.c.Pods {
		switch {
		case p.Node != "":
			b.node(p.Node)
		case len(declared) > 0 && !b.opts.Observed:
			p.Node = declared[hash64(p.Key())%uint64(len(declared))].Name
		}
	}
}

// typedPod returns the Pod object v as a corev1.Pod (a new one for a
// source.Pod), or false when v is not a pod.
func typedPod(v any) (*corev1.Pod, bool) {
	switch p := v.(type) {
	case *corev1.Pod:
		return p, true
	case *source.Pod:
		return p.Typed(), true
	}
	return nil, false
}

// isWorkload reports whether v is a workload that stands for its pods.
func isWorkload(v any) bool {
	switch v.(type) {
	case *appsv1.Deployment, *appsv1.ReplicaSet, *corev1.ReplicationController, *appsv1.StatefulSet, *appsv1.DaemonSet, *batchv1.Job, *batchv1.CronJob:
		return true
	}
	return false
}
