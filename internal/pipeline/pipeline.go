// Package pipeline runs decoded objects through the layers of DESIGN.md's
// data flow — state, policy, engine — in one call, so that every front end
// (the CLI, scenarios, the agent) builds its engine the same way. It imports
// those layers and is imported only by front ends.
package pipeline

import (
	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/engine"
	"github.com/netpol/netpol/internal/policy"
	"github.com/netpol/netpol/internal/source"
	"github.com/netpol/netpol/internal/state"
)

// Options of the layers below the decoder.
type Options struct {
	ReplicaCap               int // 0: state.DefaultReplicaCap
	LegacyNamespaceIsolation bool
}

// Build returns the engine over objects with every finding of the way:
// decode findings (passed in), cluster and policy validation, and the
// equal-priority warnings. When the findings hold an error the engine is nil
// and err is the diag.InputError.
func Build(objects []source.Object, decoded diag.List, opts Options) (*engine.Engine, diag.List, error) {
	diags := append(diag.List(nil), decoded...)
	cluster, more := state.Build(objects, state.Options{ReplicaCap: opts.ReplicaCap})
	diags = append(diags, more...)
	set, more := policy.Normalize(cluster.Policies)
	diags = append(diags, more...)
	if err := diags.Err(); err != nil {
		return nil, diags, err
	}
	e := engine.New(cluster, set, engine.Options{LegacyNamespaceIsolation: opts.LegacyNamespaceIsolation})
	return e, append(diags, e.PriorityOverlaps()...), nil
}
