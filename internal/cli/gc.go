package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
)

// A command over a small input finishes before the garbage collector
// would free much: at 1k pods one explain allocates 10 MB, and the
// collector's cycles at the default 4 MB start were a tenth of its CPU.
// So when every -f file together is at most smallInput bytes, the
// command runs with collection off and a memory limit as its net: should
// the heap ever near smallInputHeap, the runtime collects as usual. A
// user's own GOGC or GOMEMLIMIT wins. The agent, which runs for days,
// never comes here.
const (
	smallInput     = 4 << 20   // about 4,000 pods with their policies
	smallInputHeap = 256 << 20 // the net
)

// collectLess turns collection off for a small input at paths (stdin's
// size is unknown: it keeps the default) and returns what undoes it.
func collectLess(paths []string) (undo func()) {
	undo = func() {}
	if len(paths) == 0 || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return undo
	}
	var size int64
	for _, p := range paths {
		if p == "-" {
			return undo
		}
		err := filepath.WalkDir(p, func(_ string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if size += info.Size(); size > smallInput {
				return filepath.SkipAll
			}
			return nil
		})
		if err != nil || size > smallInput {
			return undo
		}
	}
	percent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(smallInputHeap)
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}
