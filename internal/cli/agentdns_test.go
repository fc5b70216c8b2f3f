package cli

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/netpol/netpol/internal/dnsproxy"
)

// TestServiceAddrs: the cluster DNS's addresses are the Service's cluster
// IPs, both families; a headless Service or none at all is an error.
func TestServiceAddrs(t *testing.T) {
	cs := fake.NewSimpleClientset(
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"},
			Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10", "fd00:10:96::a"}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "headless"},
			Spec: corev1.ServiceSpec{ClusterIP: "None", ClusterIPs: []string{"None"}}})
	got, err := serviceAddrs(context.Background(), cs, "kube-system", "kube-dns")
	want := []netip.Addr{netip.MustParseAddr("10.96.0.10"), netip.MustParseAddr("fd00:10:96::a")}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("kube-dns: %v %v, want %v", got, err, want)
	}
	if _, err := serviceAddrs(context.Background(), cs, "kube-system", "headless"); err == nil || err.Error() != "Service kube-system/headless has no cluster IP" {
		t.Errorf("headless: %v", err)
	}
	if _, err := serviceAddrs(context.Background(), cs, "kube-system", "missing"); err == nil {
		t.Error("a missing Service: no error")
	}
}

// TestCapReachedEvent: the cap's Event names the count and the flag.
func TestCapReachedEvent(t *testing.T) {
	rec := record.NewFakeRecorder(1)
	capReached("node-1", rec)(dnsproxy.Stats{Addresses: 100000, CapHits: 3})
	want := "Warning DNSAddressCapReached 100000 addresses learned from DNS answers, the most --dns-max-addresses allows: " +
		"connections to addresses of new answers for domainNames are denied"
	if got := <-rec.Events; got != want {
		t.Errorf("event %q, want %q", got, want)
	}
	capReached("node-1", nil)(dnsproxy.Stats{}) // no recorder: the log only
}

// TestAdversarialClusterDNSRetried: kube-dns is not there when the agent
// starts; a later read finds it (the agent reads again until it does, and
// then every clusterDNSEvery), and one that finds it gone again forgets
// its addresses.
func TestAdversarialClusterDNSRetried(t *testing.T) {
	cs := fake.NewSimpleClientset()
	d := &clusterDNS{cs: cs}
	if _, err := d.current(); err == nil {
		t.Error("before any read: no error")
	}
	if err := d.read(t.Context()); err == nil {
		t.Error("reading a missing kube-dns: no error")
	}
	if addrs, err := d.current(); addrs != nil || err == nil {
		t.Errorf("kube-dns missing: %v %v, want an error", addrs, err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-dns"},
		Spec: corev1.ServiceSpec{ClusterIP: "198.18.0.10", ClusterIPs: []string{"198.18.0.10"}}}
	if _, err := cs.CoreV1().Services("kube-system").Create(t.Context(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d.read(t.Context()); err != nil {
		t.Fatal(err)
	}
	if addrs, err := d.current(); err != nil || !slices.Equal(addrs, []netip.Addr{netip.MustParseAddr("198.18.0.10")}) {
		t.Errorf("kube-dns created: %v %v, want 198.18.0.10", addrs, err)
	}
	if err := cs.CoreV1().Services("kube-system").Delete(t.Context(), "kube-dns", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = d.read(t.Context())
	if addrs, err := d.current(); addrs != nil || err == nil {
		t.Errorf("kube-dns deleted: %v %v, want an error", addrs, err)
	}
}
