package cli

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the netpol version and the policy API versions it reads",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			version := "(devel)"
			deps := map[string]string{}
			if bi, ok := debug.ReadBuildInfo(); ok {
				if bi.Main.Version != "" {
					version = bi.Main.Version
				}
				for _, d := range bi.Deps {
					deps[d.Path] = d.Version
				}
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "netpol %s\n", version)
			fmt.Fprintf(w, "  networking.k8s.io/v1 NetworkPolicy                       k8s.io/api %s\n", deps["k8s.io/api"])
			fmt.Fprintf(w, "  policy.networking.k8s.io/v1alpha1 ANP, BANP (v0.1.7 and KEP-2091 shapes)\n")
			fmt.Fprintf(w, "  policy.networking.k8s.io/v1alpha2 ClusterNetworkPolicy   sigs.k8s.io/network-policy-api %s\n", deps["sigs.k8s.io/network-policy-api"])
			return nil
		},
	}
}
