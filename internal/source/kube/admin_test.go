package kube_test

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/kubetest"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/source/kube"
)

// adminVerdicts hold when the watch has read both admin policies of
// cluster: the ANP denies intruder, the CNP accepts prometheus before web's
// NetworkPolicy isolates it.
func adminVerdicts(t *testing.T, e *engine.Engine) bool {
	return !allowed(t, e, "untrusted/intruder", "shop/batch") && allowed(t, e, "monitoring/prometheus", "shop/web")
}

// TestKubeFaultAPIServerDownAtStart starts a watch while the API server is
// down, so that discovery fails, then starts the server: the admin policies
// are read once they can be, and until then the watch is not ready and
// Read fails, rather than report a cluster without admin policies.
func TestKubeFaultAPIServerDownAtStart(t *testing.T) {
	c, _, _ := start(t)
	ctx := t.Context()
	c.StopAPIServer(t)

	w, err := kube.NewWatch(c.Config, source.Options{})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan error, 1)
	go func() { started <- w.Start(ctx) }()
	if err := w.Ready(); err == nil {
		t.Error("the watch is ready while the API server is down")
	}
	if _, _, _, err := w.Read(); err == nil {
		t.Error("Read succeeds while the API server is down")
	}

	c.StartAPIServer(t)
	if err := <-started; err != nil {
		t.Fatal(err)
	}
	waitReady(t, w)
	objs, _, _, err := w.Read()
	if err != nil {
		t.Fatal(err)
	}
	if !adminVerdicts(t, build(t, objs)) {
		t.Errorf("the watch is ready without the admin policies: %d objects", len(objs))
	}
}

// TestKubeFaultCRDsInstalledLater: in a cluster without the
// network-policy-api CRDs the watch is ready once their absence is
// confirmed (the kinds are known not to be served); once they are
// installed, it watches them.
func TestKubeFaultCRDsInstalledLater(t *testing.T) {
	c := kubetest.StartWith(t, kubetest.Options{WithoutCRDs: true})
	ctx := t.Context()
	if err := c.Create(ctx, manifests(t, core)); err != nil {
		t.Fatal(err)
	}
	w := startWatch(t, c, kube.WatchOptions{Recheck: 100 * time.Millisecond, ConfirmAbsent: 100 * time.Millisecond})
	if err := w.Ready(); err == nil {
		t.Error("ready after one answer of discovery without the CRDs, want not ready until their absence is confirmed")
	}
	waitReady(t, w)
	objs, _, v, err := w.Read()
	if err != nil {
		t.Fatal(err)
	}
	if !allowed(t, build(t, objs), "untrusted/intruder", "shop/batch") {
		t.Fatal("intruder -> batch denied before any admin policy exists")
	}

	c.InstallCRDs(t)
	if err := c.Create(ctx, manifests(t, admin)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, w, v, func(e *engine.Engine) bool { return adminVerdicts(t, e) })
	if err := w.Ready(); err != nil {
		t.Errorf("with the CRDs installed: %v, want ready", err)
	}
}

// waitReady waits until the watch is ready.
func waitReady(t *testing.T, w *kube.Watch) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a bound on a hang, not a performance assertion
	for {
		err := w.Ready()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watch is still not ready: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func manifests(t *testing.T, stream string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := kubetest.Manifests(stream)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
