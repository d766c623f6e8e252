package decompress

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"
)

// The same kernel log, compressed by gzip, xz, zstd and bzip2 themselves,
// reads back byte for byte; an uncompressed one passes through.
func TestReadsEachFormatByItsMagic(t *testing.T) {
	want, err := os.ReadFile("../../testdata/kernlog/debian-6.12-kmod-leak.dmesg")
	if err != nil {
		t.Fatal(err)
	}
	for file, format := range map[string]string{
		"../../testdata/decompress/dmesg.txt.gz":             "gzip",
		"../../testdata/decompress/dmesg.txt.xz":             "xz",
		"../../testdata/decompress/dmesg.txt.zst":            "zstd",
		"../../testdata/decompress/dmesg.txt.bz2":            "bzip2",
		"../../testdata/kernlog/debian-6.12-kmod-leak.dmesg": "",
	} {
		t.Run(format, func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, got, err := NewReader(f)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			b, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if got != format || !bytes.Equal(b, want) {
				t.Errorf("%s: format %q, %d bytes; want %q, %d bytes", file, got, len(b), format, len(want))
			}
		})
	}
}

// A cut-short archive is an error that names its format.
func TestTruncatedArchiveSaysWhichFormat(t *testing.T) {
	f, err := os.Open("../../testdata/decompress/truncated.txt.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, _, err := NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(r)
	if err == nil || !strings.HasPrefix(err.Error(), "gzip: ") {
		t.Errorf("error %v, want one starting with gzip:", err)
	}
}

// Short and empty inputs are not compressed.
func TestShortInputPassesThrough(t *testing.T) {
	for _, in := range []string{"", "\x1f", "BZ", "hello"} {
		r, format, err := NewReader(strings.NewReader(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		b, _ := io.ReadAll(r)
		if format != "" || string(b) != in {
			t.Errorf("%q: format %q, read %q", in, format, b)
		}
	}
}

// Hostile archives end in an error, not a panic; what they decompress to
// is read in bounded pieces by the caller.
func FuzzNewReader(f *testing.F) {
	for _, file := range []string{"dmesg.txt.gz", "dmesg.txt.xz", "dmesg.txt.zst", "dmesg.txt.bz2"} {
		b, err := os.ReadFile("../../testdata/decompress/" + file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 512)])
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r, _, err := NewReader(bytes.NewReader(in))
		if err != nil {
			return
		}
		defer r.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(r, 1<<20))
	})
}
