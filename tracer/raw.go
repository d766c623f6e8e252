package tracer

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// Recordings of raw ring buffer records, for tests: a header line
// "rdmatrace-raw 1 OFFSET\n" (the clock offset, so wall times replay the
// same), then each record as a little-endian uint32 length and its bytes.

// RawWriter appends records to a recording.
type RawWriter struct {
	w *bufio.Writer
}

// NewRawWriter starts a recording.
func NewRawWriter(w io.Writer, c Clock) *RawWriter {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "rdmatrace-raw 1 %d\n", c.offset)
	return &RawWriter{w: bw}
}

// Write appends one record.
func (r *RawWriter) Write(rec []byte) error {
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], uint32(len(rec)))
	r.w.Write(n[:])
	_, err := r.w.Write(rec)
	return err
}

// Flush writes out what is buffered.
func (r *RawWriter) Flush() error { return r.w.Flush() }

// ReadRaw reads a recording: its clock and its records.
func ReadRaw(rd io.Reader) (Clock, [][]byte, error) {
	br := bufio.NewReader(rd)
	var version int
	var offset int64
	if _, err := fmt.Fscanf(br, "rdmatrace-raw %d %d\n", &version, &offset); err != nil || version != 1 {
		return Clock{}, nil, fmt.Errorf("not an rdmatrace-raw 1 recording: %v", err)
	}
	var recs [][]byte
	for {
		var n [4]byte
		if _, err := io.ReadFull(br, n[:]); err == io.EOF {
			return FixedClock(offset), recs, nil
		} else if err != nil {
			return Clock{}, recs, fmt.Errorf("record %d: truncated length: %w", len(recs)+1, err)
		}
		l := binary.LittleEndian.Uint32(n[:])
		if l > 1<<16 {
			return Clock{}, recs, fmt.Errorf("record %d: length %d, expected at most 65536", len(recs)+1, l)
		}
		rec := make([]byte, l)
		if _, err := io.ReadFull(br, rec); err != nil {
			return Clock{}, recs, fmt.Errorf("record %d: truncated: %w", len(recs)+1, err)
		}
		recs = append(recs, rec)
	}
}
