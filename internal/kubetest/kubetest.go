// Package kubetest starts a real etcd and kube-apiserver for integration
// tests, with the network-policy-api CRDs installed.
//
// It stands beside the data flow, not in it: only _test.go files import it,
// and it imports no other netpol package, so any layer can test against a
// real API server. There is no kubelet, scheduler or controller-manager:
// objects are stored, validated, defaulted and watched exactly as in a
// cluster, but nothing acts on them (a Pod stays Pending forever, no
// ServiceAccount or Endpoints appear by themselves).
//
// The binaries (etcd, kube-apiserver, and a kubectl of the same release for
// tests of the manifests in deploy/) are built from the Go module proxy by
// hack/k8s-bin/build.sh into a cache directory keyed by that directory's
// inputs. Without them Start skips the test, or fails it when CI=true,
// because a CI run that silently skips its integration tests proves nothing.
package kubetest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Cluster is a running control plane. It is stopped by the test's Cleanup.
type Cluster struct {
	// Config reaches the API server as a member of system:masters; every
	// request is allowed (--authorization-mode=AlwaysAllow, or RBAC where
	// masters may do anything: Options.RBAC).
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file with the same credentials,
	// for code under test that takes a kubeconfig path, as netpol's CLI does.
	Kubeconfig string
	// Kubectl is the path of a kubectl binary of the API server's release,
	// for tests that run it against Kubeconfig.
	Kubectl string

	apiserver *process // nil while stopped
	restart   func(t testing.TB) *process
}

// serviceCIDR is the API server's Service ClusterIP range. Nothing routes
// to it (there is no kube-proxy); it comes from the benchmarking range
// 198.18.0.0/15 so that it cannot collide with an address the tests or the
// host actually use.
const serviceCIDR = "198.19.0.0/24"

// readyTimeout bounds how long each component may take to come up. It is
// not a performance assertion: on a loaded two-core CI machine the API
// server needs seconds, and the bound only turns a hang into a readable
// failure with the logs attached.
const readyTimeout = 2 * time.Minute

// probeTimeout bounds one readiness probe, so that a server that accepts
// connections but never answers cannot stall the wait past readyTimeout.
const probeTimeout = 5 * time.Second

// Start runs etcd and kube-apiserver on free ports of 127.0.0.1, installs
// the network-policy-api CRDs and returns once they are served. Everything
// is torn down, and on failure both logs are printed, when the test ends.
func Start(t testing.TB) *Cluster {
	t.Helper()
	return StartWith(t, Options{})
}

// Options of StartWith.
type Options struct {
	// WithoutCRDs leaves the network-policy-api CRDs out, for tests of a
	// cluster that has none yet; InstallCRDs installs them later.
	WithoutCRDs bool
	// RBAC authorizes requests with RBAC instead of allowing all of them:
	// Config (system:masters) may still do anything, including
	// impersonate a user whose rights the test grants (rest.Config's
	// Impersonate).
	RBAC bool
}

// StartWith is Start with options.
func StartWith(t testing.TB, opts Options) *Cluster {
	t.Helper()
	bin := binDir(t)
	root := t.TempDir()

	logs := []string{filepath.Join(root, "etcd.log"), filepath.Join(root, "kube-apiserver.log")}
	// Registered before the processes' own cleanups, so it runs after them
	// (cleanups run last-in first-out) and sees complete logs.
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range logs {
				t.Logf("--- tail of %s ---\n%s", filepath.Base(l), tail(l, 32<<10))
			}
		}
	})

	etcdURL := startEtcd(t, bin, root, logs[0])
	authz := "AlwaysAllow"
	if opts.RBAC {
		authz = "RBAC"
	}
	c := startAPIServer(t, bin, root, logs[1], etcdURL, authz)
	c.Kubectl = filepath.Join(bin, "kubectl")
	if !opts.WithoutCRDs {
		c.InstallCRDs(t)
	}
	return c
}

func startEtcd(t testing.TB, bin, root, logPath string) string {
	t.Helper()
	client := "http://" + freeAddr(t)
	peer := "http://" + freeAddr(t)
	p := startProcess(t, filepath.Join(bin, "etcd"), logPath,
		"--name=kubetest",
		"--data-dir="+filepath.Join(root, "etcd"),
		"--listen-client-urls="+client,
		"--advertise-client-urls="+client,
		"--listen-peer-urls="+peer,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster=kubetest="+peer,
		// A test's data dies with the test: durability only costs time.
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	waitReady(t, p, func() error {
		return get(&http.Client{Timeout: probeTimeout}, client+"/health")
	})
	return client
}

func startAPIServer(t testing.TB, bin, root, logPath, etcdURL, authz string) *Cluster {
	t.Helper()
	certDir := filepath.Join(root, "pki")
	pki, err := writePKI(certDir)
	if err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + port,
		"--cert-dir=" + certDir,
		"--tls-cert-file=" + filepath.Join(certDir, "serving.crt"),
		"--tls-private-key-file=" + filepath.Join(certDir, "serving.key"),
		"--client-ca-file=" + filepath.Join(certDir, "ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(certDir, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(certDir, "sa.key"),
		"--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=" + authz,
		// Otherwise the server publishes its own address as the endpoints
		// of the default "kubernetes" Service and keeps renewing a lease
		// for it: objects no test created, pointing at no pod.
		"--endpoint-reconciler-type=none",
		// ServiceAccount admission rejects every Pod until the namespace's
		// "default" ServiceAccount exists, and only the controller-manager,
		// which we do not run, creates it.
		"--disable-admission-plugins=ServiceAccount",
		"--profiling=false",
	}

	cfg := &rest.Config{
		Host: "https://" + addr,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   pki.ca,
			CertData: pki.clientCert,
			KeyData:  pki.clientKey,
		},
		// The server has no other clients to protect, and client-side
		// throttling would only make tests slow.
		QPS: -1,
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatalf("kubetest: client for %s: %v", cfg.Host, err)
	}
	hc.Timeout = probeTimeout
	start := func(t testing.TB) *process {
		p := startProcess(t, filepath.Join(bin, "kube-apiserver"), logPath, args...)
		waitReady(t, p, func() error {
			return get(hc, cfg.Host+"/readyz")
		})
		return p
	}
	p := start(t)

	kubeconfig := filepath.Join(root, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, cfg); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	return &Cluster{Config: cfg, Kubeconfig: kubeconfig, apiserver: p, restart: start}
}

func writeKubeconfig(path string, cfg *rest.Config) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kubetest"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos["kubetest"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: "kubetest"}
	kc.CurrentContext = "kubetest"
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("write kubeconfig %s: %w", path, err)
	}
	return nil
}

// binaries are what binDir must hold; hack/k8s-bin/build.sh builds the same.
var binaries = []string{"etcd", "kube-apiserver", "kubectl"}

// binDir returns the directory holding the binaries, or ends the test:
// skipped on a developer's machine, failed under CI=true.
func binDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("NETPOL_K8S_BIN")
	hint := "unset NETPOL_K8S_BIN or point it at a directory with etcd, kube-apiserver and kubectl"
	if dir == "" {
		var err error
		dir, err = cachedBinDir()
		if err != nil {
			t.Fatalf("kubetest: %v", err)
		}
		hint = "build it with hack/k8s-bin/build.sh (several minutes, once per change to hack/k8s-bin)"
	}
	for _, name := range binaries {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			msg := fmt.Sprintf("kubetest: no %s in %s; %s", name, dir, hint)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return dir
}

// keyFiles are the inputs of hack/k8s-bin/build.sh that decide the binaries,
// in the order the script hashes them. The script is one of them so that a
// change to what it builds, or how, builds afresh.
var keyFiles = []string{"go.mod", "go.sum", "build.sh", filepath.Join("etcd", "main.go")}

// cachedBinDir computes the directory hack/k8s-bin/build.sh builds into:
// the cache root, then the first 16 hex digits of the sha256 of keyFiles
// concatenated. The two must agree byte for byte.
func cachedBinDir() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, name := range keyFiles {
		b, err := os.ReadFile(filepath.Join(root, "hack", "k8s-bin", name))
		if err != nil {
			return "", fmt.Errorf("key of the test binaries: %w", err)
		}
		h.Write(b)
	}
	key := hex.EncodeToString(h.Sum(nil))[:16]

	cache := os.Getenv("NETPOL_K8S_BIN_CACHE")
	if cache == "" {
		// Spelled out rather than os.UserCacheDir, which differs from the
		// script's ${XDG_CACHE_HOME:-$HOME/.cache} outside Linux.
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home := os.Getenv("HOME")
			if home == "" {
				return "", errors.New("neither NETPOL_K8S_BIN, NETPOL_K8S_BIN_CACHE, XDG_CACHE_HOME nor HOME is set")
			}
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "netpol", "k8s-bin")
	}
	return filepath.Join(cache, key), nil
}

// moduleRoot finds the netpol module root from the working directory, which
// go test sets to the package's directory.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "hack", "k8s-bin", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no hack/k8s-bin/go.mod in %s or above", wd)
		}
		dir = parent
	}
}

// freeAddr returns a 127.0.0.1 address with a port nobody listens on now.
// Another process may take it before ours binds it; the window is short and
// a collision shows up as an early exit with "address already in use".
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("kubetest: find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

// errExited reports that the process being waited for is gone.
var errExited = errors.New("exited")

// poll retries check every 100ms until it succeeds, exited is closed (a nil
// channel never is), or readyTimeout passes.
func poll(exited <-chan struct{}, check func() error) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %w", readyTimeout, err)
		}
		select {
		case <-exited:
			return errExited
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitReady polls ready until it succeeds, and ends the test if the process
// exits or readyTimeout passes first.
func waitReady(t testing.TB, p *process, ready func() error) {
	t.Helper()
	if err := poll(p.done, ready); err != nil {
		if errors.Is(err, errExited) {
			err = fmt.Errorf("exited before it was ready: %v", p.err)
		}
		t.Fatalf("kubetest: %s: %v", filepath.Base(p.cmd.Path), err)
	}
}

func get(c *http.Client, url string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d: %s", url, resp.StatusCode, body)
	}
	return nil
}

// tail returns at most the last n bytes of a file, for failure reports.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		if _, err := f.Seek(fi.Size()-n, io.SeekStart); err != nil {
			return err.Error()
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
