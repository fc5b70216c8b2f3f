package source

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Load reads every path: a file, a directory (recursively: *.yaml, *.yml and
// *.json, in lexical order), or "-" for stdin. I/O failures (a path that does
// not exist) are returned as an error naming the path; problems with the
// content are collected in d.Diags.
func (d *Decoder) Load(paths []string, stdin io.Reader) ([]Object, error) {
	var out [][]Object
	for _, p := range paths {
		if p == "-" {
			data, err := io.ReadAll(stdin)
			if err != nil {
				return nil, fmt.Errorf("reading stdin: %w", err)
			}
			out = append(out, d.Decode("-", data))
			continue
		}
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		objects, err := d.decodeFiles(files)
		if err != nil {
			return nil, err
		}
		out = append(out, objects)
	}
	return concat(out), nil
}

// concat is slices.Concat, without a copy when there is one part: a dump
// of 100k pods is one file of 200k objects.
func concat(parts [][]Object) []Object {
	if len(parts) == 1 {
		return parts[0]
	}
	return slices.Concat(parts...)
}

// decodeFiles reads and decodes files, several at a time on as many CPUs
// (a dump is often a directory of many files), and returns their objects
// and findings in the order of files. It stops at the first file, in that
// order, that cannot be read.
func (d *Decoder) decodeFiles(files []string) ([]Object, error) {
	type decodedFile struct {
		objects []Object
		part    *Decoder
		err     error
	}
	results := make([]decodedFile, len(files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(files); i = int(next.Add(1) - 1) {
				data, err := os.ReadFile(files[i])
				if err != nil {
					results[i].err = err
					continue
				}
				part := d.worker()
				results[i] = decodedFile{objects: part.decode(files[i], data), part: part}
			}
		})
	}
	wg.Wait()
	out := make([][]Object, 0, len(results))
	for _, r := range results {
		if r.err != nil {
			d.reportIgnored()
			return nil, r.err
		}
		out = append(out, r.objects)
		d.merge(r.part)
	}
	d.reportIgnored()
	return concat(out), nil
}

// expand lists the manifest files under p.
func expand(p string) ([]string, error) {
	info, err := os.Stat(p)
	if err != nil {
		// "nope.yaml: no such file or directory", without the "stat" of
		// the system call: the person typed a path, not a call.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: %w", p, pe.Err)
		}
		return nil, err
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && path != p && strings.HasPrefix(e.Name(), ".") {
			return filepath.SkipDir
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, path)
			}
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// File is the content of one manifest file.
type File struct {
	Name string
	Data []byte
}

// ReadFiles reads the manifest files under paths (no stdin), in the order
// Load reads them. A watcher reads first and decodes only what changed.
func ReadFiles(paths []string) ([]File, error) {
	var out []File
	for _, p := range paths {
		files, err := expand(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			out = append(out, File{Name: f, Data: data})
		}
	}
	return out, nil
}

// Fingerprint identifies an input: equal names and contents give equal
// fingerprints, so a watcher and whoever writes the files can agree on which
// input was applied.
func Fingerprint(files []File) string {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.Base(f.Name), len(f.Data))
		h.Write(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
