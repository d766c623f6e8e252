package debugfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Input is one thing to read: a file, or standard input.
type Input struct {
	Name string
	Open func() (io.ReadCloser, error)
}

// Stdin is the name records from standard input carry.
const Stdin = "<stdin>"

// Inputs lists what a command-line path stands for: "-" is stdin, a file
// is itself, and a directory (a support bundle, or /sys/kernel/debug
// itself) stands for the files in its tree that hold RDMA state: every
// file in a directory named rdma_cm, and any other file whose first line
// is a legacy header, an `rdma res show` line or `rdma -j` JSON. Other
// files are skipped: a bundle holds much else. Symbolic links to
// directories are not followed, and only regular files are read.
func Inputs(path string, stdin io.Reader) ([]Input, error) {
	if path == "-" {
		return []Input{{Name: Stdin, Open: func() (io.ReadCloser, error) { return io.NopCloser(stdin), nil }}}, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []Input{fileInput(path)}, nil
	}
	// One unreadable file or directory must not hide the rest of a
	// bundle: errors are collected and the walk goes on.
	var out []Input
	var errs []error
	filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			errs = append(errs, err)
			if d != nil && d.IsDir() && p != path {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if filepath.Base(filepath.Dir(p)) == "rdma_cm" {
			out = append(out, fileInput(p))
			return nil
		}
		if ok, err := holdsRDMAState(p); err != nil {
			errs = append(errs, err)
		} else if ok {
			out = append(out, fileInput(p))
		}
		return nil
	})
	if len(errs) > 0 {
		return out, fmt.Errorf("walk %s: %w", printable(path), errors.Join(errs...))
	}
	return out, nil
}

func fileInput(p string) Input {
	return Input{Name: p, Open: func() (io.ReadCloser, error) { return os.Open(p) }}
}

func holdsRDMAState(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return false, err
	}
	return Recognize(head[:n]), nil
}

// Recognize reports whether the start of a file is RDMA state this package
// reads: a legacy header (after any grep prefix or head separator), an
// `rdma res show cm_id|qp` text line, or `rdma -j` output.
func Recognize(head []byte) bool {
	t := bytes.TrimLeft(head, " \t\r\n")
	if len(t) > 0 && t[0] == '[' {
		t = bytes.TrimLeft(t[1:], " \t\r\n")
		return bytes.HasPrefix(t, []byte(`{"ifindex":`)) || bytes.HasPrefix(t, []byte(`]`))
	}
	rd := NewReader(bytes.NewReader(nil), "")
	for len(t) > 0 {
		line, rest, _ := bytes.Cut(t, []byte("\n"))
		t = rest
		line = bytes.TrimSuffix(line, []byte("\r"))
		if _, ok := headTailSeparator(line); ok {
			continue
		}
		if _, body, ok := grepPrefix(line); ok {
			line = body
		}
		rd.split(line)
		switch {
		case len(rd.cells) == 0:
			continue
		case isHeader(rd.cells):
			return true
		case string(rd.cells[0]) == "link" && len(rd.cells) > 1 && bytes.IndexByte(rd.cells[1], '/') > 0:
			return true
		}
		return false
	}
	return false
}
