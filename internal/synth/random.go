package synth

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
)

// Random writes a small random cluster as a YAML stream: a few namespaces,
// pods, nodes, Services and policies of every API and peer shape, drawn
// from tiny vocabularies so that selectors overlap, priorities collide and
// rules shadow each other. Front ends that group pods into classes (lint,
// diff) compare their grouped answers with pair-by-pair ones on such
// clusters, where every corner shows up in a few hundred seeds.
//
// variant 0 is the cluster of seed; variant 1 is the same cluster after a
// "pull request": some pods relabelled, removed or added, some policies
// changed, removed or added, so that diff has something to find.
func Random(seed int64, variant int) string {
	g := &randomGen{r: rand.New(rand.NewSource(seed))}
	// A second stream for what the variant changes, so that variant 1
	// shares everything else with variant 0.
	change := rand.New(rand.NewSource(seed*7919 + 1))
	changed := func(p float64) bool { return variant == 1 && change.Float64() < p }
	if variant == 1 {
		g.tweak = func(doc string) string {
			if change.Intn(8) != 0 {
				return doc
			}
			return tweak(change, doc)
		}
	}

	nodes := g.r.Intn(3)
	for i := 0; i < nodes; i++ {
		g.doc("apiVersion: v1\nkind: Node\nmetadata: {name: node-%d, labels: {zone: %s}}\nstatus: {addresses: [{type: InternalIP, address: 198.19.255.%d}]}",
			i, g.pick("a", "b"), i+1)
	}
	nss := []string{"kube-system"}
	for i, n := 0, 2+g.r.Intn(3); i < n; i++ {
		nss = append(nss, fmt.Sprintf("ns-%d", i))
	}
	for i, ns := range nss {
		labels := g.labels(0.9, "team", "a", "b", "c")
		if g.r.Intn(2) == 0 {
			labels = append(labels, "env: "+g.pick("prod", "dev"))
		}
		if changed(0.1) {
			labels = labelsFrom(change, 0.9, "team", "a", "b")
		}
		if i == 0 {
			labels = nil
		}
		g.doc("apiVersion: v1\nkind: Namespace\nmetadata: {name: %s, labels: {%s}}", ns, strings.Join(labels, ", "))
	}
	g.doc("apiVersion: v1\nkind: Pod\nmetadata: {name: dns, namespace: kube-system, labels: {k8s-app: kube-dns}}\n" +
		"spec: {containers: [{name: c, ports: [{name: dns, containerPort: 53, protocol: UDP}, {name: dns-tcp, containerPort: 53}]}]}\n" +
		"status: {podIP: 198.18.0.53}")
	pods := 4 + g.r.Intn(12)
	for i := 0; i < pods; i++ {
		ns := nss[1+g.r.Intn(len(nss)-1)]
		labels := g.labels(0.8, "app", "web", "db", "api")
		labels = append(labels, g.labels(0.4, "tier", "front", "back")...)
		ports := g.ports()
		ips := g.ips(i)
		host := nodes > 0 && g.r.Intn(10) == 0
		node := ""
		if nodes > 0 {
			n := g.r.Intn(nodes)
			node = fmt.Sprintf("node-%d", n)
			if host {
				ips = []string{fmt.Sprintf("198.19.255.%d", n+1)}
			}
		}
		if changed(0.05) {
			continue // removed in the pull request
		}
		if changed(0.1) {
			labels = labelsFrom(change, 0.8, "app", "web", "db")
		}
		g.pod(ns, fmt.Sprintf("p%d", i), labels, ports, ips, node, host)
	}
	if variant == 1 && change.Intn(2) == 0 {
		g.pod(nss[1], "added", labelsFrom(change, 1, "app", "web", "db"), "{name: http, containerPort: 80}", []string{"198.18.9.9"}, "", false)
	}
	if g.r.Intn(3) == 0 {
		g.doc("apiVersion: v1\nkind: Service\nmetadata: {name: svc, namespace: %s}\nspec: {clusterIP: 10.96.0.%d, selector: {app: %s}, ports: [{name: web, port: 80, targetPort: %s}]}",
			nss[1], 1+g.r.Intn(9), g.pick("web", "db"), g.pick("http", "8080", "80", "metrics"))
	}

	// A policy of the variant is written from the same draws as in
	// variant 0, then rewritten from the variant's own or left out.
	policies := g.r.Intn(7)
	for i := 0; i < policies; i++ {
		n := g.b.Len()
		g.networkPolicy(g.r, nss, i)
		switch {
		case changed(0.05):
			g.b.Truncate(n)
		case changed(0.1):
			g.b.Truncate(n)
			g.networkPolicy(change, nss, i)
		}
	}
	admins := g.r.Intn(6)
	for i := 0; i < admins; i++ {
		n := g.b.Len()
		g.adminPolicy(g.r, i)
		if changed(0.1) {
			g.b.Truncate(n)
			g.adminPolicy(change, i)
		}
	}
	if g.r.Intn(3) == 0 {
		g.baseline(g.r)
	}
	if g.r.Intn(4) == 0 {
		g.clusterNetworkPolicy(g.r)
	}
	return g.b.String()
}

type randomGen struct {
	r *rand.Rand
	b bytes.Buffer
	// tweak, in the variant, changes a document a little, as a pull
	// request does more often than it rewrites one.
	tweak func(string) string
}

func (g *randomGen) doc(format string, args ...any) {
	if g.b.Len() > 0 {
		g.b.WriteString("---\n")
	}
	doc := fmt.Sprintf(format, args...)
	if g.tweak != nil {
		doc = g.tweak(doc)
	}
	g.b.WriteString(doc)
	g.b.WriteString("\n")
}

// tweaks are small edits of a document: a port, a label, an action, an
// address, a policy type.
var tweaks = [][2]string{
	{"port: 80}", "port: 81}"}, {"app: web", "app: db"}, {"action: Allow", "action: Deny"}, {"action: Deny", "action: Allow"},
	{"containerPort: 80}", "containerPort: 81}"}, {"name: http, containerPort", "name: web, containerPort"}, {"team: a", "team: b"},
	{"env: prod", "env: dev"}, {"tier: front", "tier: back"}, {"198.18.0.0/16", "198.18.0.0/17"}, {"Ingress, Egress", "Ingress"},
	{"namedPort: http", "namedPort: dns"}, {"{ip: 198.18.", "{ip: 198.19."}, {"zone: a", "zone: b"}, {"priority: 1,", "priority: 2,"},
	{"hostNetwork: true, ", ""}, {"nodeName: node-0", "nodeName: node-1"},
}

// tweak makes one of the tweaks that apply to doc, if any does.
func tweak(r *rand.Rand, doc string) string {
	var apply [][2]string
	for _, t := range tweaks {
		if strings.Contains(doc, t[0]) {
			apply = append(apply, t)
		}
	}
	if len(apply) == 0 {
		return doc
	}
	t := apply[r.Intn(len(apply))]
	doc = strings.Replace(doc, t[0], t[1], 1)
	if strings.Contains(doc, "kind: ClusterNetworkPolicy") { // its Allow is spelt Accept
		doc = strings.ReplaceAll(doc, "action: Allow", "action: Accept")
	}
	return doc
}

func (g *randomGen) pick(s ...string) string { return s[g.r.Intn(len(s))] }

// labels is "key: value" with probability p, a value from values.
func (g *randomGen) labels(p float64, key string, values ...string) []string {
	return labelsFrom(g.r, p, key, values...)
}

func labelsFrom(r *rand.Rand, p float64, key string, values ...string) []string {
	if r.Float64() >= p {
		return nil
	}
	return []string{key + ": " + pickFrom(r, values...)}
}

func (g *randomGen) ports() string {
	all := []string{"{name: http, containerPort: 80}", "{name: http, containerPort: 8080}", "{containerPort: 8080}",
		"{name: metrics, containerPort: 9090}", "{name: dns, containerPort: 53, protocol: UDP}", "{containerPort: 5000, protocol: SCTP}"}
	var out []string
	for _, p := range all {
		if g.r.Intn(4) == 0 && !(strings.Contains(p, "name: http") && len(out) > 0 && strings.Contains(strings.Join(out, ""), "name: http")) {
			out = append(out, p)
		}
	}
	return strings.Join(out, ", ")
}

// ips are the pod's addresses: mostly IPv4, sometimes dual-stack or
// IPv6 only.
func (g *randomGen) ips(i int) []string {
	v4, v6 := fmt.Sprintf("198.18.%d.%d", i%3, 10+i), fmt.Sprintf("fd00::%x", 10+i)
	switch g.r.Intn(8) {
	case 0:
		return []string{v4, v6}
	case 1:
		return []string{v6}
	}
	return []string{v4}
}

func (g *randomGen) pod(ns, name string, labels []string, ports string, ips []string, node string, host bool) {
	var spec []string
	if node != "" {
		spec = append(spec, "nodeName: "+node)
	}
	if host {
		spec = append(spec, "hostNetwork: true")
	}
	spec = append(spec, "containers: [{name: c, ports: ["+ports+"]}]")
	var podIPs []string
	for _, ip := range ips {
		podIPs = append(podIPs, "{ip: "+ip+"}")
	}
	g.doc("apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s, labels: {%s}}\nspec: {%s}\nstatus: {podIPs: [%s]}",
		name, ns, strings.Join(labels, ", "), strings.Join(spec, ", "), strings.Join(podIPs, ", "))
}

func pickFrom(r *rand.Rand, s ...string) string { return s[r.Intn(len(s))] }

// podSelector is a label selector over the pod vocabulary, often empty.
func podSelector(r *rand.Rand) string {
	switch r.Intn(5) {
	case 0:
		return "{}"
	case 1:
		return "{matchExpressions: [{key: tier, operator: " + pickFrom(r, "In", "NotIn") + ", values: [front]}]}"
	}
	return "{matchLabels: {app: " + pickFrom(r, "web", "db", "api") + "}}"
}

func namespaceSelector(r *rand.Rand) string {
	switch r.Intn(4) {
	case 0:
		return "{}"
	case 1:
		return "{matchLabels: {env: " + pickFrom(r, "prod", "dev") + "}}"
	}
	return "{matchLabels: {team: " + pickFrom(r, "a", "b", "c") + "}}"
}

func (g *randomGen) networkPolicy(r *rand.Rand, nss []string, i int) {
	ns := nss[r.Intn(len(nss))]
	var types []string
	var rules [2][]string
	for d, dir := range []string{"ingress", "egress"} {
		if r.Intn(3) == 0 {
			continue
		}
		types = append(types, map[string]string{"ingress": "Ingress", "egress": "Egress"}[dir])
		for k, n := 0, r.Intn(3); k < n; k++ {
			rules[d] = append(rules[d], npRule(r, dir))
		}
	}
	spec := "podSelector: " + podSelector(r)
	if r.Intn(3) > 0 { // else policyTypes defaults
		spec += ", policyTypes: [" + strings.Join(types, ", ") + "]"
	}
	if len(rules[0]) > 0 || r.Intn(4) == 0 {
		spec += ", ingress: [" + strings.Join(rules[0], ", ") + "]"
	}
	if len(rules[1]) > 0 {
		spec += ", egress: [" + strings.Join(rules[1], ", ") + "]"
	}
	g.doc("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: np-%d, namespace: %s}\nspec: {%s}", i, ns, spec)
}

func npRule(r *rand.Rand, dir string) string {
	list := map[string]string{"ingress": "from", "egress": "to"}[dir]
	var fields []string
	if r.Intn(4) > 0 {
		var peers []string
		for k, n := 0, 1+r.Intn(2); k < n; k++ {
			switch r.Intn(5) {
			case 0:
				peers = append(peers, "{namespaceSelector: "+namespaceSelector(r)+"}")
			case 1:
				peers = append(peers, "{namespaceSelector: "+namespaceSelector(r)+", podSelector: "+podSelector(r)+"}")
			case 2:
				cidr := pickFrom(r, "198.18.0.0/16", "198.18.0.0/15", "0.0.0.0/0", "fd00::/64")
				except := pickFrom(r, "", ", except: [198.18.1.0/24]", ", except: [198.18.0.0/24]")
				if cidr == "fd00::/64" {
					except = pickFrom(r, "", ", except: [fd00::/124]")
				}
				peers = append(peers, "{ipBlock: {cidr: "+cidr+except+"}}")
			default:
				peers = append(peers, "{podSelector: "+podSelector(r)+"}")
			}
		}
		fields = append(fields, list+": ["+strings.Join(peers, ", ")+"]")
	}
	if r.Intn(3) > 0 {
		var ports []string
		for k, n := 0, 1+r.Intn(2); k < n; k++ {
			ports = append(ports, pickFrom(r, "{port: 80}", "{port: http}", "{port: metrics}", "{port: 8000, endPort: 8100}",
				"{protocol: UDP, port: 53}", "{protocol: UDP, port: dns}", "{port: 8080}", "{protocol: SCTP}", "{protocol: UDP}"))
		}
		fields = append(fields, "ports: ["+strings.Join(ports, ", ")+"]")
	}
	return "{" + strings.Join(fields, ", ") + "}"
}

// adminPeer is an AdminNetworkPolicy peer in the released shape or, with
// kep, in the KEP-2091 shape (a policy must not mix them); named reports
// whether the peer allows named ports (only pods have them).
func adminPeer(r *rand.Rand, dir string, kep bool) (peer string, named bool) {
	if kep {
		switch r.Intn(3) {
		case 0:
			return "{namespaces: {" + pickFrom(r, "related: Self", "related: NotSelf", "sameLabels: [team]", "notSameLabels: [env]") + "}}", true
		case 1:
			return "{pods: {namespaces: {" + pickFrom(r, "related: Self", "sameLabels: [team]", "namespaceSelector: "+namespaceSelector(r)) + "}, podSelector: " + podSelector(r) + "}}", true
		}
		return "{namespaces: {namespaceSelector: " + namespaceSelector(r) + "}}", true
	}
	switch r.Intn(7) {
	case 0:
		return "{pods: {namespaceSelector: " + namespaceSelector(r) + ", podSelector: " + podSelector(r) + "}}", true
	case 1:
		if dir == "egress" {
			return "{networks: [" + pickFrom(r, "198.18.0.0/16", "198.18.1.0/24", "fd00::/120", "203.0.113.0/24") + "]}", false
		}
	case 2:
		if dir == "egress" {
			return "{nodes: {matchLabels: {zone: " + pickFrom(r, "a", "b") + "}}}", false
		}
	}
	return "{namespaces: " + namespaceSelector(r) + "}", true
}

func adminPorts(r *rand.Rand, named bool) string {
	n := r.Intn(5)
	if n == 1 && !named {
		n = 0
	}
	switch n {
	case 0:
		return ", ports: [{portNumber: {protocol: TCP, port: 80}}]"
	case 1:
		return ", ports: [{namedPort: " + pickFrom(r, "http", "dns", "metrics") + "}]"
	case 2:
		return ", ports: [{portRange: {protocol: TCP, start: 8000, end: 9000}}, {portNumber: {protocol: UDP, port: 53}}]"
	}
	return ""
}

func adminRules(r *rand.Rand, kep bool, actions ...string) string {
	var out []string
	for d, dir := range []string{"ingress", "egress"} {
		var rules []string
		for k, n := 0, r.Intn(4); k < n; k++ {
			list := []string{"from", "to"}[d]
			name := ""
			if r.Intn(2) == 0 {
				name = fmt.Sprintf("name: r%d, ", k)
			}
			peer, named := adminPeer(r, dir, kep)
			rules = append(rules, "{"+name+"action: "+pickFrom(r, actions...)+", "+list+": ["+peer+"]"+adminPorts(r, named)+"}")
		}
		if len(rules) > 0 {
			out = append(out, dir+": ["+strings.Join(rules, ", ")+"]")
		}
	}
	return strings.Join(out, ", ")
}

func adminSubject(r *rand.Rand) string {
	if r.Intn(3) == 0 {
		return "{pods: {namespaceSelector: " + namespaceSelector(r) + ", podSelector: " + podSelector(r) + "}}"
	}
	return "{namespaces: " + namespaceSelector(r) + "}"
}

func (g *randomGen) adminPolicy(r *rand.Rand, i int) {
	rules := adminRules(r, r.Intn(4) == 0, "Allow", "Deny", "Pass")
	if rules != "" {
		rules = ", " + rules
	}
	g.doc("apiVersion: policy.networking.k8s.io/v1alpha1\nkind: AdminNetworkPolicy\nmetadata: {name: anp-%d}\nspec: {priority: %d, subject: %s%s}",
		i, 1+r.Intn(2), adminSubject(r), rules)
}

func (g *randomGen) baseline(r *rand.Rand) {
	rules := adminRules(r, r.Intn(4) == 0, "Allow", "Deny")
	if rules != "" {
		rules = ", " + rules
	}
	g.doc("apiVersion: policy.networking.k8s.io/v1alpha1\nkind: BaselineAdminNetworkPolicy\nmetadata: {name: default}\nspec: {subject: %s%s}", adminSubject(r), rules)
}

func (g *randomGen) clusterNetworkPolicy(r *rand.Rand) {
	tier := pickFrom(r, "Admin", "Baseline")
	rule := "{action: " + pickFrom(r, "Accept", "Deny", "Pass") + ", from: [{namespaces: " + namespaceSelector(r) + "}]" +
		pickFrom(r, "", ", protocols: [{tcp: {destinationPort: {number: 80}}}]", ", protocols: [{destinationNamedPort: http}]") + "}"
	g.doc("apiVersion: policy.networking.k8s.io/v1alpha2\nkind: ClusterNetworkPolicy\nmetadata: {name: cnp}\nspec: {tier: %s, priority: %d, subject: %s, ingress: [%s]}",
		tier, 1+r.Intn(3), adminSubject(r), rule)
}
