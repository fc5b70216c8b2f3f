package lab_test

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/netpol/netpol/internal/kubetest"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/lab"
	"github.com/netpol/netpol/internal/pipeline"
	"github.com/netpol/netpol/internal/source"
)

// TestLabAgentsWatchAPIServer runs the lab's agents against a real API
// server, whose pod objects carry the lab pods' addresses: a NetworkPolicy
// created through the API is enforced on real packets; while the API
// server is down the rules stay; after it is back, a deletion made through
// it is enforced again (the agents' watches reconnected on their own).
func TestLabAgentsWatchAPIServer(t *testing.T) {
	requireLab(t)
	c := kubetest.Start(t)
	ctx := t.Context()
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := kubetest.Manifests(twoPods)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, manifests); err != nil {
		t.Fatal(err)
	}
	l, teardown := upKubeLab(t, labName("kub"), c, twoPods)
	client, server := l.Pods[0], l.Pods[1]
	expect := func(when string, want80, want81 bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second) // a bound on a hang, not a performance assertion
		var got80, got81 bool
		for time.Now().Before(deadline) {
			got80, _ = l.Probe(client, server.IP, l4.Port{Proto: l4.TCP, Num: 80})
			got81, _ = l.Probe(client, server.IP, l4.Port{Proto: l4.TCP, Num: 81})
			if got80 == want80 && got81 == want81 {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%s: port 80 connected=%v, port 81 connected=%v; want %v and %v", when, got80, got81, want80, want81)
	}
	expect("before any policy", true, true)

	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "only-80", Namespace: "x"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "server"}},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: ptr(intstr.FromInt32(80))}}}},
		},
	}
	if _, err := cs.NetworkingV1().NetworkPolicies("x").Create(ctx, np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("after creating only-80", true, false)

	c.StopAPIServer(t)
	// Long enough for the agents' watches to notice and start retrying.
	for i := range 5 {
		time.Sleep(500 * time.Millisecond)
		expect(fmt.Sprintf("API server down, look %d", i+1), true, false)
	}
	c.StartAPIServer(t)
	// The new API server stops in a cleanup that runs before the one
	// above; it would wait for the agents' watches to end.
	t.Cleanup(teardown)
	if err := cs.NetworkingV1().NetworkPolicies("x").Delete(ctx, "only-80", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("after the API server came back and only-80 was deleted", true, true)
	// The packets above are judged by the server's node; every agent
	// must also say it programmed the cluster without error. An agent may
	// say so seconds after the packets pass: a restarted API server
	// answers watch-lists of custom resources with Retry-After until its
	// caches are ready.
	for _, n := range l.Nodes {
		deadline := time.Now().Add(30 * time.Second) // a bound on a hang, not a performance assertion
		for {
			st, err := l.AgentStatus(n.Name)
			if err == nil && st.Programmed != "" && st.Error == "" {
				break
			}
			if time.Now().After(deadline) {
				log, _ := os.ReadFile(l.AgentLog(n.Name))
				t.Fatalf("agent of %s: status %+v, %v; its log:\n%s", n.Name, st, err, log)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// upKubeLab builds a lab of the pods and nodes of manifests whose agents
// watch c (its API server listens on the host's loopback, forwarded into
// every node's namespace). The lab goes down when the test ends, or
// earlier when teardown is called.
func upKubeLab(t *testing.T, name string, c *kubetest.Cluster, manifests string) (l *lab.Lab, teardown func()) {
	t.Helper()
	dec := &source.Decoder{}
	e, _, err := pipeline.Build(dec.Decode("lab.yaml", []byte(manifests)), dec.Diags, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, err = lab.Plan(name, e.Cluster())
	if err != nil {
		t.Fatal(err)
	}
	l.Kubeconfig = c.Kubeconfig
	if err := l.Up(netpolBinary, []byte(manifests), io.Discard); err != nil {
		t.Fatal(err)
	}
	servers, err := l.Serve()
	var once sync.Once
	teardown = func() {
		once.Do(func() {
			if servers != nil {
				servers.Close()
			}
			if err := l.Down(); err != nil {
				t.Errorf("lab down: %v", err)
			}
		})
	}
	t.Cleanup(teardown)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(c.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range l.Nodes {
		stop, err := lab.Forward(n.Namespace, u.Host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	return l, teardown
}

func ptr[T any](v T) *T { return &v }
