package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// The pictures in docs/ are what make docs-pictures draws from the
// recordings in testdata/docs, byte for byte: none was drawn by hand or
// edited after.
func TestDocsPicturesAreGenerated(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join("..", "..")
	data := filepath.Join(root, "testdata", "docs")
	if err := drawDocs(data, dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"top.png", "rping-sequence.svg", "slow-connect-sequence.svg"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(root, "docs", name))
		if err != nil {
			t.Fatal(err)
		}
		same := bytes.Equal(got, want)
		if !same && filepath.Ext(name) == ".png" {
			// The pixels, not the bytes: another Go's PNG encoder may
			// compress the same picture differently.
			same = samePixels(t, got, want)
		}
		if !same {
			t.Errorf("docs/%s is not what make docs-pictures draws from %s (run it)", name, data)
		}
	}
}

func samePixels(t *testing.T, a, b []byte) bool {
	t.Helper()
	ia, err := png.Decode(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	ib, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return false
	}
	if ia.Bounds() != ib.Bounds() {
		return false
	}
	r := ia.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if ia.At(x, y) != ib.At(x, y) {
				return false
			}
		}
	}
	return true
}

func TestReadLinks(t *testing.T) {
	ports, err := readLinks(filepath.Join("..", "..", "testdata", "docs", "top-link.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) == 0 || ports[0].DevName != "rxe0" || ports[0].State.String() != "ACTIVE" || ports[0].Netdev != "veth0" {
		t.Errorf("ports %+v", ports)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte("LINK STATE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readLinks(bad); err == nil {
		t.Error("no error for text where JSON was expected")
	}
}
