package tracer

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// Recordings of raw ring buffer records, for tests: a header line
// "rdmatrace-raw 2 OFFSET\n" (the clock offset, so wall times replay the
// same), then each record as a little-endian uint32 length and its bytes.
// Version 2 holds the per-kind records (a common header, then the kind's
// fields); version 1 held one record shared by every kind.

// rawVersion is the version of the recordings RawWriter writes.
const rawVersion = 2

// RawWriter appends records to a recording.
type RawWriter struct {
	w *bufio.Writer
}

// NewRawWriter starts a recording.
func NewRawWriter(w io.Writer, c Clock) *RawWriter {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "rdmatrace-raw %d %d\n", rawVersion, c.offset)
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
