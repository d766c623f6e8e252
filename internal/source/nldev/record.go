package nldev

import (
	"encoding/binary"
	"fmt"
	"path/filepath"

	"github.com/mdlayher/netlink"

	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
)

// MarshalMessages frames replies exactly as the kernel sent them (nlmsghdr
// and payload, 4-byte aligned), so recorded fixtures are real kernel bytes.
func MarshalMessages(msgs []netlink.Message) ([]byte, error) {
	var out []byte
	for _, m := range msgs {
		b, err := m.MarshalBinary()
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
	}
	return out, nil
}

// UnmarshalMessages splits a recording back into messages.
func UnmarshalMessages(b []byte) ([]netlink.Message, error) {
	var msgs []netlink.Message
	for off := 0; off < len(b); {
		if len(b)-off < 16 {
			return msgs, fmt.Errorf("recording: %d trailing bytes at offset %d, expected a 16-byte netlink header", len(b)-off, off)
		}
		l := int(binary.NativeEndian.Uint32(b[off:]))
		if l < 16 || off+l > len(b) {
			return msgs, fmt.Errorf("recording: message at offset %d claims %d bytes, %d remain", off, l, len(b)-off)
		}
		var m netlink.Message
		if err := m.UnmarshalBinary(b[off : off+l]); err != nil {
			return msgs, fmt.Errorf("recording: message at offset %d: %w", off, err)
		}
		msgs = append(msgs, m)
		off += (l + 3) &^ 3
	}
	return msgs, nil
}

// RecordDir is RecordTo into dir, made now as owner's; nil when dir is "".
func RecordDir(dir string, owner *safefile.Owner, warn func(error)) (func(cmd uint16, b []byte, err error), error) {
	if dir == "" {
		return nil, nil
	}
	if err := safefile.MkdirAll(dir, owner); err != nil {
		return nil, err
	}
	return RecordTo(dir, owner, warn), nil
}

// RecordTo is a Client.Record that writes each raw reply to a file of dir
// (NN-cmdC.nl, in the order asked; dir exists), owned by owner: test fixtures
// (--nl-record). warn is told what could not be written.
func RecordTo(dir string, owner *safefile.Owner, warn func(error)) func(cmd uint16, b []byte, err error) {
	seq := 0
	return func(cmd uint16, b []byte, err error) {
		seq++
		if err == nil {
			err = safefile.WriteFile(filepath.Join(dir, fmt.Sprintf("%02d-cmd%d.nl", seq, cmd)), b, owner)
		}
		if err != nil {
			warn(err)
		}
	}
}
