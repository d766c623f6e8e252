// Command ociimage writes rdmatrace's container image as an OCI image
// layout: an index with one image per architecture, each one layer (the
// static binary at /usr/sbin/rdmatrace and the licenses) on an empty base,
// every time stamp the given epoch, so that one commit gives the same
// bytes. It needs no container engine; pushing is crane's or skopeo's.
//
//	ociimage -out DIR -version 0.9.0 -epoch 1764201600 amd64=dist/rdmatrace-amd64 arm64=...
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The exporter on loopback only, as the packages' service runs it: the
// metrics name every RDMA owner on the node, so serving the network is a
// choice made with --listen (and TLS: --web.config.file). The DaemonSet
// (deploy/kubernetes, deploy/helm) gives its own arguments, kube-rbac-proxy
// in front.
var (
	entrypoint = []string{"/usr/sbin/rdmatrace"}
	cmd        = []string{"exporter", "--listen", "127.0.0.1:9879"}
)

func main() {
	out := flag.String("out", "", "the OCI image layout `DIR` to write (emptied first)")
	version := flag.String("version", "", "the image's version: its tag and label")
	epoch := flag.Int64("epoch", 0, "every time stamp, in seconds since 1970 (SOURCE_DATE_EPOCH)")
	licenses := flag.String("licenses", "LICENSES", "the `DIR` whose files go to /usr/share/doc/rdmatrace")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: ociimage -out DIR -version V -epoch N ARCH=BINARY...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || *version == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*out, *version, time.Unix(*epoch, 0).UTC(), *licenses, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(out, version string, when time.Time, licenseDir string, bins []string) error {
	docs, err := readDir(licenseDir)
	if err != nil {
		return err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arg := range bins {
		arch, bin, ok := strings.Cut(arg, "=")
		if !ok || arch == "" || bin == "" {
			return fmt.Errorf("%q: want ARCH=BINARY", arg)
		}
		binary, err := os.ReadFile(bin)
		if err != nil {
			return err
		}
		img, err := image(arch, version, when, binary, docs)
		if err != nil {
			return fmt.Errorf("%s: %w", arch, err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: cf.Platform()},
		})
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	// The tag as the layout's name for it: skopeo's oci:DIR:TAG.
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": version,
	}))
}

func image(arch, version string, when time.Time, binary []byte, docs map[string][]byte) (v1.Image, error) {
	files := map[string]file{"usr/sbin/rdmatrace": {binary, 0o755}}
	for name, b := range docs {
		files["usr/share/doc/rdmatrace/"+name] = file{b, 0o644}
	}
	layerTar, err := tarOf(files, when)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: v1.Time{Time: when}, CreatedBy: "rdmatrace's make image"},
	})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS = "linux"
	cf.Architecture = arch
	if arch == "arm64" {
		cf.Variant = "v8"
	}
	cf.Created = v1.Time{Time: when}
	cf.Config = v1.Config{
		Entrypoint: entrypoint,
		Cmd:        cmd,
		User:       "0",
		Labels: map[string]string{
			"org.opencontainers.image.title":       "rdmatrace",
			"org.opencontainers.image.version":     version,
			"org.opencontainers.image.source":      "https://github.com/rdmatrace/rdmatrace",
			"org.opencontainers.image.licenses":    "Apache-2.0 AND GPL-2.0-only",
			"org.opencontainers.image.description": "rdmatrace's Prometheus exporter: RDMA resources, owners and events",
		},
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: when})
}

type file struct {
	data []byte
	mode int64
}

// tarOf is a layer of files and their parent directories, sorted, owned
// by root, every time stamp when.
func tarOf(files map[string]file, when time.Time) ([]byte, error) {
	dirs := map[string]bool{}
	for name := range files {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	names := make([]string, 0, len(files)+len(dirs))
	for d := range dirs {
		names = append(names, d+"/")
	}
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range names {
		h := &tar.Header{Name: name, ModTime: when, Format: tar.FormatUSTAR, Uname: "root", Gname: "root"}
		if strings.HasSuffix(name, "/") {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		} else {
			f := files[name]
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, f.mode, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(files[name].data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func readDir(dir string) (map[string][]byte, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = b
	}
	return out, nil
}
