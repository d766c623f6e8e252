package main

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
)

// blob is a minimal BTF: header, typeLen bytes of types, strLen of strings.
func blob(typeLen, strLen uint32) []byte {
	h := make([]byte, 24)
	copy(h, []byte{0x9f, 0xeb, 1, 0})
	le := binary.LittleEndian
	le.PutUint32(h[4:], 24)
	le.PutUint32(h[12:], typeLen)
	le.PutUint32(h[16:], typeLen)
	le.PutUint32(h[20:], strLen)
	return append(h, bytes.Repeat([]byte{7}, int(typeLen+strLen))...)
}

func TestFind(t *testing.T) {
	b := blob(16, 5)
	img := append(append([]byte("kernel text"), b...), "more data"...)
	got, err := find(img)
	if err != nil || !bytes.Equal(got, b) {
		t.Fatalf("find = %d bytes, %v; want the %d-byte blob", len(got), err, len(b))
	}
	if _, err := find([]byte("no btf here")); err == nil || !strings.Contains(err.Error(), "no BTF header") {
		t.Errorf("no BTF: err = %v", err)
	}
	two := append(append([]byte{}, img...), b...)
	if _, err := find(two); err == nil || !strings.Contains(err.Error(), "more than one") {
		t.Errorf("two BTF: err = %v", err)
	}
	// A header whose sections run past the end is not BTF.
	cut := blob(1000, 5)[:100]
	if _, err := find(cut); err == nil {
		t.Errorf("truncated BTF accepted")
	}
}
