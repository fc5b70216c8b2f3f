package compile

import (
	"fmt"
	"strconv"
)

// Kernel object names. A set, a table's chains and an audit's log chain
// are named after what they stand for (a peer's key, a table's content, an
// audit's decision) through a 48-bit hash, so that equal things get equal
// names on every node and after every restart, and a renderer keeps what it
// programmed under a name it has seen. 48 bits is short enough for the
// kernel's names and log prefixes, and short enough that a tenant finds two
// keys of one hash in a 2^24 search: a name must still never stand for two
// things, or one rule takes the other's addresses.
//
// namer gives each key a name no other key of the same kind holds: the
// hash of the key, and on a collision the first free value after it. A name is free when no key held it in this
// pass or the last one; a key keeps the name it had in the last pass. So
// names are stable from pass to pass, a key that collides is the one that
// came second (its name depends on which came first only after a restart,
// when the renderer reconciles the whole table anyway), and a renderer that
// remembers the names of the last pass (nft's chain cache) never meets a
// name that stood for something else then.
type namer struct {
	last, next           map[string]string // kind and key -> name
	lastOwner, nextOwner map[string]string // name -> kind and key
}

func newNamer() *namer {
	return &namer{next: map[string]string{}, nextOwner: map[string]string{}}
}

// roll starts a pass: the names of the one that ends become the last ones.
func (n *namer) roll() {
	n.last, n.lastOwner = n.next, n.nextOwner
	n.next, n.nextOwner = make(map[string]string, len(n.last)), make(map[string]string, len(n.lastOwner))
}

// name returns the name of key among the names that start with prefix.
func (n *namer) name(prefix, key string) string {
	k := prefix + "\x00" + key
	if name, ok := n.next[k]; ok {
		return name
	}
	name, ok := n.last[k]
	if !ok {
		h := shortHash(key)
		name = prefix + h
		// On a collision, the next hash values in turn (as open
		// addressing does): the first free one is found within as many
		// steps as there are names, whatever the hash.
		v, err := strconv.ParseUint(h, 16, 64)
		for i := uint64(1); !n.free(name, k); i++ {
			if err != nil { // not hex: a test's hash
				name = prefix + h + strconv.FormatUint(i, 10)
				continue
			}
			name = prefix + fmt.Sprintf("%0*x", len(h), (v+i)&(1<<(4*len(h))-1))
		}
	}
	n.next[k], n.nextOwner[name] = name, k
	return name
}

// free reports whether name may be k's: no other key holds it.
func (n *namer) free(name, k string) bool {
	if owner, ok := n.nextOwner[name]; ok {
		return owner == k
	}
	if owner, ok := n.lastOwner[name]; ok {
		return owner == k
	}
	return true
}

// keep records that key holds name in this pass (an IR made by another
// namer, whose names this one must not give away).
func (n *namer) keep(prefix, key, name string) {
	k := prefix + "\x00" + key
	n.next[k], n.nextOwner[name] = name, k
}
