package main

import (
	"bytes"
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
		if !bytes.Equal(got, want) {
			t.Errorf("docs/%s is not what make docs-pictures draws from %s (run it)", name, data)
		}
	}
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
