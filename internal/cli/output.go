package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/jsontext"
)

// outputFlag registers -o with the formats a command supports; the first is
// the default.
func outputFlag(cmd *cobra.Command, dst *string, formats ...string) {
	cmd.Flags().StringVarP(dst, "output", "o", formats[0], "output format: "+strings.Join(formats, ", "))
	cmd.PreRunE = chain(cmd.PreRunE, func(*cobra.Command, []string) error {
		for _, f := range formats {
			if *dst == f {
				return nil
			}
		}
		return usageError{fmt.Errorf("unknown output format %q (want %s)", *dst, strings.Join(formats, ", "))}
	})
}

func chain(a, b func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	if a == nil {
		return b
	}
	return func(c *cobra.Command, args []string) error {
		if err := a(c, args); err != nil {
			return err
		}
		return b(c, args)
	}
}

func writeJSON(w io.Writer, v any) error {
	enc := jsontext.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
