// Package decompress reads a file whatever it was compressed with: support
// bundles and journal exports come gzip-, xz-, zstd- or bzip2-compressed,
// and their names cannot be trusted (a .log may be gzip, stdin has none),
// so the format is told by the magic number at the start of the content.
//
// What a hostile archive can cost is bounded: the decompressed size (a
// few kilobytes of bzip2 expand to gigabytes), and the memory a decoder
// allocates on the archive's word (zstd's window, xz's dictionary).
package decompress

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/zstd"
	"github.com/ulikunitz/xz"
)

// MaxZstdWindow bounds the memory a zstd frame may ask for: 128 MiB is
// what `zstd --long` writes; a larger window is refused, not allocated.
const MaxZstdWindow = 128 << 20

// MaxXZDict bounds the dictionary an xz block may ask for, as
// MaxZstdWindow does zstd's window: xz -9 writes 64 MiB, and the format
// allows a claim of 4 GiB that the decoder would allocate.
const MaxXZDict = 128 << 20

// DefaultLimit is the decompressed size read by default: far more than
// any kernel log, dump or recording of a support bundle.
const DefaultLimit = 1 << 30

var magics = []struct {
	name  string
	magic []byte
}{
	{"gzip", []byte{0x1f, 0x8b}},
	{"xz", []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}},
	{"zstd", []byte{0x28, 0xb5, 0x2f, 0xfd}},
	{"bzip2", []byte("BZh")},
}

// LimitError ends a compressed input that decompresses to more than the
// limit given to NewReader: what was read before it stands.
type LimitError struct {
	Format string
	Limit  int64
}

func (e *LimitError) Error() string {
	return e.Format + ": decompresses to more than " + Size(e.Limit) + ": the rest is not read (--max-input raises the limit)"
}

// ErrTruncated is what a compressed input that ends too early reads as,
// whatever the decoder's own word for it.
var ErrTruncated = errors.New("unexpected end of data: the file is truncated")

// NewReader returns the content of r, decompressed when it starts with the
// magic number of gzip, xz, zstd or bzip2, and the format's name ("" when
// r is not compressed). Concatenated gzip and xz streams are read whole,
// as zcat and xzcat do. A compressed input yields at most limit bytes
// (DefaultLimit when limit <= 0), then a *LimitError; an uncompressed one
// is read as it is. An error reading r comes from Read, as it would
// without NewReader. Close releases the decoder, not r.
func NewReader(r io.Reader, limit int64) (io.ReadCloser, string, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	br := bufio.NewReaderSize(r, 64<<10)
	// A read error here comes back to the first Read: bufio keeps it.
	head, _ := br.Peek(6)
	format := ""
	for _, m := range magics {
		if bytes.HasPrefix(head, m.magic) {
			format = m.name
			break
		}
	}
	var dec io.Reader
	var closer io.Closer
	switch format {
	case "":
		return io.NopCloser(br), "", nil
	case "gzip":
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, format, wrap(format, err)
		}
		dec, closer = zr, zr
	case "xz":
		xr, err := xz.NewReader(&xzGuard{r: br})
		if err != nil {
			return nil, format, wrap(format, err)
		}
		dec = xr
	case "zstd":
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(MaxZstdWindow))
		if err != nil {
			return nil, format, wrap(format, err)
		}
		dec, closer = zr, zstdCloser{zr}
	case "bzip2":
		dec = bzip2.NewReader(br)
	}
	return &named{r: dec, format: format, c: closer, left: limit, limit: limit}, format, nil
}

// wrap names the decoder that failed: "gzip: unexpected end of data" for a
// truncated file, not a bare "unexpected EOF"; and once, although some
// decoders name themselves already ("gzip: invalid header").
func wrap(format string, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = ErrTruncated
	}
	var le *LimitError
	if errors.As(err, &le) || strings.HasPrefix(err.Error(), format+": ") {
		return err
	}
	return fmt.Errorf("%s: %w", format, err)
}

// named is a decoder's output, bounded, with its errors named.
type named struct {
	r      io.Reader
	format string
	c      io.Closer
	left   int64 // bytes still allowed
	limit  int64
	err    error // sticky: the limit or the decoder's error
}

func (n *named) Read(p []byte) (int, error) {
	if n.err != nil {
		return 0, n.err
	}
	if n.left <= 0 {
		// One byte more tells a file of exactly the limit from a larger one.
		var one [1]byte
		k, err := io.ReadFull(n.r, one[:])
		if k == 0 && errors.Is(err, io.EOF) {
			n.err = io.EOF
		} else {
			n.err = &LimitError{Format: n.format, Limit: n.limit}
		}
		return 0, n.err
	}
	if int64(len(p)) > n.left {
		p = p[:n.left]
	}
	k, err := n.r.Read(p)
	n.left -= int64(k)
	if err == io.EOF {
		n.err = io.EOF
	} else if err != nil {
		n.err = wrap(n.format, err)
	}
	return k, n.err
}

func (n *named) Close() error {
	if n.c == nil {
		return nil
	}
	return n.c.Close()
}

type zstdCloser struct{ *zstd.Decoder }

func (z zstdCloser) Close() error { z.Decoder.Close(); return nil }

// Size writes a byte count as a person would: "1 GiB", "64 MiB", "4.0
// GiB" (4 GiB less a byte), "1000 B".
func Size(n int64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n%(1<<u.shift) == 0 && n >= 1<<u.shift {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
		if n >= 1<<u.shift {
			return fmt.Sprintf("%.1f %s", float64(n)/float64(int64(1)<<u.shift), u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// ParseSize reads a size as --max-input takes it: a number of bytes with
// an optional unit, K, M, G or T (powers of 1024, with or without "iB"
// or "B"): "1G", "512MiB", "1048576".
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num := strings.TrimRight(t, "KMGTkmgtiBb ")
	unit := strings.ToUpper(strings.TrimSpace(t[len(num):]))
	var shift uint
	switch strings.TrimSuffix(strings.TrimSuffix(unit, "B"), "I") {
	case "":
		if unit != "" && unit != "B" {
			return 0, fmt.Errorf("%q: expected a size such as 1G, 512MiB or 1048576", s)
		}
	case "K":
		shift = 10
	case "M":
		shift = 20
	case "G":
		shift = 30
	case "T":
		shift = 40
	default:
		return 0, fmt.Errorf("%q: expected a size such as 1G, 512MiB or 1048576", s)
	}
	var v int64
	if _, err := fmt.Sscan(num, &v); err != nil || v <= 0 || fmt.Sprint(v) != num || v > (1<<62)>>shift {
		return 0, fmt.Errorf("%q: expected a size such as 1G, 512MiB or 1048576", s)
	}
	return v << shift, nil
}
