package cli

import (
	"strings"
	"testing"
)

// TestAdversarialPodInterfacesFlagRefusesSyntax: --pod-interfaces reaches
// nft as strings, and nft strings have no escapes, so a glob with a quote,
// a space, a "*" inside or more than 15 characters is refused before
// anything runs (exit 2), and a good list is taken.
func TestAdversarialPodInterfacesFlagRefusesSyntax(t *testing.T) {
	dir := t.TempDir()
	for _, bad := range []string{`veth" ; accept ; "`, "veth *", "v*eth", "averyveryverylongname*", "*"} {
		code, _, stderr := run(t, "", "agent", "--node", "n", "--source", dir, "--dry-run", "--once", "--pod-interfaces", bad)
		if code != 2 || !strings.Contains(stderr, "--pod-interfaces") {
			t.Errorf("--pod-interfaces %q: exit %d, stderr %q; want 2 and the flag named", bad, code, stderr)
		}
	}
	if code, _, stderr := run(t, "", "agent", "--node", "n", "--source", dir, "--dry-run", "--once", "--pod-interfaces", "veth*,cali*,cni0"); code != 0 {
		t.Errorf("--pod-interfaces veth*,cali*,cni0: exit %d, %s", code, stderr)
	}
}
