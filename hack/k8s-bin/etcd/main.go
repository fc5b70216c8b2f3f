// Command etcd is the etcd server, built from go.etcd.io/etcd/server/v3 at
// the version pinned in ../go.mod so that the Kubernetes integration tests
// (internal/kubetest) get an etcd that matches the kube-apiserver's client
// without downloading a release binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
