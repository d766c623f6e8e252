package decompress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The same kernel log, compressed by gzip, xz, zstd and bzip2 themselves,
// reads back byte for byte; an uncompressed one passes through.
func TestReadsEachFormatByItsMagic(t *testing.T) {
	want, err := os.ReadFile("../../../testdata/kernlog/debian-6.12-kmod-leak.dmesg")
	if err != nil {
		t.Fatal(err)
	}
	for file, format := range map[string]string{
		"../../../testdata/decompress/dmesg.txt.gz":             "gzip",
		"../../../testdata/decompress/dmesg.txt.xz":             "xz",
		"../../../testdata/decompress/dmesg.txt.zst":            "zstd",
		"../../../testdata/decompress/dmesg.txt.bz2":            "bzip2",
		"../../../testdata/kernlog/debian-6.12-kmod-leak.dmesg": "",
	} {
		t.Run(format, func(t *testing.T) {
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r, got, err := NewReader(f, 0)
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
	f, err := os.Open("../../../testdata/decompress/truncated.txt.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, _, err := NewReader(f, 0)
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
		r, format, err := NewReader(strings.NewReader(in), 0)
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
	for _, file := range []string{"dmesg.txt.gz", "dmesg.txt.xz", "dmesg.txt.zst", "dmesg.txt.bz2", "blocks.txt.xz"} {
		b, err := os.ReadFile("../../../testdata/decompress/" + file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 512)])
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r, _, err := NewReader(bytes.NewReader(in), 1<<20)
		if err != nil {
			return
		}
		defer r.Close()
		_, _ = io.Copy(io.Discard, r)
	})
}

// compress runs a compressor of the system on in.
func compress(t *testing.T, in []byte, argv ...string) []byte {
	t.Helper()
	if _, err := exec.LookPath(argv[0]); err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A bomb (a few kilobytes that expand to gigabytes) is read up to the
// limit, then ends in an error that says so and how to raise it; an
// archive of exactly the limit reads whole.
func TestDecompressedSizeIsBounded(t *testing.T) {
	zeros := make([]byte, 1<<20)
	for _, argv := range [][]string{{"gzip", "-c"}, {"xz", "-c"}, {"zstd", "-c"}, {"bzip2", "-c"}} {
		t.Run(argv[0], func(t *testing.T) {
			z := compress(t, zeros, argv...)
			r, format, err := NewReader(bytes.NewReader(z), 1000)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, r)
			var le *LimitError
			if n != 1000 || !errors.As(err, &le) {
				t.Fatalf("read %d bytes, error %v; want 1000 and a *LimitError", n, err)
			}
			if want := format + ": decompresses to more than 1000 B: the rest is not read (--max-input raises the limit)"; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
			r, _, _ = NewReader(bytes.NewReader(z), 1<<20)
			if n, err := io.Copy(io.Discard, r); n != 1<<20 || err != nil {
				t.Errorf("at exactly the limit: %d bytes, %v", n, err)
			}
		})
	}
}

// setDict writes an LZMA2 dictionary code into the block header at off
// (a header of 12 bytes: size, flags, filter 0x21, 1, code, padding,
// CRC32) and mends its CRC32.
func setDict(b []byte, off int, code byte) []byte {
	b = bytes.Clone(b)
	b[off+4] = code
	binary.LittleEndian.PutUint32(b[off+8:], crc32.ChecksumIEEE(b[off:off+8]))
	return b
}

// An xz block may claim a dictionary of up to 4 GiB, which the decoder
// would allocate: a claim above MaxXZDict is refused, in the first block,
// in a later one, and in a later stream, and named as zstd's "window size
// exceeded" is.
func TestXZDictionaryIsBounded(t *testing.T) {
	one, err := os.ReadFile("../../../testdata/decompress/dmesg.txt.xz")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := os.ReadFile("../../../testdata/decompress/blocks.txt.xz") // a second block at 2272
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{
		"first block":  setDict(one, 12, 40),
		"second block": setDict(blocks, 2272, 40),
		"second stream": append(append(bytes.Clone(blocks), 0, 0, 0, 0),
			setDict(one, 12, 38)...),
	} {
		t.Run(name, func(t *testing.T) {
			r, _, err := NewReader(bytes.NewReader(in), 0)
			if err == nil {
				_, err = io.Copy(io.Discard, r)
			}
			var de *DictError
			if !errors.As(err, &de) || !strings.HasPrefix(err.Error(), "xz: dictionary size exceeded: a block asks for ") ||
				(name == "first block" && err.Error() != "xz: dictionary size exceeded: a block asks for 4.0 GiB, at most 128 MiB is allocated") ||
				strings.HasPrefix(err.Error(), "xz: xz:") {
				t.Errorf("error %v, want xz: dictionary size exceeded", err)
			}
		})
	}
	// A claim within the bound reads as before, blocks and streams
	// followed to the end.
	in := append(append(setDict(blocks, 2272, 30), 0, 0, 0, 0), setDict(one, 12, 20)...)
	r, _, err := NewReader(bytes.NewReader(in), 0)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, r); err != nil || n != 2*25555 {
		t.Errorf("%d bytes, %v", n, err)
	}
}

// A cut-short archive says it is truncated, in the words of the same
// message whatever the format, and names its format once.
func TestTruncatedArchiveSaysTruncated(t *testing.T) {
	for _, file := range []string{"dmesg.txt.gz", "dmesg.txt.xz", "dmesg.txt.zst", "dmesg.txt.bz2"} {
		t.Run(file, func(t *testing.T) {
			b, err := os.ReadFile("../../../testdata/decompress/" + file)
			if err != nil {
				t.Fatal(err)
			}
			r, format, err := NewReader(bytes.NewReader(b[:len(b)/2]), 0)
			if err == nil {
				_, err = io.Copy(io.Discard, r)
			}
			if want := format + ": unexpected end of data: the file is truncated"; err == nil || err.Error() != want {
				t.Errorf("error %v, want %q", err, want)
			}
		})
	}
}

// gzip names itself in its errors: the name is not doubled.
func TestBadHeaderNamesTheFormatOnce(t *testing.T) {
	_, _, err := NewReader(strings.NewReader("\x1f\x8bxxxxxxxxxxxxxxxxxxxxxx"), 0)
	if err == nil || err.Error() != "gzip: invalid header" {
		t.Errorf("error %v, want gzip: invalid header", err)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1G": 1 << 30, "1GiB": 1 << 30, "512MiB": 512 << 20, "512m": 512 << 20,
		"1048576": 1 << 20, "64K": 64 << 10, "2 GB": 2 << 30, "10B": 10} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "G", "-1G", "0", "1.5G", "1X", "1GiBB", "99999999999T"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
	for n, want := range map[int64]string{1 << 30: "1 GiB", 1<<32 - 1: "4.0 GiB", 1536: "1.5 KiB", 1000: "1000 B"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
