// Package cli wires the netpol commands: flags, loading input through the
// layers of DESIGN.md, and printing. It is the top of the stack; nothing
// imports it but cmd/netpol.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/diag"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and failed (a cluster that cannot be read, ...), or its result says so (diff, lint, explain --exit-code)
	exitInput   = 2 // bad input, flags or names (a missing path, an unknown pod)
)

// usageError is a bad flag or argument: exit 2.
type usageError struct{ error }

// troubleError is exit 2 without the usage hint: input that cannot be read
// or a name that names nothing (a missing -f path, an unknown pod), and any
// failure of a command whose exit 1 is a result (diff: "there are changes",
// explain --exit-code: "denied"), as diff(1) does, so a CI gate never
// mistakes an unreachable cluster for a change.
type troubleError struct{ error }

// errSilent fails the command (exit 1) without printing: the command's
// output already said why.
type errSilent struct{ error }

// Main runs netpol with args and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return MainAs("netpol", args, stdin, stdout, stderr)
}

// MainAs is Main for the program installed under name (the base name of
// argv[0]): as kubectl-netpol, kubectl runs it for "kubectl netpol", and
// help and errors say so.
func MainAs(name string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(stdin, stdout, stderr)
	if name == "kubectl-netpol" {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl netpol"}
	}
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var input diag.InputError
	var usage usageError
	var silent errSilent
	var trouble troubleError
	switch {
	case errors.As(err, &silent):
		return exitFailure
	case errors.As(err, &input):
		fmt.Fprintf(stderr, "error: invalid input:\n%s\n", indent(input.Error()))
		return exitInput
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "error: %v\nRun '%s --help' for usage.\n", usage.error, root.DisplayName())
		return exitInput
	case errors.As(err, &trouble):
		fmt.Fprintf(stderr, "error: %v\n", trouble.error)
		return exitInput
	}
	fmt.Fprintf(stderr, "error: %v\n", err)
	return exitFailure
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "netpol",
		Short: "Decide, explain and enforce Kubernetes network policy",
		Long: `netpol reads a cluster's namespaces, pods, nodes and every policy API for pod
traffic — NetworkPolicy, AdminNetworkPolicy, BaselineAdminNetworkPolicy and
ClusterNetworkPolicy — and decides what may talk to what, with the reason.

Every policy is normalised into one tiered model, evaluated per connection:

  the source's egress AND the destination's ingress must both allow it, and
  each side walks  Admin tier -> NetworkPolicy tier -> Baseline tier -> allow.

  Admin      AdminNetworkPolicy, ClusterNetworkPolicy (tier: Admin), by priority:
             the first matching rule decides; Pass skips to the NetworkPolicy tier.
  NetworkPolicy  a pod selected by a NetworkPolicy for a direction is isolated:
             allowed iff some rule of those policies matches, else denied (final).
  Baseline   ClusterNetworkPolicy (tier: Baseline) by priority, then the
             BaselineAdminNetworkPolicy: the first matching rule decides.

Input is Kubernetes YAML or JSON: files, directories (recursive) or - for
stdin, multi-document, kind: List and the typed lists "kubectl get -o yaml"
writes (PodList, NetworkPolicyList, ...). Workloads (Deployment,
StatefulSet, DaemonSet, ReplicaSet, ReplicationController, Job, CronJob)
stand for the pods of their template.
Or a live cluster: --kubeconfig and --context (default: $KUBECONFIG, then
~/.kube/config).

Exit status: 2 for invalid input or flags, a path that does not exist, or a
name that names nothing (explain --from, --to, --port); 1 for a failure to
run, or for a result where a command says so (diff: changes, lint: findings
at --fail-on, explain --exit-code: denied); 0 otherwise.

Installed on the PATH as kubectl-netpol, it is a kubectl plugin:
"kubectl netpol explain ...".`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newExplain(), newMatrix(), newDiff(), newLint(), newCompile(), newSuggest(), newConvert(), newExposure(), newAgent(), newLab(), newTest(), newVersion())
	root.CompletionOptions.DisableDefaultCmd = true
	// Flag descriptions wrap to the width of a terminal, as cobra's
	// template leaves them on one line however long (up to 342 columns).
	usage := strings.NewReplacer(".LocalFlags.FlagUsages", "(.LocalFlags.FlagUsagesWrapped "+strconv.Itoa(flagWidth)+")",
		".InheritedFlags.FlagUsages", "(.InheritedFlags.FlagUsagesWrapped "+strconv.Itoa(flagWidth)+")")
	root.SetUsageTemplate(usage.Replace(root.UsageTemplate()))
	return root
}

// helpWidth is the widest line --help writes; flagWidth the width flag
// descriptions wrap to.
const (
	helpWidth = 100
	flagWidth = 90
)

func indent(s string) string {
	out := "  "
	for _, r := range s {
		out += string(r)
		if r == '\n' {
			out += "  "
		}
	}
	return out
}
