// Command netpol decides, explains and enforces Kubernetes network policy.
package main

import (
	"os"
	"path/filepath"

	"github.com/netpol/netpol/internal/cli"
)

func main() {
	os.Exit(cli.MainAs(filepath.Base(os.Args[0]), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
