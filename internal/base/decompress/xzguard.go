package decompress

import (
	"bufio"
	"encoding/binary"
	"fmt"
)

// DictError ends an xz input whose block asks for a dictionary larger
// than MaxXZDict: the decoder would allocate what the block claims, up
// to 4 GiB, whatever the file's size.
type DictError struct{ Dict int64 }

func (e *DictError) Error() string {
	return fmt.Sprintf("xz: dictionary size exceeded: a block asks for %s, at most %s is allocated", Size(e.Dict), Size(MaxXZDict))
}

// xzGuard passes an xz file to the decoder and follows its framing
// (stream header, block headers, LZMA2 chunk headers, index, footer, as
// in the xz file format 1.2.0) to read each block header before the
// decoder does, and refuse one that asks for more than MaxXZDict. The
// decoder (ulikunitz/xz) takes a block's claim as it is: its
// ReaderConfig.DictCap is a lower bound, not a cap. Framing the guard
// cannot follow is the decoder's to reject: the guard then steps aside.
type xzGuard struct {
	r     *bufio.Reader
	seg   int64 // bytes to pass before the next piece of framing
	state xzState
	check int64 // size of each block's check field
	data  int64 // bytes of the current block's compressed data
	index int64 // bytes of the current index
	left  int64 // varints of the index still to read
	err   error
}

type xzState uint8

const (
	xzStreamHeader xzState = iota
	xzBlock                // a block header or the index
	xzChunk                // an LZMA2 chunk or its end
	xzBlockEnd             // padding and check
	xzIndexCount
	xzIndexRecords
	xzFooter
	xzStreamPadding
	xzOff // framing not understood: the decoder will say why
)

func (g *xzGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	for g.seg == 0 && g.state != xzOff {
		if g.err = g.next(); g.err != nil {
			return 0, g.err
		}
	}
	if g.state != xzOff && int64(len(p)) > g.seg {
		p = p[:g.seg]
	}
	n, err := g.r.Read(p)
	g.seg -= int64(n)
	return n, err
}

// next reads the framing that follows, without consuming it: how far it
// goes is the next segment.
func (g *xzGuard) next() error {
	switch g.state {
	case xzStreamHeader:
		b, err := g.r.Peek(12)
		if err != nil {
			g.state = xzOff
			return nil
		}
		g.check = checkSize(b[7] & 0x0f)
		g.seg, g.state = 12, xzBlock
	case xzBlock:
		b, err := g.r.Peek(1)
		if err != nil {
			g.state = xzOff
			return nil
		}
		if b[0] == 0 {
			g.seg, g.index, g.state = 1, 1, xzIndexCount
			return nil
		}
		size := (int(b[0]) + 1) * 4
		h, err := g.r.Peek(size)
		if err != nil {
			g.state = xzOff
			return nil
		}
		if dict, ok := blockDict(h); !ok {
			g.state = xzOff
			return nil
		} else if dict > MaxXZDict {
			return &DictError{Dict: dict}
		}
		g.seg, g.data, g.state = int64(size), 0, xzChunk
	case xzChunk:
		b, err := g.r.Peek(1)
		if err != nil {
			g.state = xzOff
			return nil
		}
		switch c := b[0]; {
		case c == 0:
			g.seg, g.state = 1, xzBlockEnd
		case c == 1 || c == 2:
			h, err := g.r.Peek(3)
			if err != nil {
				g.state = xzOff
				return nil
			}
			g.seg = 3 + int64(binary.BigEndian.Uint16(h[1:])) + 1
		case c >= 0x80:
			n := 5
			if c >= 0xc0 {
				n = 6 // with new properties
			}
			h, err := g.r.Peek(n)
			if err != nil {
				g.state = xzOff
				return nil
			}
			g.seg = int64(n) + int64(binary.BigEndian.Uint16(h[3:])) + 1
		default:
			g.state = xzOff
			return nil
		}
		g.data += g.seg
	case xzBlockEnd:
		g.seg, g.state = (4-g.data%4)%4+g.check, xzBlock
	case xzIndexCount, xzIndexRecords:
		b, _ := g.r.Peek(9)
		v, n := uvarint(b)
		if n == 0 {
			g.state = xzOff
			return nil
		}
		g.seg, g.index = int64(n), g.index+int64(n)
		if g.state == xzIndexCount {
			g.left, g.state = int64(v)*2, xzIndexRecords
			if v > 1<<40 {
				g.state = xzOff
			}
		} else {
			g.left--
		}
		if g.state == xzIndexRecords && g.left == 0 {
			g.state = xzFooter
		}
	case xzFooter:
		// The index's padding and CRC32, then the stream footer.
		g.seg, g.state = (4-g.index%4)%4+4+12, xzStreamPadding
	case xzStreamPadding:
		b, err := g.r.Peek(4)
		switch {
		case err != nil:
			g.state = xzOff
		case b[0] == 0xfd:
			g.state = xzStreamHeader
		case binary.LittleEndian.Uint32(b) == 0:
			g.seg = 4
		default:
			g.state = xzOff
		}
	}
	return nil
}

// checkSize is the size of a block's check field for a check type.
func checkSize(t byte) int64 {
	if t == 0 {
		return 0
	}
	return 4 << ((t - 1) / 3)
}

// blockDict reads a block header's LZMA2 dictionary size; ok is false
// when the header is not one the guard can read.
func blockDict(h []byte) (dict int64, ok bool) {
	flags := h[1]
	p := h[2 : len(h)-4] // without the CRC32
	for _, has := range []bool{flags&0x40 != 0, flags&0x80 != 0} {
		if has {
			_, n := uvarint(p)
			if n == 0 {
				return 0, false
			}
			p = p[n:]
		}
	}
	for range int(flags&3) + 1 {
		id, n := uvarint(p)
		if n == 0 {
			return 0, false
		}
		p = p[n:]
		size, n := uvarint(p)
		if n == 0 || uint64(len(p)-n) < size {
			return 0, false
		}
		props := p[n : n+int(size)]
		p = p[n+int(size):]
		if id == 0x21 { // LZMA2
			if len(props) != 1 || props[0] > 40 {
				return 0, false
			}
			c := props[0]
			if c == 40 {
				return 1<<32 - 1, true
			}
			return int64(2|c&1) << (c/2 + 11), true
		}
	}
	return 0, false
}

// uvarint reads xz's multibyte integer (at most 9 bytes); n is 0 when
// there is none.
func uvarint(b []byte) (v uint64, n int) {
	for i := 0; i < len(b) && i < 9; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}
