package elftest

import (
	"bytes"
	"compress/zlib"
	"io"
	"testing"
)

// Zeros is a zlib stream of exactly n zeros, its checksum right.
func TestZerosDecompressesToZeros(t *testing.T) {
	for _, n := range []uint64{1, 2, 258, 259, 260, 1000, 10<<20 + 7} {
		r, err := zlib.NewReader(bytes.NewReader(Zeros(t, n)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("%d zeros: %v", n, err)
		}
		if uint64(len(got)) != n || bytes.IndexFunc(got, func(r rune) bool { return r != 0 }) >= 0 {
			t.Errorf("%d zeros: %d bytes", n, len(got))
		}
	}
	if n := len(Zeros(t, 4<<30)); n > 4<<20 {
		t.Errorf("4 GiB of zeros in %d bytes", n)
	}
}
