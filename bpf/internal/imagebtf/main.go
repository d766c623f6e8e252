// Command imagebtf copies the kernel's BTF out of a boot Image (arm64's
// vmlinuz is the flat Image, with no ELF sections to read .BTF from):
//
//	go run ./bpf/internal/imagebtf IMAGE OUT
//
// It finds the BTF header (magic 0xeB9F, version 1, a 24-byte header whose
// string section follows the type section) and writes the header and both
// sections, as /sys/kernel/btf/vmlinux would give them. More than one
// candidate, or none, is an error: an ambiguous guess is worse than none.
package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: imagebtf IMAGE OUT")
		os.Exit(2)
	}
	img, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagebtf:", err)
		os.Exit(1)
	}
	btf, err := find(img)
	if err != nil {
		fmt.Fprintf(os.Stderr, "imagebtf: %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	if err := os.WriteFile(os.Args[2], btf, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "imagebtf:", err)
		os.Exit(1)
	}
}

// find returns the one well-formed BTF blob in img.
func find(img []byte) ([]byte, error) {
	magic := []byte{0x9f, 0xeb, 1, 0, 24, 0, 0, 0} // little endian: magic, version 1, flags 0, hdr_len 24
	var found []byte
	for off := 0; ; off++ {
		i := bytes.Index(img[off:], magic)
		if i < 0 {
			break
		}
		off += i
		if off+24 > len(img) {
			break
		}
		le := binary.LittleEndian
		typeOff, typeLen := le.Uint32(img[off+8:]), le.Uint32(img[off+12:])
		strOff, strLen := le.Uint32(img[off+16:]), le.Uint32(img[off+20:])
		end := uint64(off) + 24 + uint64(strOff) + uint64(strLen)
		if typeOff != 0 || strOff != typeLen || strLen == 0 || end > uint64(len(img)) {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("more than one BTF header (a second at offset %d)", off)
		}
		found = img[off:end]
	}
	if found == nil {
		return nil, fmt.Errorf("no BTF header (magic 0xeB9F, version 1)")
	}
	return found, nil
}
