// Package golden compares what a test produced with a file under the
// test's testdata/golden, and rewrites the file instead with -update
// (go test ./internal/lint -run TestGolden -update). Tests of any layer use
// it; nothing but tests imports it.
package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files from the current code")

// Check compares got with testdata/golden/name. A difference fails the test
// with the first line that differs, under the nearest title line above it
// (one starting with "== "), which names the input.
func Check(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it): %s", name, FirstDifference(string(want), got))
	}
}

// FirstDifference shows the first line that differs between want and got,
// with the title line above it.
func FirstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl == gl {
			continue
		}
		title := ""
		for j := min(i, len(w)-1); j >= 0; j-- {
			if strings.HasPrefix(w[j], "== ") {
				title = w[j]
				break
			}
		}
		return fmt.Sprintf("in %q, line %d:\nwant: %s\ngot:  %s", title, i+1, wl, gl)
	}
	return "(no difference)"
}
