// Package dataplane is the bottom of DESIGN.md's data flow: the kernel
// pieces below the rules that nft loads. Conntrack cuts connections that a
// policy change denies; Elements writes set and map elements over netlink,
// where nft is too slow for one element; Objects lists a table's chains,
// sets and maps, Generation reads nf_tables' ruleset generation, and
// RouteDevices finds the interface a pod's address is routed out of. Of
// netpol it imports l4 only; of the kernel's libraries netlink
// (vishvananda), google/nftables (for listing) and x/sys/unix.
//
// Elements speaks nf_tables' netlink by hand, for a measured reason
// (BenchmarkElementsPeers, BENCHMARKS.md "Libraries of the field"):
// github.com/google/nftables, the library of the field, takes the same
// time for the batches of a relabel (13-14 ms for 1 or 100 addresses
// added and deleted: the kernel's grace period after a delete is all of
// it), but cannot send 10,000 interval elements in one transaction
// ("message too long": it sends a batch in one sendmsg without making the
// socket's buffer room for it), and the agent's first sync after a slow
// informer list sends 30,000 (TestLabElementsLargeBatch), all or nothing.
package dataplane
