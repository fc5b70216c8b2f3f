package deploy_test

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/netpol/netpol/internal/agent"
	"github.com/netpol/netpol/internal/kubetest"
)

// manifest is one object of one file under deploy/, decoded into its Go
// type (strictly: an unknown or misspelt field is an error), except the
// CRDs, whose types netpol does not import.
type manifest struct {
	file string
	kind string
	name string // namespace/name, or name for a cluster-scoped object
	obj  any
}

// typed gives the Go type of each kind that deploy/ may hold; a new kind
// has to be added here, and to the expectations below.
var typed = map[string]func() any{
	"Namespace":          func() any { return &corev1.Namespace{} },
	"ServiceAccount":     func() any { return &corev1.ServiceAccount{} },
	"ConfigMap":          func() any { return &corev1.ConfigMap{} },
	"ClusterRole":        func() any { return &rbacv1.ClusterRole{} },
	"ClusterRoleBinding": func() any { return &rbacv1.ClusterRoleBinding{} },
	"Role":               func() any { return &rbacv1.Role{} },
	"RoleBinding":        func() any { return &rbacv1.RoleBinding{} },
	"DaemonSet":          func() any { return &appsv1.DaemonSet{} },
	// netpol does not import the apiextensions types; TestCRDsAreUpstream
	// checks these files byte for byte instead.
	"CustomResourceDefinition": func() any { return &map[string]any{} },
}

// readManifests decodes every document of every YAML file under deploy/
// but the kustomization files.
func readManifests(t *testing.T) []manifest {
	t.Helper()
	var ms []manifest
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !isYAML(p) || path.Base(p) == "kustomization.yaml" {
			return err
		}
		docs, err := documents(p)
		if err != nil {
			return err
		}
		for i, doc := range docs {
			m, err := decode(doc)
			if err != nil {
				return fmt.Errorf("%s: document %d: %w", p, i, err)
			}
			m.file = filepath.ToSlash(p)
			ms = append(ms, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

func isYAML(p string) bool {
	return strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")
}

// documents splits a YAML file at its "---" lines, dropping empty documents.
func documents(p string) ([][]byte, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

func decode(doc []byte) (manifest, error) {
	var head struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &head); err != nil {
		return manifest{}, err
	}
	newObj, ok := typed[head.Kind]
	if !ok {
		return manifest{}, fmt.Errorf("kind %q is not one deploy_test.go knows", head.Kind)
	}
	obj := newObj()
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		return manifest{}, fmt.Errorf("%s %s: %w", head.Kind, head.Metadata.Name, err)
	}
	name := head.Metadata.Name
	if head.Metadata.Namespace != "" {
		name = head.Metadata.Namespace + "/" + name
	}
	return manifest{kind: head.Kind, name: name, obj: obj}, nil
}

// one returns the only object of a kind, typed.
func one[T any](t *testing.T, ms []manifest, kind string) T {
	t.Helper()
	var found []T
	for _, m := range ms {
		if m.kind == kind {
			found = append(found, m.obj.(T))
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects of kind %s, want 1", len(found), kind)
	}
	return found[0]
}

// equalLines reports got and want, one item a line, unless they are equal.
func equalLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s\n  %s\nwant\n  %s", what, strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestManifests decodes every manifest and checks that deploy/ holds these
// objects, each once, and that kustomization.yaml reaches every file, so
// that kubectl apply -k deploy/ installs all of them.
func TestManifests(t *testing.T) {
	ms := readManifests(t)
	var got []string
	for _, m := range ms {
		got = append(got, m.file+": "+m.kind+" "+m.name)
	}
	slices.Sort(got)
	want := []string{
		"clusterrole.yaml: ClusterRole netpol-agent",
		"clusterrolebinding.yaml: ClusterRoleBinding netpol-agent",
		"configmap.yaml: ConfigMap netpol-system/netpol-agent",
		"crds/policy.networking.k8s.io_adminnetworkpolicies.yaml: CustomResourceDefinition adminnetworkpolicies.policy.networking.k8s.io",
		"crds/policy.networking.k8s.io_baselineadminnetworkpolicies.yaml: CustomResourceDefinition baselineadminnetworkpolicies.policy.networking.k8s.io",
		"crds/policy.networking.k8s.io_clusternetworkpolicies.yaml: CustomResourceDefinition clusternetworkpolicies.policy.networking.k8s.io",
		"daemonset.yaml: DaemonSet netpol-system/netpol-agent",
		"dns-role.yaml: Role kube-system/netpol-agent-cluster-dns",
		"dns-role.yaml: RoleBinding kube-system/netpol-agent-cluster-dns",
		"namespace.yaml: Namespace netpol-system",
		"serviceaccount.yaml: ServiceAccount netpol-system/netpol-agent",
	}
	equalLines(t, "manifests", got, want)

	reached, err := kustomized(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if !reached[m.file] {
			t.Errorf("%s is in no kustomization.yaml that deploy/kustomization.yaml reaches", m.file)
		}
	}
}

// kustomized returns the files that dir/kustomization.yaml includes, through
// the directories it lists too.
func kustomized(dir string) (map[string]bool, error) {
	resources, err := kubetest.KustomizationResources(dir)
	if err != nil {
		return nil, err
	}
	files := map[string]bool{}
	for _, p := range resources {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s/kustomization.yaml: %w", dir, err)
		}
		if !fi.IsDir() {
			files[p] = true
			continue
		}
		sub, err := kustomized(p)
		if err != nil {
			return nil, err
		}
		for f := range sub {
			files[f] = true
		}
	}
	return files, nil
}

// TestClusterRoleLeastPrivilege pins everything the agent may do. Adding a
// permission means adding it here, on purpose.
func TestClusterRoleLeastPrivilege(t *testing.T) {
	role := one[*rbacv1.ClusterRole](t, readManifests(t), "ClusterRole")
	var got []string
	for i, r := range role.Rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("rules[%d]: resourceNames and nonResourceURLs are not expected here", i)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					got = append(got, fmt.Sprintf("%s %s %s", cmp.Or(g, "core"), res, v))
				}
			}
		}
	}
	if role.AggregationRule != nil {
		t.Error("aggregationRule would let other roles add permissions")
	}
	slices.Sort(got)
	want := []string{
		"core events create",
		"core events patch",
		"core namespaces list",
		"core namespaces watch",
		"core nodes list",
		"core nodes watch",
		"core pods list",
		"core pods watch",
		"events.k8s.io events create",
		"events.k8s.io events patch",
		"networking.k8s.io networkpolicies list",
		"networking.k8s.io networkpolicies watch",
		"policy.networking.k8s.io adminnetworkpolicies list",
		"policy.networking.k8s.io adminnetworkpolicies watch",
		"policy.networking.k8s.io adminnetworkpolicies/status get",
		"policy.networking.k8s.io adminnetworkpolicies/status patch",
		"policy.networking.k8s.io baselineadminnetworkpolicies list",
		"policy.networking.k8s.io baselineadminnetworkpolicies watch",
		"policy.networking.k8s.io baselineadminnetworkpolicies/status get",
		"policy.networking.k8s.io baselineadminnetworkpolicies/status patch",
		"policy.networking.k8s.io clusternetworkpolicies list",
		"policy.networking.k8s.io clusternetworkpolicies watch",
		"policy.networking.k8s.io clusternetworkpolicies/status get",
		"policy.networking.k8s.io clusternetworkpolicies/status patch",
	}
	equalLines(t, "ClusterRole grants", got, want)
}

// TestClusterDNSRole pins what the agent may read in kube-system: the one
// Service it finds the cluster DNS by, bound to its service account.
func TestClusterDNSRole(t *testing.T) {
	ms := readManifests(t)
	role := one[*rbacv1.Role](t, ms, "Role")
	rb := one[*rbacv1.RoleBinding](t, ms, "RoleBinding")
	sa := one[*corev1.ServiceAccount](t, ms, "ServiceAccount")
	want := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"services"}, ResourceNames: []string{"kube-dns"}, Verbs: []string{"get"}}}
	if role.Namespace != "kube-system" || !reflect.DeepEqual(role.Rules, want) {
		t.Errorf("Role %s/%s grants %+v, want in kube-system only %+v", role.Namespace, role.Name, role.Rules, want)
	}
	wantSubject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}}
	if rb.Namespace != role.Namespace || rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name || !reflect.DeepEqual(rb.Subjects, wantSubject) {
		t.Errorf("RoleBinding %s/%s: roleRef %+v subjects %+v, want Role %s for %+v", rb.Namespace, rb.Name, rb.RoleRef, rb.Subjects, role.Name, wantSubject)
	}
}

// TestDaemonSetWiring checks the references between the manifests that
// the API server cannot check, because they fail only when a pod starts:
// ConfigMap keys, flag variables, the probe port, the service account.
func TestDaemonSetWiring(t *testing.T) {
	ms := readManifests(t)
	ds := one[*appsv1.DaemonSet](t, ms, "DaemonSet")
	cm := one[*corev1.ConfigMap](t, ms, "ConfigMap")
	sa := one[*corev1.ServiceAccount](t, ms, "ServiceAccount")
	crb := one[*rbacv1.ClusterRoleBinding](t, ms, "ClusterRoleBinding")
	role := one[*rbacv1.ClusterRole](t, ms, "ClusterRole")
	pod := ds.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]

	// Every $(VAR) of the args is an env var of the container, and every
	// ConfigMap key it takes exists.
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
		if ref := e.ValueFrom; ref != nil && ref.ConfigMapKeyRef != nil {
			if ref.ConfigMapKeyRef.Name != cm.Name {
				t.Errorf("env %s: ConfigMap %s, want %s", e.Name, ref.ConfigMapKeyRef.Name, cm.Name)
			}
			if _, ok := cm.Data[ref.ConfigMapKeyRef.Key]; !ok {
				t.Errorf("env %s: ConfigMap %s has no key %s", e.Name, cm.Name, ref.ConfigMapKeyRef.Key)
			}
		}
	}
	ref := regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)
	for _, a := range c.Args {
		for _, m := range ref.FindAllStringSubmatch(a, -1) {
			if _, ok := env[m[1]]; !ok {
				t.Errorf("arg %q: no env var %s, so Kubernetes passes it unexpanded", a, m[1])
			}
		}
	}
	wantArgs := []string{"agent", "--in-cluster", "--interval=$(NETPOL_INTERVAL)", "--listen=$(NETPOL_LISTEN)", "-v=$(NETPOL_VERBOSITY)"}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args = %q, want %q", c.Args, wantArgs)
	}
	if n := env["NODE_NAME"].ValueFrom; n == nil || n.FieldRef == nil || n.FieldRef.FieldPath != "spec.nodeName" {
		t.Errorf("NODE_NAME = %+v, want the downward API's spec.nodeName", env["NODE_NAME"])
	}

	// The probes reach the port the agent listens on.
	host, port, err := net.SplitHostPort(cm.Data["listen"])
	if err != nil {
		t.Fatalf("ConfigMap listen: %v", err)
	}
	if len(c.Ports) != 1 || strconv.Itoa(int(c.Ports[0].ContainerPort)) != port {
		t.Errorf("ports = %+v, want only the listen port %s", c.Ports, port)
	}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s probe: %+v, want an HTTP GET", name, p)
			continue
		}
		if len(c.Ports) == 1 && p.HTTPGet.Port.String() != c.Ports[0].Name {
			t.Errorf("%s probe port %s, want %s", name, p.HTTPGet.Port.String(), c.Ports[0].Name)
		}
		// The agent binds the listen address only: a probe to the pod's
		// (the node's) address would find nothing there.
		if p.HTTPGet.Host != host {
			t.Errorf("%s probe host %q, want the listen address %q", name, p.HTTPGet.Host, host)
		}
	}

	// The pod runs as the service account the role is bound to.
	if pod.ServiceAccountName != sa.Name {
		t.Errorf("serviceAccountName %s, want %s", pod.ServiceAccountName, sa.Name)
	}
	wantSubject := rbacv1.Subject{Kind: "ServiceAccount", Name: sa.Name, Namespace: sa.Namespace}
	if !slices.Equal(crb.Subjects, []rbacv1.Subject{wantSubject}) {
		t.Errorf("ClusterRoleBinding subjects %+v, want %+v", crb.Subjects, wantSubject)
	}
	if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != role.Name {
		t.Errorf("ClusterRoleBinding roleRef %+v, want ClusterRole %s", crb.RoleRef, role.Name)
	}

	// Privileges: the node's network, NET_ADMIN, and NET_BIND_SERVICE for
	// the DNS proxy's answers, sent from the DNS server's port 53 (a real
	// cluster found it missing: every answer failed with "bind: permission
	// denied"); nothing else.
	if !pod.HostNetwork || pod.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("hostNetwork %v, dnsPolicy %s; want true, ClusterFirstWithHostNet", pod.HostNetwork, pod.DNSPolicy)
	}
	if pod.HostPID || pod.HostIPC || len(pod.Volumes) > 0 {
		t.Errorf("hostPID %v, hostIPC %v, volumes %d; want none", pod.HostPID, pod.HostIPC, len(pod.Volumes))
	}
	sc := c.SecurityContext
	if sc == nil || sc.Capabilities == nil {
		t.Fatal("no securityContext.capabilities")
	}
	if add, drop := sc.Capabilities.Add, sc.Capabilities.Drop; !slices.Equal(add, []corev1.Capability{"NET_ADMIN", "NET_BIND_SERVICE"}) || !slices.Equal(drop, []corev1.Capability{"ALL"}) {
		t.Errorf("capabilities add %v drop %v, want add [NET_ADMIN NET_BIND_SERVICE] drop [ALL]", add, drop)
	}
	if sc.Privileged != nil && *sc.Privileged {
		t.Error("privileged: the capabilities above are all the agent needs")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error("allowPrivilegeEscalation is not false")
	}
}

// TestCRDsAreUpstream checks that deploy/crds holds, byte for byte, the
// upstream CRD manifests that the test API server (internal/kubetest)
// installs, so that what is deployed is what is tested.
func TestCRDsAreUpstream(t *testing.T) {
	upstream, err := kubetest.CRDManifests()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range upstream {
		name := filepath.Base(u)
		names = append(names, name)
		want, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join("crds", name))
		if err != nil {
			t.Errorf("%v (copy it from %s)", err, u)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("crds/%s differs from %s", name, u)
		}
	}
	copies, err := filepath.Glob(filepath.Join("crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range copies {
		if name := filepath.Base(c); name != "kustomization.yaml" && !slices.Contains(names, name) {
			t.Errorf("crds/%s is not one kubetest installs", name)
		}
	}
}

// TestImagePinned checks that the agent runs a pinned tag, the same in the
// DaemonSet and in kustomization.yaml, and never pulls it when the node has
// it: under :latest (or no tag) the kubelet pulls on every start, so an
// image loaded on the nodes ahead of time is never used.
func TestImagePinned(t *testing.T) {
	ds := one[*appsv1.DaemonSet](t, readManifests(t), "DaemonSet")
	c := ds.Spec.Template.Spec.Containers[0]
	repo, tag, ok := strings.Cut(c.Image, ":")
	if !ok || tag == "" || tag == "latest" || strings.Contains(tag, "/") {
		t.Errorf("DaemonSet image %q: want a pinned tag", c.Image)
	}
	if c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("DaemonSet imagePullPolicy %q, want %q", c.ImagePullPolicy, corev1.PullIfNotPresent)
	}
	b, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Images []struct{ Name, NewTag string } `json:"images"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	if len(k.Images) != 1 || k.Images[0].Name != repo || k.Images[0].NewTag != tag {
		t.Errorf("kustomization.yaml images %+v, want one %s with newTag %s as the DaemonSet has", k.Images, repo, tag)
	}
}

// TestMemorySizing: the DaemonSet's memory follows the sizing rule of
// README.md (agent.MemoryLimit, agent.GoMemLimit) for the 15,000 pods it
// is for: requested as much as its limit, and a Go heap limit below it by
// what the kernel's nftables objects and nft take.
func TestMemorySizing(t *testing.T) {
	ds := one[*appsv1.DaemonSet](t, readManifests(t), "DaemonSet")
	c := ds.Spec.Template.Spec.Containers[0]
	limit, request := c.Resources.Limits.Memory(), c.Resources.Requests.Memory()
	if limit.IsZero() || !request.Equal(*limit) {
		t.Errorf("memory request %s, limit %s: want a limit, and a request equal to it", request, limit)
	}
	var goMemLimit string
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" {
			goMemLimit = e.Value
		}
	}
	soft, err := resource.ParseQuantity(strings.TrimSuffix(goMemLimit, "B")) // Go spells MiB what Kubernetes spells Mi
	if err != nil {
		t.Fatalf("GOMEMLIMIT %q: %v", goMemLimit, err)
	}
	// README.md: "256Mi and GOMEMLIMIT 200MiB: clusters of up to 15,000
	// pods".
	const pods = 15000
	if limit.Value() < agent.MemoryLimit(pods) {
		t.Errorf("memory limit %s, below the rule's %d MiB for %d pods", limit, agent.MemoryLimit(pods)>>20, pods)
	}
	if want := agent.GoMemLimit(limit.Value(), pods); soft.Value() != want {
		t.Errorf("GOMEMLIMIT %s, want the rule's %dMiB for a %s limit and %d pods", goMemLimit, want>>20, limit, pods)
	}
}
