//go:build realcluster

// The tests in this file prove what only a real cluster shows: netpol as
// deploy/ runs it, next to a kubelet, containerd, the CNI bridge,
// kube-proxy and CoreDNS (hack/cluster). They need that cluster, so they
// build only with the tag realcluster, and hack/cluster/cluster.sh test runs
// them where its API server is reachable:
//
//	hack/cluster/cluster.sh run go test -tags realcluster -run TestRealCluster ./deploy/
//
// KUBECONFIG names the cluster. Every probe is a real connection between
// real pods, made with agnhost (the image upstream's suites use).

package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/yaml"

	"github.com/netpol/netpol/internal/status"
)

// agnhost is the probe image; hack/cluster loads it on every node.
const agnhost = "registry.k8s.io/e2e-test-images/agnhost:2.63.0"

// The outside host of hack/cluster/cluster.sh and its names in CoreDNS.
const (
	outsideAllowed     = "allowed.outside.test"
	outsideAllowedIP   = "198.19.0.250"
	outsideDenied      = "denied.outside.test"
	outsideDeniedIP    = "198.19.0.251"
	outsideAllowedIP6  = "fd00:19::250"
	outsideDeniedIP6   = "fd00:19::251"
	outsidePort        = 8080
	agentNamespace     = "netpol-system"
	agentLabelSelector = "app.kubernetes.io/name=netpol,app.kubernetes.io/component=agent"
)

type cluster struct {
	cfg *rest.Config
	cs  kubernetes.Interface
	dyn dynamic.Interface
}

func connect(t *testing.T) *cluster {
	t.Helper()
	path := os.Getenv("KUBECONFIG")
	if path == "" {
		t.Fatal("KUBECONFIG is not set: run through hack/cluster/cluster.sh run")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{cfg: cfg, cs: kubernetes.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg)}
}

// namespace makes a namespace of the test's own, deleted when it ends.
func (c *cluster) namespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns, err := c.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "realcluster-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// pod describes one agnhost pod.
type pod struct {
	name   string
	labels map[string]string
	node   string   // empty: the scheduler's choice
	args   []string // agnhost's arguments; default: netexec on 8080
}

// run creates the pod and waits until it is ready.
func (c *cluster) run(t *testing.T, ns string, p pod) *corev1.Pod {
	t.Helper()
	created := c.create(t, ns, p)
	return c.waitReady(t, created)
}

func (c *cluster) create(t *testing.T, ns string, p pod) *corev1.Pod {
	t.Helper()
	args := p.args
	if args == nil {
		args = []string{"netexec", "--http-port=8080", "--udp-port=8081"}
	}
	zero := int64(0)
	obj := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Labels: p.labels},
		Spec: corev1.PodSpec{
			NodeName:                      p.node,
			TerminationGracePeriodSeconds: &zero,
			Containers: []corev1.Container{{
				Name:            "c",
				Image:           agnhost,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Args:            args,
			}},
		},
	}
	created, err := c.cs.CoreV1().Pods(ns).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created
}

func (c *cluster) waitReady(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	var got *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true,
		func(ctx context.Context) (bool, error) {
			var err error
			got, err = c.cs.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
	if err != nil {
		t.Fatalf("pod %s/%s not ready: %v (phase %s)", p.Namespace, p.Name, err, got.Status.Phase)
	}
	return got
}

// exec runs a command in the pod's container and returns its stdout and
// stderr.
func (c *cluster) exec(ctx context.Context, p *corev1.Pod, cmd ...string) (string, string, error) {
	req := c.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(p.Namespace).Name(p.Name).
		SubResource("exec").VersionedParams(&corev1.PodExecOptions{
		Container: p.Spec.Containers[0].Name,
		Command:   cmd,
		Stdout:    true,
		Stderr:    true,
	}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(c.cfg, "POST", req.URL())
	if err != nil {
		return "", "", err
	}
	var stdout, stderr bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), stderr.String(), err
}

// connects reports whether a TCP connection from the pod to host:port
// opens within a second. An error of the probe itself fails the test: only
// a refused or timed-out connection counts as "no".
func (c *cluster) connects(t *testing.T, from *corev1.Pod, host string, port int) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, stderr, err := c.exec(ctx, from, "/agnhost", "connect", "--timeout=1s", "--protocol=tcp",
		fmt.Sprintf("%s:%d", host, port))
	switch {
	case err == nil && stderr == "":
		return true
	case strings.Contains(stderr, "TIMEOUT"), strings.Contains(stderr, "REFUSED"),
		strings.Contains(stderr, "no route to host"):
		return false
	default:
		t.Fatalf("probe %s/%s -> %s:%d: %v: %s", from.Namespace, from.Name, host, port, err, stderr)
		return false
	}
}

// hostname asks netexec at host:port for its hostname over HTTP from the
// pod; "" when the connection does not open within a second.
func (c *cluster) hostname(t *testing.T, from *corev1.Pod, host string, port int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	script := fmt.Sprintf(`timeout 1 bash -c 'exec 3<>/dev/tcp/%s/%d && printf "GET /hostname HTTP/1.0\r\n\r\n" >&3 && cat <&3' | tail -n 1`, host, port)
	stdout, _, err := c.exec(ctx, from, "bash", "-c", script)
	if err != nil && ctx.Err() != nil {
		t.Fatalf("probe %s/%s -> %s: %v", from.Namespace, from.Name, host, err)
	}
	return strings.TrimSpace(stdout)
}

// eventually polls cond every 200 ms for up to 30 s: how long a change may
// take to reach every node.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *cluster) nodes(t *testing.T) []string {
	t.Helper()
	list, err := c.cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	if len(names) < 2 {
		t.Fatalf("%d nodes, the tests need 2", len(names))
	}
	return names
}

// TestRealClusterServiceBackends: a Service with one backend the policy
// admits and one it does not, reached through kube-proxy's DNAT from a
// client on another node. Every answer must come from the admitted
// backend, and some connections must fail: those kube-proxy sent to the
// other one. netpol decides after the DNAT, on the backend's address.
func TestRealClusterServiceBackends(t *testing.T) {
	c := connect(t)
	nodes := c.nodes(t)
	ns := c.namespace(t)
	ctx := context.Background()

	c.run(t, ns, pod{name: "allowed", labels: map[string]string{"app": "web", "admit": "yes"}, node: nodes[0]})
	c.run(t, ns, pod{name: "denied", labels: map[string]string{"app": "web", "admit": "no"}, node: nodes[0]})
	client := c.run(t, ns, pod{name: "client", labels: map[string]string{"app": "client"}, node: nodes[1]})
	svc, err := c.cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The client may reach the admitted backend; the other one is isolated
	// by a policy without rules.
	for name, np := range map[string]networkingv1.NetworkPolicySpec{
		"admit-one": {
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"admit": "yes"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{
					PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "client"}},
				}},
			}},
		},
		"isolate-other": {
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"admit": "no"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	} {
		_, err := c.cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, &networkingv1.NetworkPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       np,
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}

	// The direct paths first, so that the Service probes below start once
	// both nodes have the policies.
	eventually(t, "client reaches the admitted backend directly", func() bool {
		return c.hostname(t, client, podIP(t, c, ns, "allowed"), 8080) == "allowed"
	})
	eventually(t, "client is refused by the other backend directly", func() bool {
		return c.hostname(t, client, podIP(t, c, ns, "denied"), 8080) == ""
	})

	answers := map[string]int{}
	for i := 0; i < 24; i++ {
		answers[c.hostname(t, client, svc.Spec.ClusterIP, 80)]++
	}
	t.Logf("24 connections to %s: %v (\"\" = no connection)", svc.Spec.ClusterIP, answers)
	for h := range answers {
		if h != "allowed" && h != "" {
			t.Errorf("an answer from %q through the Service: only \"allowed\" is admitted", h)
		}
	}
	if answers["allowed"] == 0 {
		t.Error("no connection through the Service reached the admitted backend")
	}
	if answers[""] == 0 {
		t.Error("every connection through the Service opened: kube-proxy never chose the denied backend, or netpol let it through")
	}
}

func podIP(t *testing.T, c *cluster, ns, name string) string {
	t.Helper()
	p, err := c.cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p.Status.PodIP
}

// TestRealClusterNewPodDeniedUntilProgrammed: in a namespace whose
// policies isolate every pod, a new pod must never answer a connection it
// does not admit, not even in the moment between the CNI giving it an
// address and its node's agent programming it. A client probes the new
// pod's address from the moment the address is known.
func TestRealClusterNewPodDeniedUntilProgrammed(t *testing.T) {
	c := connect(t)
	nodes := c.nodes(t)
	ns := c.namespace(t)
	ctx := context.Background()
	_, err := c.cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-ingress"},
		Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	client := c.run(t, ns, pod{name: "client", node: nodes[1]})
	// A control: an open port on another node answers, so a "no" below is
	// the policy's and not a broken probe.
	open := c.run(t, c.namespace(t), pod{name: "open", node: nodes[0]})
	if !c.connects(t, client, open.Status.PodIP, 8080) {
		t.Fatal("the client cannot reach a pod no policy isolates: the probe is broken")
	}

	for round := 0; round < 3; round++ {
		name := "new-" + strconv.Itoa(round)
		p := c.create(t, ns, pod{name: name, node: nodes[0]})
		var ip string
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := c.cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			ip = got.Status.PodIP
			return ip != "", nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// From the first moment the address is known until well after the
		// server listens: one exec, a tight loop in the client.
		ctx8, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, stderr, err := c.exec(ctx8, client, "bash", "-c", fmt.Sprintf(
			`n=0; end=$((SECONDS+8)); while ((SECONDS < end)); do n=$((n+1)); `+
				`if timeout 0.2 bash -c 'exec 3<>/dev/tcp/%s/8080' 2>/dev/null; then echo "OPEN at probe $n"; fi; done; echo "probes $n"`, ip))
		cancel()
		if err != nil {
			t.Fatalf("round %d: probe loop: %v: %s", round, err, stderr)
		}
		if strings.Contains(out, "OPEN") {
			t.Fatalf("round %d: new pod %s (%s) answered: isolated pods must never answer\n%s", round, name, ip, out)
		}
		probes := strings.TrimSpace(out[strings.LastIndex(out, "probes "):])
		c.waitReady(t, p)
		if c.connects(t, client, ip, 8080) {
			t.Fatalf("round %d: new pod %s answered after it was ready", round, name)
		}
		t.Logf("round %d: %s to %s over 8 s from the moment it had an address, none answered", round, probes, ip)
	}
}

// TestRealClusterDomainNames: a ClusterNetworkPolicy lets pods of a
// namespace reach allowed.outside.test by name and denies every other
// address outside the cluster. The names come from the real CoreDNS
// through the real kube-dns Service; the agent learns the allowed one from
// the answer its pod receives.
func TestRealClusterDomainNames(t *testing.T) {
	c := connect(t)
	ns := c.namespace(t)
	client := c.run(t, ns, pod{name: "client"})
	// Before the policy: both outside addresses answer.
	if !c.connects(t, client, outsideAllowedIP, outsidePort) || !c.connects(t, client, outsideDeniedIP, outsidePort) {
		t.Fatal("the outside host does not answer without a policy: the probe is broken")
	}

	name := "realcluster-domains-" + ns
	c.apply(t, adminPolicy(name, ns, 10, fmt.Sprintf(`
  egress:
  - name: allowed-by-name
    action: Accept
    to: [{domainNames: [%s]}]
  - name: nothing-else-outside
    action: Deny
    to: [{networks: [198.19.0.0/24, "fd00:19::/64"]}]
`, outsideAllowed)))

	// The deny reaches the node first; then a lookup of the allowed name
	// teaches its address.
	eventually(t, "the deny applies to an address no name taught", func() bool {
		return !c.connects(t, client, outsideDeniedIP, outsidePort)
	})
	eventually(t, "the allowed name, once looked up, connects", func() bool {
		return c.connects(t, client, outsideAllowed, outsidePort)
	})
	if c.connects(t, client, outsideDenied, outsidePort) {
		t.Error("denied.outside.test connected: its answer must teach nothing")
	}
	if c.connects(t, client, outsideDeniedIP, outsidePort) {
		t.Error("denied.outside.test's address connected after the allowed name was learned")
	}
	// In a dual-stack cluster a lookup teaches the IPv6 address too. The
	// connect by name above proved an A answer taught its address: it
	// connected over IPv4, which a resolver does with the A answer alone
	// when the AAAA one is late or lost. So each try here looks the name
	// up again (connecting by name) and then connects to the IPv6 address
	// alone. A single try failed in two of four full CI runs (sessions 14
	// and 15), after the e2e and conformance suites, and never in seven
	// runs alone on a fresh cluster; the cause is not found (see the
	// session 15 note), and the tries it takes are logged to keep it in
	// sight.
	if len(client.Status.PodIPs) == 2 {
		tries := 0
		eventually(t, "allowed.outside.test's IPv6 address connects after a lookup", func() bool {
			tries++
			c.connects(t, client, outsideAllowed, outsidePort)
			return c.connects(t, client, "["+outsideAllowedIP6+"]", outsidePort)
		})
		t.Logf("allowed.outside.test's IPv6 address connected at try %d (a lookup each)", tries)
		if c.connects(t, client, "["+outsideDeniedIP6+"]", outsidePort) {
			t.Error("denied.outside.test's IPv6 address connected")
		}
	}
}

// adminPolicy is an Admin-tier ClusterNetworkPolicy whose subject is the
// namespace ns, with rules: YAML indented as spec's fields.
func adminPolicy(name, ns string, priority int, rules string) string {
	return fmt.Sprintf(`
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: %s}
spec:
  tier: Admin
  priority: %d
  subject:
    namespaces:
      matchLabels: {kubernetes.io/metadata.name: %s}
`, name, priority, ns) + strings.TrimPrefix(rules, "\n")
}

// apply creates an object from YAML with the dynamic client, deleted when
// the test ends.
func (c *cluster) apply(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatal(err)
	}
	gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
	if err != nil {
		t.Fatal(err)
	}
	// The kinds this file applies are all policies.
	plural := strings.TrimSuffix(strings.ToLower(obj.GetKind()), "y") + "ies"
	res := c.dyn.Resource(gv.WithResource(plural))
	created, err := res.Create(context.Background(), &obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = res.Delete(context.Background(), created.GetName(), metav1.DeleteOptions{})
	})
	return created
}

// TestRealClusterAdminPolicyStatus: the nodes' agents, with exactly the
// permissions deploy/ grants, write Accepted and Programmed on a valid
// ClusterNetworkPolicy once for the fleet, under the shared field manager
// (status.SharedFieldManager), and no node reports it not programmed or
// keeps a field manager of its own on it (one per node would send the
// policy, growing with the fleet, to every node on every write).
func TestRealClusterAdminPolicyStatus(t *testing.T) {
	c := connect(t)
	ns := c.namespace(t)
	gvr := schema.GroupVersionResource{Group: "policy.networking.k8s.io", Version: "v1alpha2", Resource: "clusternetworkpolicies"}
	name := "realcluster-status-" + ns
	c.apply(t, adminPolicy(name, ns, 20, `
  ingress:
  - name: deny-all
    action: Deny
    from: [{namespaces: {}}]
`))

	var conds []metav1.Condition
	var managers []string
	eventually(t, "Accepted and Programmed on "+name+" under "+status.SharedFieldManager, func() bool {
		got, err := c.dyn.Resource(gvr).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds = conditions(t, got)
		managers = managers[:0]
		for _, mf := range got.GetManagedFields() {
			managers = append(managers, mf.Manager)
		}
		acc, prog := meta.FindStatusCondition(conds, "Accepted"), meta.FindStatusCondition(conds, "Programmed")
		return slices.Contains(managers, status.SharedFieldManager) &&
			acc != nil && acc.Status == metav1.ConditionTrue && prog != nil && prog.Status == metav1.ConditionTrue
	})
	for _, cond := range conds {
		if strings.HasPrefix(cond.Type, "netpol.io/NotProgrammed.") {
			t.Errorf("condition %s: %s", cond.Type, cond.Message)
		}
	}
	for _, m := range managers {
		if strings.HasPrefix(m, status.FieldManager("")) {
			t.Errorf("field manager %s on %s: a node's own, with no node failing", m, name)
		}
	}
}

func conditions(t *testing.T, obj *unstructured.Unstructured) []metav1.Condition {
	t.Helper()
	raw, _, err := unstructured.NestedSlice(obj.Object, "status", "conditions")
	if err != nil {
		t.Fatal(err)
	}
	b, err := yaml.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	var conds []metav1.Condition
	if err := yaml.Unmarshal(b, &conds); err != nil {
		t.Fatal(err)
	}
	return conds
}

// TestRealClusterAgentMemory: the agents never restarted and their peak
// memory, read from their containers' cgroups on the nodes, stayed under
// the DaemonSet's limit. Run last, after the other tests made them work.
func TestRealClusterAgentMemory(t *testing.T) {
	c := connect(t)
	pods, err := c.cs.CoreV1().Pods(agentNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: agentLabelSelector})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) < 2 {
		t.Fatalf("%d agents, want one per node", len(pods.Items))
	}
	for _, p := range pods.Items {
		limit := p.Spec.Containers[0].Resources.Limits.Memory().Value()
		st := p.Status.ContainerStatuses[0]
		if st.RestartCount != 0 {
			t.Errorf("agent %s restarted %d times (last: %+v)", p.Name, st.RestartCount, st.LastTerminationState.Terminated)
		}
		peak, err := peakMemory(string(p.UID), strings.TrimPrefix(st.ContainerID, "containerd://"))
		if err != nil {
			t.Errorf("agent %s: %v", p.Name, err)
			continue
		}
		t.Logf("agent %s on %s: peak %.1f MiB of a %.0f MiB limit", p.Name, p.Spec.NodeName, float64(peak)/(1<<20), float64(limit)/(1<<20))
		if peak >= limit {
			t.Errorf("agent %s: peak %d bytes, limit %d", p.Name, peak, limit)
		}
	}
}

// peakMemory finds the container's memory cgroup (v1: max_usage_in_bytes;
// v2: memory.peak) by the pod's UID and the container's ID.
func peakMemory(uid, containerID string) (int64, error) {
	var found []string
	for _, root := range []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup"} {
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			// cgroupfs names the pod's directory pod<UID>; systemd, with _.
			if filepath.Base(p) == containerID && (strings.Contains(p, uid) || strings.Contains(p, strings.ReplaceAll(uid, "-", "_"))) {
				found = append(found, p)
				return filepath.SkipDir
			}
			return nil
		})
		if len(found) > 0 {
			break
		}
	}
	for _, dir := range found {
		for _, f := range []string{"memory.max_usage_in_bytes", "memory.peak"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err == nil {
				return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			}
		}
	}
	return 0, fmt.Errorf("no memory cgroup for container %s", containerID)
}

// rolloutTag is the second tag hack/cluster/cluster.sh loads the netpol
// image under: a new agent image for the DaemonSet to roll out to.
const rolloutTag = "rollout"

// maxAllowedGap is the longest an allowed flow may fail in a row while the
// agents are replaced (deploy/README.md states it): the old agent leaves
// its rules in the kernel and the new one takes the table over in one
// transaction, so an allowed flow should not notice at all; the bound
// leaves room for a probe lost to a busy two-core machine.
const maxAllowedGap = 2 * time.Second

// TestRealClusterRollout replaces every agent with a new image, one node
// at a time as the DaemonSet's update strategy does, while a client probes
// an allowed and a denied server on the other node without pause. No
// denied probe may ever connect, and the allowed one may fail for at most
// maxAllowedGap in a row.
func TestRealClusterRollout(t *testing.T) {
	c := connect(t)
	nodes := c.nodes(t)
	ns := c.namespace(t)
	ctx := context.Background()
	open := c.run(t, ns, pod{name: "open", labels: map[string]string{"role": "open"}, node: nodes[0]})
	closed := c.run(t, ns, pod{name: "closed", labels: map[string]string{"role": "closed"}, node: nodes[0]})
	client := c.run(t, ns, pod{name: "client", node: nodes[1]})
	_, err := c.cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "isolate-closed"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"role": "closed"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the closed server is isolated", func() bool {
		return !c.connects(t, client, closed.Status.PodIP, 8080)
	})
	if !c.connects(t, client, open.Status.PodIP, 8080) {
		t.Fatal("the open server does not answer before the rollout: the probe is broken")
	}

	// The prober: one exec, a loop of both probes with a timestamp each.
	const probeFor = 90 // seconds
	type probeResult struct {
		out, stderr string
		err         error
	}
	done := make(chan probeResult, 1)
	go func() {
		pctx, cancel := context.WithTimeout(ctx, (probeFor+30)*time.Second)
		defer cancel()
		script := fmt.Sprintf(`end=$((SECONDS+%d)); while ((SECONDS < end)); do `+
			`a=0; d=0; now=$(date +%%s%%N); `+
			`timeout 0.5 bash -c 'exec 3<>/dev/tcp/%s/8080' 2>/dev/null && a=1; `+
			`timeout 0.5 bash -c 'exec 3<>/dev/tcp/%s/8080' 2>/dev/null && d=1; `+
			`echo "$now $a $d"; done`, probeFor, open.Status.PodIP, closed.Status.PodIP)
		out, stderr, err := c.exec(pctx, client, "bash", "-c", script)
		done <- probeResult{out, stderr, err}
	}()

	// The rollout, a few seconds into the probing.
	time.Sleep(5 * time.Second)
	ds, err := c.cs.AppsV1().DaemonSets(agentNamespace).Get(ctx, "netpol-agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	oldImage := ds.Spec.Template.Spec.Containers[0].Image
	repo, _, _ := strings.Cut(oldImage, ":")
	setImage := func(image string) {
		t.Helper()
		ds, err := c.cs.AppsV1().DaemonSets(agentNamespace).Get(ctx, "netpol-agent", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ds.Spec.Template.Spec.Containers[0].Image = image
		if _, err := c.cs.AppsV1().DaemonSets(agentNamespace).Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		setImage(oldImage)
		c.waitRolledOut(t)
	})
	start := time.Now()
	setImage(repo + ":" + rolloutTag)
	c.waitRolledOut(t)
	took := time.Since(start)

	r := <-done
	if r.err != nil {
		t.Fatalf("prober: %v: %s", r.err, r.stderr)
	}
	var probes, deniedOpened int
	var gap, worstGap time.Duration
	var failSince int64
	for _, line := range strings.Split(strings.TrimSpace(r.out), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("prober line %q", line)
		}
		now, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatalf("prober line %q: %v", line, err)
		}
		probes++
		if f[2] == "1" {
			deniedOpened++
		}
		if f[1] == "0" {
			if failSince == 0 {
				failSince = now
			}
			gap = time.Duration(now - failSince)
		} else {
			failSince, gap = 0, 0
		}
		worstGap = max(worstGap, gap)
	}
	t.Logf("rollout to :%s took %s; %d probe pairs over %ds; denied connections opened: %d; longest run of failed allowed probes: %s",
		rolloutTag, took.Round(time.Millisecond), probes, probeFor, deniedOpened, worstGap)
	if took > (probeFor-10)*time.Second {
		t.Errorf("the rollout outlasted the probing window (%s)", took)
	}
	if deniedOpened > 0 {
		t.Errorf("%d denied connections opened during the rollout", deniedOpened)
	}
	if worstGap > maxAllowedGap {
		t.Errorf("the allowed flow failed for %s in a row, bound %s", worstGap, maxAllowedGap)
	}
}

// waitRolledOut waits until every agent runs the DaemonSet's current
// template and is ready.
func (c *cluster) waitRolledOut(t *testing.T) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 3*time.Minute, false,
		func(ctx context.Context) (bool, error) {
			ds, err := c.cs.AppsV1().DaemonSets(agentNamespace).Get(ctx, "netpol-agent", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st := ds.Status
			return st.ObservedGeneration >= ds.Generation && st.UpdatedNumberScheduled == st.DesiredNumberScheduled &&
				st.NumberAvailable == st.DesiredNumberScheduled && st.NumberUnavailable == 0, nil
		})
	if err != nil {
		t.Fatalf("the agents' rollout: %v", err)
	}
}
