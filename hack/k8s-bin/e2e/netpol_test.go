// Package e2e is upstream Kubernetes' end-to-end suite cut down to its
// NetworkPolicy specs (test/e2e/network/netpol), so that the binary built
// from it (go test -c, by hack/cluster/build.sh) runs exactly upstream's
// specs with upstream's flags against a real cluster, without compiling the
// other thousands of specs test/e2e carries.
//
// It mirrors test/e2e/e2e_test.go's TestMain: the same flag registration,
// the same embedded manifests, the same runner.
package e2e

import (
	"flag"
	"os"
	"testing"

	"k8s.io/kubernetes/test/e2e"
	"k8s.io/kubernetes/test/e2e/framework"
	"k8s.io/kubernetes/test/e2e/framework/config"
	"k8s.io/kubernetes/test/e2e/framework/testfiles"
	e2etestingmanifests "k8s.io/kubernetes/test/e2e/testing-manifests"

	// Constants and framework hooks, as test/e2e/e2e_test.go imports them.
	_ "k8s.io/kubernetes/test/e2e/feature"
	_ "k8s.io/kubernetes/test/e2e/framework/debug/init"
	_ "k8s.io/kubernetes/test/e2e/framework/node/init"
	_ "k8s.io/kubernetes/test/utils/format"

	// The specs.
	_ "k8s.io/kubernetes/test/e2e/network/netpol"
)

func TestMain(m *testing.M) {
	config.CopyFlags(config.Flags, flag.CommandLine)
	framework.RegisterCommonFlags(flag.CommandLine)
	framework.RegisterClusterFlags(flag.CommandLine)
	flag.Parse()
	testfiles.AddFileSource(e2etestingmanifests.GetE2ETestingManifestsFS())
	framework.AfterReadingAllFlags(&framework.TestContext)
	os.Exit(m.Run())
}

func TestE2E(t *testing.T) {
	e2e.RunE2ETests(t)
}
