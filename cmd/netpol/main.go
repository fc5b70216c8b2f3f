// Command netpol decides, explains and enforces Kubernetes network policy.
package main

import (
	"os"

	"github.com/netpol/netpol/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
