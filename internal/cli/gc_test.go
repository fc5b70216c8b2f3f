package cli

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// TestCollectLess: collection is off for a small input and back as it was
// after; stdin, a large input and a user's GOGC keep the default.
func TestCollectLess(t *testing.T) {
	dir := t.TempDir()
	small, large := filepath.Join(dir, "small.yaml"), filepath.Join(dir, "large.yaml")
	if err := os.WriteFile(small, []byte("kind: Namespace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(large, make([]byte, smallInput+1), 0o644); err != nil {
		t.Fatal(err)
	}
	percent := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	before := percent()
	undo := collectLess([]string{small})
	if percent() != -1 {
		t.Errorf("a small input: GC percent %d, want off", percent())
	}
	undo()
	if percent() != before {
		t.Errorf("after: GC percent %d, want %d", percent(), before)
	}
	for name, paths := range map[string][]string{"stdin": {"-"}, "large": {small, large}, "dir with large": {dir}} {
		undo := collectLess(paths)
		if percent() != before {
			t.Errorf("%s: GC percent %d, want %d", name, percent(), before)
		}
		undo()
	}
	t.Setenv("GOGC", "100")
	undo = collectLess([]string{small})
	if percent() != before {
		t.Errorf("GOGC set: GC percent %d, want %d", percent(), before)
	}
	undo()
}
