package cli

import (
	"bytes"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/l4"
	"github.com/netpol/netpol/internal/lab"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/suggest"
	"github.com/netpol/netpol/internal/words"
)

func newLab() *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "Build pods as network namespaces, enforce with real agents, probe with real packets",
		Long: `lab turns manifests into a cluster on this machine: every node and pod becomes
a network namespace (pods 198.18.0.0/15, nodes 198.19.255.0/24; nothing else
is addressed), every pod serves its declared TCP and UDP ports, and one
netpol agent per node enforces the policies with nftables. Then probe
connects every pod pair on every port and compares what the kernel did with
what netpol matrix predicts. Needs root, ip and nft.

Namespaces are named netpol-<lab>-...; lab down removes them, also after a
crash.`,
		Example: `  sudo netpol lab up -f examples/tenants
  sudo netpol lab probe
  sudo netpol lab apply -f more-policies.yaml
  sudo netpol lab delete -f more-policies.yaml
  sudo netpol lab down`,
	}
	cmd.PersistentFlags().StringVar(&name, "name", "default", "lab name (1-8 lowercase letters or digits)")
	cmd.AddCommand(newLabUp(&name), newLabProbe(&name), newLabApply(&name), newLabDelete(&name), newLabDown(&name), newLabServe(&name))
	return cmd
}

func newLabUp(name *string) *cobra.Command {
	var in inputFlags
	var nodes int
	var record bool
	cmd := &cobra.Command{
		Use:   "up -f MANIFESTS",
		Short: "Build the lab and start its agents",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if in.lenient {
				return usageError{fmt.Errorf("--lenient: the lab's agents read every policy strictly (netpol agent has no --lenient); fix the unknown fields instead")}
			}
			files, err := source.ReadFiles(in.files)
			if err != nil {
				return err
			}
			var manifests bytes.Buffer
			for _, f := range files {
				manifests.WriteString("---\n")
				manifests.Write(f.Data)
				manifests.WriteString("\n")
			}
			e, err := in.load(cmd)
			if err != nil {
				return err
			}
			if len(e.Cluster().Nodes) == 0 {
				for i := 1; i <= nodes; i++ {
					fmt.Fprintf(&manifests, "---\n{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"node-%d\"}}\n", i)
				}
				if e, err = in.buildBytes("lab manifests", manifests.Bytes()); err != nil {
					return err
				}
			}
			l, err := lab.Plan(*name, e.Cluster())
			if err != nil {
				return err
			}
			l.AgentArgs = in.evalArgs()
			l.Record = record
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			w := cmd.ErrOrStderr()
			if err := l.Up(exe, manifests.Bytes(), w); err != nil {
				return err
			}
			serve := exec.Command(exe, "lab", "serve", "--name", *name)
			serve.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := serve.Start(); err != nil {
				return err
			}
			l.PIDs = append(l.PIDs, serve.Process.Pid)
			if err := l.Save(); err != nil {
				return err
			}
			fmt.Fprintf(w, "waiting for the agents...\n")
			if err := l.WaitProgrammed(cmd.Context(), 30*time.Second); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lab %s: %s, %s; agents programmed. Next: netpol lab probe --name %s\n", *name, words.Count(len(l.Nodes), "node"), words.Count(len(l.Pods), "pod"), *name)
			if record {
				fmt.Fprintf(cmd.OutOrStdout(), "recording every connection into %s\n", l.RecordFile("*"))
			}
			return nil
		},
	}
	in.register(cmd)
	cmd.Flags().IntVar(&nodes, "nodes", 2, "nodes to create when the manifests declare none")
	cmd.Flags().BoolVar(&record, "record", false, "have the agents record every connection of their pods (netpol agent --record), one file per node in the lab's directory, for netpol suggest --flows")
	return cmd
}

func newLabProbe(name *string) *cobra.Command {
	var ports, output, flowsPath string
	var services, names bool
	cmd := &cobra.Command{
		Use:   "probe",
		Short: "Connect every pod pair on every port and compare with netpol matrix",
		Long: `probe connects every pod to every other pod on every port it serves, over
each address family both have, and compares what the kernel did with what
netpol predicts (netpol matrix). A flow that connects and is predicted
denied, or the other way round, is a mismatch; the exit code is 1 if there
is one.

With --services it connects to Services instead, as clients do: every pod
to every Service port, at the Service's address. The lab's nodes translate
such a connection to one backend and its target port, as kube-proxy does,
round-robin, so that a pod's connections in a row reach each backend once;
the backend names itself, and each backend is compared with netpol explain
--to svc/NAMESPACE/NAME. A pod that is a backend of the Service is probed
too, but its connection to itself (hairpin) is not compared: upstream
leaves what policy does to it undefined.

With --names every pod resolves every name of the lab's DNS zone (a
ConfigMap kube-system/lab-dns, served by the backends of kube-system/kube-dns;
a wildcard as one name below it) through the kube-dns Service, as a pod's
resolver does, and connects to the answer on the ports its pod serves: the
agents learn the addresses of domainNames rules from those answers. Each
connection is compared with netpol explain --to ADDRESS --resolved-as NAMES,
NAMES being the names the address was an answer for in this probe. (A
learned address stays allowed until its TTL expires, so a pod-pair probe
right after may see it allowed where the model, without names, denies.)

With --flows FILE it connects only the flows the file lists (the forms
netpol suggest --flows reads: CSV from,to,port, JSON, a record), as an
application would: from is a pod (namespace/name) or a workload
(namespace/Kind/name: each of its pods connects), to a pod, a workload (each
of its pods) or an address. With agents that record (lab up --record), this
is the traffic the record then holds: probe ends two record intervals
(0.4 s) after the last connection, when every agent has saved it.`,
		Example: `  sudo netpol lab probe
  sudo netpol lab probe --ports 80/tcp,53/udp -o json
  sudo netpol lab probe --services
  sudo netpol lab probe --names
  sudo netpol lab probe --flows examples/suggest/flows.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := lab.Load(*name)
			if err != nil {
				return err
			}
			var list []l4.Port
			if ports != "" {
				if list, err = l4.ParsePortList(ports); err != nil {
					return usageError{err}
				}
			}
			in, err := labInput(l)
			if err != nil {
				return err
			}
			e, err := in.load(cmd)
			if err != nil {
				return err
			}
			if services && names || flowsPath != "" && (services || names) {
				return usageError{fmt.Errorf("--services, --names and --flows probe apart: give one")}
			}
			if flowsPath != "" {
				return probeFlows(cmd, l, e, flowsPath, output)
			}
			if services {
				return probeServices(cmd, l, e, list, output)
			}
			if names {
				return probeNames(cmd, l, e, list, output)
			}
			update, stop := probeProgress(cmd, "probing")
			cells := l.ProbeAll(cmd.Context(), list, update)
			stop()
			rows := make([]probeRow, len(cells))
			bad := 0
			for i, c := range cells {
				src, _ := e.Endpoint(c.SrcIP.String())
				dst, _ := e.Endpoint(c.DstIP.String())
				predicted := e.Allowed(engineFlow(src, dst, c.Port))
				rows[i] = probeRow{From: c.From, To: c.To, Dst: c.DstIP.String(), Port: c.Port.String(),
					Kernel: verdictWord(c.Observed, c.Err), Predicted: verdictWord(predicted, nil)}
				if c.Err != nil || predicted != c.Observed {
					rows[i].Mismatch = true
					bad++
				}
			}
			if err := writeProbe(cmd.OutOrStdout(), output, rows, bad); err != nil {
				return err
			}
			if bad > 0 {
				return errSilent{fmt.Errorf("%d mismatches", bad)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&ports, "ports", "", "only these ports, e.g. 80/tcp,53/udp (default: every served port); with --services, Service ports")
	cmd.Flags().BoolVar(&services, "services", false, "connect to Service addresses, translated to backends as kube-proxy does, and compare per backend")
	cmd.Flags().BoolVar(&names, "names", false, "resolve the names of the lab's DNS zone from every pod and connect to the answers, comparing with explain --resolved-as")
	cmd.Flags().StringVar(&flowsPath, "flows", "", "connect only the flows of this file (as netpol suggest --flows reads them), comparing each with the prediction")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}

// probeFlows connects the flows of a file, each from every pod of its
// source to every pod (or the address) of its destination, and compares
// each connection with the engine's prediction.
func probeFlows(cmd *cobra.Command, l *lab.Lab, e *engine.Engine, path, output string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	named := suggest.NewEnds(e.Cluster())
	flows, _, err := named.ReadFlows(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	labPods := map[string]lab.Pod{}
	for _, p := range l.Pods {
		labPods[p.Key] = p
	}
	// pods are the lab pods an end names: a pod, or a workload's pods.
	pods := func(end string) []lab.Pod {
		ps, _ := named.Pods(end) // none: an address, or an error below
		var out []lab.Pod
		for _, p := range ps {
			if lp, ok := labPods[p.Key()]; ok {
				out = append(out, lp)
			}
		}
		return out
	}
	var rows []probeRow
	bad := 0
	for i, f := range flows {
		srcs := pods(f.From)
		if len(srcs) == 0 {
			return fmt.Errorf("%s: flow %d: %s is no pod or workload of the lab", path, i+1, f.From)
		}
		var dsts []netip.Addr
		if a, err := netip.ParseAddr(f.To); err == nil {
			dsts = []netip.Addr{a}
		}
		for _, p := range pods(f.To) {
			dsts = append(dsts, p.IP)
		}
		if len(dsts) == 0 {
			return fmt.Errorf("%s: flow %d: %s is no pod, workload or address of the lab", path, i+1, f.To)
		}
		for _, src := range srcs {
			for _, dst := range dsts {
				got, perr := l.ProbeSure(src, dst, f.Port)
				se, _ := e.Endpoint(src.IP.String())
				de, _ := e.Endpoint(dst.String())
				predicted := e.Allowed(engineFlow(se, de, f.Port))
				to := dst.String()
				if de.Pod != nil {
					to = de.Pod.Key()
				}
				row := probeRow{From: src.Key, To: to, Dst: dst.String(), Port: f.Port.String(),
					Kernel: verdictWord(got, perr), Predicted: verdictWord(predicted, nil)}
				if perr != nil || got != predicted {
					row.Mismatch = true
					bad++
				}
				rows = append(rows, row)
			}
		}
	}
	if l.Record {
		// What the agents recorded of it is in their files when probe ends.
		l.WaitRecorded(time.Now())
	}
	if err := writeProbe(cmd.OutOrStdout(), output, rows, bad); err != nil {
		return err
	}
	if bad > 0 {
		return errSilent{fmt.Errorf("%d mismatches", bad)}
	}
	return nil
}

// probeRow is one probed flow as printed.
type probeRow struct {
	From      string `json:"from"`
	To        string `json:"to"`
	Dst       string `json:"dstIP"`
	Port      string `json:"port"`
	Kernel    string `json:"kernel"`
	Predicted string `json:"predicted"`
	Mismatch  bool   `json:"mismatch,omitempty"`
}

func writeProbe(w io.Writer, output string, rows []probeRow, bad int) error {
	switch output {
	case "json":
		return writeJSON(w, map[string]any{"flows": rows, "probed": len(rows), "mismatches": bad})
	case "text":
	default:
		return usageError{fmt.Errorf("--output %q: want text or json", output)}
	}
	writeProbeTable(w, []string{"FROM", "TO", "ADDRESS", "PORT", "KERNEL", "PREDICTED"}, len(rows), func(i int) ([]string, bool) {
		r := rows[i]
		return []string{r.From, r.To, r.Dst, r.Port, r.Kernel, r.Predicted}, r.Mismatch
	})
	fmt.Fprintf(w, "\n%d flows probed, %d mismatches\n", len(rows), bad)
	return nil
}

// writeProbeTable writes a probe's rows as a table, marking mismatches.
func writeProbeTable(w io.Writer, header []string, n int, row func(i int) (cells []string, mismatch bool)) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for i := range n {
		cells, mismatch := row(i)
		line := strings.Join(cells, "\t")
		if mismatch {
			line += "  <-- MISMATCH"
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// probeProgress shows how much of a probe is done on a
// terminal's progress line (see progress); stop clears it.
func probeProgress(cmd *cobra.Command, what string) (update func(done, total int), stop func()) {
	p := startProgress(cmd, false)
	var done atomic.Int64
	var mu sync.Mutex
	shownTotal := -1
	return func(d, total int) {
		done.Store(int64(d))
		mu.Lock()
		defer mu.Unlock()
		if total != shownTotal { // retries add to the total
			shownTotal = total
			p.Stage(what, done.Load, fmt.Sprintf("of %d", total))
		}
	}, p.Stop
}

func newLabApply(name *string) *cobra.Command {
	return newLabEdit(name, "apply", "Add or replace objects in the lab (by kind, namespace and name); the agents follow", lab.ApplyManifests)
}

func newLabDelete(name *string) *cobra.Command {
	return newLabEdit(name, "delete", "Delete the objects named in the manifests from the lab; the agents follow", lab.DeleteManifests)
}

// newLabEdit changes the lab's manifests with edit, checks that the result
// is an input the agents accept, and waits until they enforce it.
func newLabEdit(name *string, verb, short string, edit func(current, change []byte) ([]byte, error)) *cobra.Command {
	var files []string
	cmd := &cobra.Command{
		Use:   verb + " -f MANIFESTS",
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return usageError{fmt.Errorf("-f is required")}
			}
			l, err := lab.Load(*name)
			if err != nil {
				return err
			}
			change, err := source.ReadFiles(files)
			if err != nil {
				return err
			}
			current, err := os.ReadFile(filepath.Join(l.ManifestDir(), "cluster.yaml"))
			if err != nil {
				return err
			}
			for _, f := range change {
				if current, err = edit(current, f.Data); err != nil {
					return fmt.Errorf("%s: %w", f.Name, err)
				}
			}
			in, err := labInput(l)
			if err != nil {
				return err
			}
			if _, err := in.buildBytes("lab manifests", current); err != nil {
				return err // never hand the agents an input they would refuse
			}
			if err := l.WriteManifests(current); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "waiting for the agents...\n")
			if err := l.WaitProgrammed(cmd.Context(), 30*time.Second); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "lab %s: %s done; agents programmed\n", *name, verb)
			return nil
		},
	}
	cmd.Flags().StringSliceVarP(&files, "filename", "f", nil, "manifest files or directories")
	return cmd
}

func newLabDown(name *string) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the lab's processes and delete its namespaces",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all {
				return lab.Remove("")
			}
			if l, err := lab.Load(*name); err == nil {
				return l.Down()
			}
			return lab.Remove(*name) // state lost: remove by name prefix
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "remove every lab (every netpol-* network namespace)")
	return cmd
}

// newLabServe is started by lab up: it holds the pods' listeners.
func newLabServe(name *string) *cobra.Command {
	return &cobra.Command{
		Use:    "serve",
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := lab.Load(*name)
			if err != nil {
				return err
			}
			servers, err := l.Serve()
			if err != nil {
				return err
			}
			defer servers.Close()
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
			<-sig
			return nil
		},
	}
}

func verdictWord(allowed bool, err error) string {
	switch {
	case err != nil:
		return "error: " + err.Error()
	case allowed:
		return "allowed"
	}
	return "denied"
}

func engineFlow(src, dst engine.Endpoint, port l4.Port) engine.Flow {
	return engine.Flow{Src: src, Dst: dst, Port: port}
}
