// Command coredns is CoreDNS with only the plugins the cluster DNS of
// hack/cluster's nodes uses: kubeadm's Corefile without forward, so that no
// query ever leaves the machine, plus hosts, which answers for the names of
// the cluster's outside host (domainNames tests). Building the full plugin set would pull in
// every cloud SDK CoreDNS supports.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/hosts"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func init() {
	// The plugins' order in a server block, as CoreDNS's own zdirectives.go
	// has them; a Corefile naming any other plugin fails to load.
	dnsserver.Directives = []string{
		"reload", "ready", "health", "prometheus", "errors", "log",
		"loadbalance", "cache", "hosts", "kubernetes", "loop",
	}
}

func main() {
	coremain.Run()
}
