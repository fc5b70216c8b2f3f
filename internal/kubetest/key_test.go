package kubetest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCachedBinDirMatchesBuildScript checks that the directory Start looks
// in is the one hack/k8s-bin/build.sh builds into, under each way of naming
// the cache root: the two compute it separately, in Go and in bash.
func TestCachedBinDirMatchesBuildScript(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(root, "hack", "k8s-bin", "build.sh")
	tmp := t.TempDir()
	for _, tc := range []struct {
		name string
		env  map[string]string
	}{
		{"NETPOL_K8S_BIN_CACHE", map[string]string{"NETPOL_K8S_BIN_CACHE": tmp + "/bin", "XDG_CACHE_HOME": tmp + "/xdg"}},
		{"XDG_CACHE_HOME", map[string]string{"NETPOL_K8S_BIN_CACHE": "", "XDG_CACHE_HOME": tmp + "/xdg"}},
		{"HOME", map[string]string{"NETPOL_K8S_BIN_CACHE": "", "XDG_CACHE_HOME": "", "HOME": tmp + "/home"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			want, err := cachedBinDir()
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command("bash", script, "--dir").Output()
			if err != nil {
				t.Fatalf("build.sh --dir: %v", err)
			}
			if got := strings.TrimSpace(string(out)); got != want {
				t.Errorf("build.sh --dir = %s, kubetest looks in %s", got, want)
			}
		})
	}
}
