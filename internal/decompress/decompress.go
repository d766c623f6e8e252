// Package decompress reads a file whatever it was compressed with: support
// bundles and journal exports come gzip-, xz-, zstd- or bzip2-compressed,
// and their names cannot be trusted (a .log may be gzip, stdin has none),
// so the format is told by the magic number at the start of the content.
package decompress

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// MaxZstdWindow bounds the memory a zstd frame may ask for: 128 MiB is
// what `zstd --long` writes; a larger window is refused, not allocated.
const MaxZstdWindow = 128 << 20

var magics = []struct {
	name  string
	magic []byte
}{
	{"gzip", []byte{0x1f, 0x8b}},
	{"xz", []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}},
	{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd}},
	{"bzip2", []byte("BZh")},
}

// NewReader returns the content of r, decompressed when it starts with the
// magic number of gzip, xz, zstd or bzip2, and the format's name ("" when
// r is not compressed). Concatenated gzip and xz streams are read whole,
// as zcat and xzcat do. Close releases the decoder, not r.
func NewReader(r io.Reader) (io.ReadCloser, string, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(6)
	if err != nil && err != io.EOF {
		return nil, "", err
	}
	format := ""
	for _, m := range magics {
		if bytes.HasPrefix(head, m.magic) {
			format = m.name
			break
		}
	}
	switch format {
	case "gzip":
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, format, fmt.Errorf("gzip: %w", err)
		}
		return named{zr, format, zr}, format, nil
	case "xz":
		xr, err := xz.NewReader(br)
		if err != nil {
			return nil, format, fmt.Errorf("xz: %w", err)
		}
		return named{xr, format, nil}, format, nil
	case "zstd":
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(MaxZstdWindow))
		if err != nil {
			return nil, format, fmt.Errorf("zstd: %w", err)
		}
		return named{zr, format, zstdCloser{zr}}, format, nil
	case "bzip2":
		return named{bzip2.NewReader(br), format, nil}, format, nil
	}
	return io.NopCloser(br), "", nil
}

// named says which decoder failed: "gzip: unexpected EOF" for a
// truncated file, not a bare "unexpected EOF".
type named struct {
	r      io.Reader
	format string
	c      io.Closer
}

func (n named) Read(p []byte) (int, error) {
	k, err := n.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: %w", n.format, err)
	}
	return k, err
}

func (n named) Close() error {
	if n.c == nil {
		return nil
	}
	return n.c.Close()
}

type zstdCloser struct{ *zstd.Decoder }

func (z zstdCloser) Close() error { z.Decoder.Close(); return nil }
