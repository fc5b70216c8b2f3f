package agent

import (
	"github.com/netpol/netpol/internal/diag"
	"github.com/netpol/netpol/internal/source"
)

// Input is where the agent reads the cluster: manifest files, or a
// Kubernetes API server through informers (package source/kube).
type Input interface {
	// Read returns the objects, the decoder's findings, and a fingerprint
	// that changes whenever the objects do.
	Read() ([]source.Object, diag.List, string, error)
	// Changed receives after changes, or is nil: the agent also reads the
	// input every Config.Interval.
	Changed() <-chan struct{}
}

// readier is an Input that can be not ready although it reads (kube.Watch
// while it cannot tell whether the API server serves an admin policy
// kind): the agent is then not ready either, whatever it programmed.
// An Input may also be a prometheus.Collector; /metrics serves it.
type readier interface{ Ready() error }

// Files is the file input: manifests under some paths, read again on every
// look and decoded only where their content changed (source.Memo), so
// that a change in a large manifest costs what the change touches.
type Files struct {
	Paths   []string
	Options source.Options

	memo        *source.Memo
	fingerprint string
	objects     []source.Object
	diags       diag.List
}

func (f *Files) Read() ([]source.Object, diag.List, string, error) {
	files, err := source.ReadFiles(f.Paths)
	if err != nil {
		return nil, nil, "", err
	}
	fp := source.Fingerprint(files)
	if fp != f.fingerprint {
		if f.memo == nil {
			f.memo = &source.Memo{Options: f.Options}
		}
		f.objects, f.diags = f.memo.Decode(files)
		f.fingerprint = fp
	}
	return f.objects, f.diags, f.fingerprint, nil
}

func (f *Files) Changed() <-chan struct{} { return nil }
