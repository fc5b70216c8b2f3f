package dataplane

import (
	"context"
	"errors"
	"fmt"

	gnft "github.com/google/nftables"
	"golang.org/x/sys/unix"
)

// Objects lists the names of one nftables table's chains, sets and maps
// over netlink, a dump of their declarations without a set element. It
// exists for the agent's drift check, which runs after every write of
// another program (kube-proxy's, a firewall's), at most once a second:
// through nft, knftables v0.0.20 lists the whole table, every set element
// included, once for each kind (its v0.0.19 listed each kind alone but
// could crash), and on a node of the 10k-pod cluster the check took
// 224 ms against 72 ms with v0.0.19 (BENCHMARKS.md, "Drift"). The dump is
// github.com/google/nftables' (the wire protocol is not written again
// here).
type Objects struct {
	Family byte   // unix.NFPROTO_INET for an inet table
	Table  string // the table's name
}

// ErrNoTable is the answer of List when the table does not exist.
var ErrNoTable = errors.New("no such table")

// List returns the names of the table's chains, sets and maps, in the
// calling thread's network namespace.
func (o Objects) List(ctx context.Context) (chains, sets, maps []string, err error) {
	c, err := gnft.New()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("netlink: %w", err)
	}
	family := gnft.TableFamily(o.Family)
	if _, err := c.ListTableOfFamily(o.Table, family); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, nil, nil, ErrNoTable
		}
		return nil, nil, nil, fmt.Errorf("listing table %s: %w", o.Table, err)
	}
	all, err := c.ListChainsOfTableFamily(family)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listing the chains of %s: %w", o.Table, err)
	}
	for _, ch := range all {
		if ch.Table != nil && ch.Table.Name == o.Table {
			chains = append(chains, ch.Name)
		}
	}
	ss, err := c.GetSets(&gnft.Table{Name: o.Table, Family: family})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("listing the sets of %s: %w", o.Table, err)
	}
	for _, s := range ss {
		if s.Anonymous {
			continue // a rule's own { ... }: not the renderer's, and nft cannot name it
		}
		if s.IsMap {
			maps = append(maps, s.Name)
		} else {
			sets = append(sets, s.Name)
		}
	}
	return chains, sets, maps, ctx.Err()
}
