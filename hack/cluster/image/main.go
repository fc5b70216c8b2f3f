// Command image writes a container image as a docker-archive tarball, the
// format `ctr images import` loads, from directories and files on this
// machine: no Docker engine and no registry, which the machines hack/cluster
// runs on have neither of.
//
//	image -tag registry.k8s.io/pause:3.10.2 -o pause.tar -entrypoint /pause bin/pause=/pause
//	image -tag ghcr.io/netpol/netpol:dev -o netpol.tar -entrypoint netpol \
//	    ROOTFS_DIR bin/netpol=/usr/local/bin/netpol
//
// Each argument is one layer: a directory becomes the image's root as it
// is (symbolic links kept, owners set to root, device nodes left out: the
// runtime mounts /dev), and SRC=DEST puts one file at DEST, executable.
// Layers stack in the order given.
package main

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fl := flag.NewFlagSet("image", flag.ContinueOnError)
	tags := fl.String("tag", "", "the image's names with tags, as pods name it, separated by commas (required)")
	out := fl.String("o", "", "the docker-archive tarball to write (required)")
	entrypoint := fl.String("entrypoint", "", "the entrypoint, words separated by commas")
	cmd := fl.String("cmd", "", "the default arguments, words separated by commas")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *tags == "" || *out == "" || fl.NArg() == 0 {
		return errors.New("usage: image -tag REF[,REF] -o FILE [-entrypoint A,B] [-cmd A,B] LAYER...")
	}
	refs := map[name.Reference]v1.Image{}
	for _, t := range words(*tags) {
		ref, err := name.NewTag(t)
		if err != nil {
			return fmt.Errorf("-tag: %w", err)
		}
		refs[ref] = nil
	}

	tmp, err := os.MkdirTemp(filepath.Dir(*out), ".image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	img := empty.Image
	for i, arg := range fl.Args() {
		layerTar := filepath.Join(tmp, fmt.Sprintf("layer%d.tar", i))
		if err := writeLayerTar(layerTar, arg); err != nil {
			return fmt.Errorf("layer %s: %w", arg, err)
		}
		layer, err := tarball.LayerFromFile(layerTar, tarball.WithCompressionLevel(gzip.BestSpeed))
		if err != nil {
			return fmt.Errorf("layer %s: %w", arg, err)
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return err
		}
	}

	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	// containerd imports only the images of its own platform.
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint = words(*entrypoint)
	cf.Config.Cmd = words(*cmd)
	cf.Config.User = "0"
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}

	// Written beside the target and renamed, so that a failed run never
	// leaves a tarball that looks finished.
	part := filepath.Join(tmp, "image.tar")
	for ref := range refs {
		refs[ref] = img
	}
	if err := tarball.MultiRefWriteToFile(part, refs); err != nil {
		return err
	}
	return os.Rename(part, *out)
}

func words(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// writeLayerTar writes one layer's uncompressed tar: a directory's tree, or
// one SRC=DEST file.
func writeLayerTar(dst, arg string) (err error) {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	tw := tar.NewWriter(f)
	if src, dest, ok := strings.Cut(arg, "="); ok {
		err = addFile(tw, src, dest)
	} else {
		err = addTree(tw, arg)
	}
	if err != nil {
		return err
	}
	return tw.Close()
}

// addFile adds src at dest with its parent directories, executable, owned
// by root.
func addFile(tw *tar.Writer, src, dest string) error {
	dest = strings.TrimPrefix(path.Clean(dest), "/")
	if dest == "." || dest == "" {
		return fmt.Errorf("destination %q is not a file path", dest)
	}
	var parents []string
	for d := path.Dir(dest); d != "."; d = path.Dir(d) {
		parents = append(parents, d)
	}
	for i := len(parents) - 1; i >= 0; i-- {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: parents[i] + "/", Mode: 0o755}); err != nil {
			return err
		}
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: dest, Mode: 0o755, Size: st.Size(), ModTime: st.ModTime()}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = io.Copy(tw, in)
	return err
}

// addTree adds every directory, regular file and symbolic link under root,
// named relative to it, owned by root. Hard links are stored as copies and
// device nodes, sockets and pipes are left out.
func addTree(tw *tar.Writer, root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode()
		if !mode.IsDir() && !mode.IsRegular() && mode&fs.ModeSymlink == 0 {
			return nil
		}
		link := ""
		if mode&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if mode.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "root", "root"
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !mode.IsRegular() {
			return nil
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		_, err = io.Copy(tw, in)
		return err
	})
}
