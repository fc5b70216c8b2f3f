package agent

// The sizing rule of deploy/README.md ("Sizing"): the memory an agent
// needs grows with the cluster's pods (it watches every pod, and its
// node's sets hold the addresses peer selectors select), measured with
// the synthetic clusters of internal/synth at about one NetworkPolicy a
// pod and 100 pods on the node (BENCHMARKS.md, sessions 13 and 14). Its
// one home: the DaemonSet's test and the fleet benchmark use these.

// MemoryLimit is the container memory limit, in bytes, for an agent in a
// cluster of pods: 120 MiB and 8 KiB a pod.
func MemoryLimit(pods int) int64 { return 120<<20 + int64(pods)*8<<10 }

// GoMemLimit is the GOMEMLIMIT, in bytes, for an agent whose container
// has limit bytes in a cluster of pods: the limit less what the kernel's
// nftables objects and nft take beside the Go heap, the larger of 56 MiB
// and 1.4 KiB a pod.
func GoMemLimit(limit int64, pods int) int64 { return limit - max(56<<20, int64(pods)*1434) }
