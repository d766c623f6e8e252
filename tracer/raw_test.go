package tracer

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// ReadRaw reads a recording of RawWriter: its clock and its records.
func ReadRaw(rd io.Reader) (Clock, [][]byte, error) {
	br := bufio.NewReader(rd)
	var version int
	var offset int64
	if _, err := fmt.Fscanf(br, "rdmatrace-raw %d %d\n", &version, &offset); err != nil {
		return Clock{}, nil, fmt.Errorf("not an rdmatrace-raw recording: %v", err)
	}
	if version != 1 && version != rawVersion {
		return Clock{}, nil, fmt.Errorf("an rdmatrace-raw %d recording: this reader knows versions 1 and %d", version, rawVersion)
	}
	var recs [][]byte
	for {
		var n [4]byte
		if _, err := io.ReadFull(br, n[:]); err == io.EOF {
			return Clock{offset: offset}, recs, nil
		} else if err != nil {
			return Clock{}, recs, fmt.Errorf("record %d: truncated length: %w", len(recs)+1, err)
		}
		l := binary.LittleEndian.Uint32(n[:])
		if l > 1<<16 {
			return Clock{}, recs, fmt.Errorf("record %d: length %d, expected at most 65536", len(recs)+1, l)
		}
		rec := make([]byte, l)
		var err error
		if _, err = io.ReadFull(br, rec); err != nil {
			return Clock{}, recs, fmt.Errorf("record %d: truncated: %w", len(recs)+1, err)
		}
		if version == 1 { // the single record of old: as today's record of its kind
			if rec, err = convertV1(rec); err != nil {
				return Clock{}, recs, fmt.Errorf("record %d: %w", len(recs)+1, err)
			}
		}
		recs = append(recs, rec)
	}
}
