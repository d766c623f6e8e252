package main

import (
	"archive/tar"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

func writeFile(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// build writes the image of two fake binaries and returns the layout's
// directory.
func build(t *testing.T, dir string, when time.Time) string {
	t.Helper()
	lic := filepath.Join(dir, "licenses")
	writeFile(t, filepath.Join(lic, "Apache-2.0.txt"), "license text")
	amd := writeFile(t, filepath.Join(dir, "amd64"), "amd64 binary")
	arm := writeFile(t, filepath.Join(dir, "arm64"), "arm64 binary")
	out := filepath.Join(dir, "image")
	if err := run(out, "0.9.0", when, lic, []string{"amd64=" + amd, "arm64=" + arm}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestImageIsAnIndexOfOneImagePerArchitectureRunningTheExporter(t *testing.T) {
	when := time.Unix(1764201600, 0).UTC()
	p, err := layout.FromPath(build(t, t.TempDir(), when))
	if err != nil {
		t.Fatal(err)
	}
	outer, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	om, err := outer.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(om.Manifests) != 1 || om.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "0.9.0" {
		t.Fatalf("the layout's index: %+v, want one index named 0.9.0", om.Manifests)
	}
	idx, err := outer.ImageIndex(om.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 2 {
		t.Fatalf("%d images, want 2", len(im.Manifests))
	}
	for i, arch := range []string{"amd64", "arm64"} {
		d := im.Manifests[i]
		if d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != arch {
			t.Errorf("image %d: platform %+v, want linux/%s", i, d.Platform, arch)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if got := append(cf.Config.Entrypoint, cf.Config.Cmd...); strings.Join(got, " ") != "/usr/sbin/rdmatrace exporter --listen 127.0.0.1:9879" {
			t.Errorf("%s runs %q, want the exporter on loopback only", arch, got)
		}
		if len(cf.Config.ExposedPorts) != 0 {
			t.Errorf("%s exposes %v: a loopback listener is no port to publish", arch, cf.Config.ExposedPorts)
		}
		if !cf.Created.Time.Equal(when) {
			t.Errorf("%s created %v, want %v", arch, cf.Created.Time, when)
		}
		files := map[string]string{}
		tr := tar.NewReader(mutate.Extract(img))
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if !h.ModTime.Equal(when) {
				t.Errorf("%s: %s dated %v, want %v", arch, h.Name, h.ModTime, when)
			}
			b, _ := io.ReadAll(tr)
			files[h.Name] = string(b)
			if h.Name == "usr/sbin/rdmatrace" && h.Mode != 0o755 {
				t.Errorf("%s: the binary's mode is %o, want 755", arch, h.Mode)
			}
		}
		if files["usr/sbin/rdmatrace"] != arch+" binary" {
			t.Errorf("%s: /usr/sbin/rdmatrace is %q, want that architecture's binary", arch, files["usr/sbin/rdmatrace"])
		}
		if files["usr/share/doc/rdmatrace/Apache-2.0.txt"] != "license text" {
			t.Errorf("%s: no license in /usr/share/doc/rdmatrace: %v", arch, files)
		}
	}
}

// The same inputs give the same bytes, wherever and whenever built.
func TestImageIsReproducible(t *testing.T) {
	when := time.Unix(1764201600, 0).UTC()
	digest := func(dir string) string {
		b, err := os.ReadFile(filepath.Join(build(t, dir, when), "index.json"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a := digest(t.TempDir())
	time.Sleep(1100 * time.Millisecond) // a clock that leaked in would show
	if b := digest(t.TempDir()); a != b {
		t.Errorf("two builds differ:\n%s\n%s", a, b)
	}
}

func TestBadArgumentsAreNamed(t *testing.T) {
	dir := t.TempDir()
	lic := filepath.Join(dir, "licenses")
	writeFile(t, filepath.Join(lic, "x"), "x")
	for _, arg := range []string{"amd64", "=bin", "amd64=" + filepath.Join(dir, "missing")} {
		if err := run(filepath.Join(dir, "out"), "0.9.0", time.Unix(0, 0), lic, []string{arg}); err == nil {
			t.Errorf("%q: no error", arg)
		}
	}
}
