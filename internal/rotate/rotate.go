// Package rotate writes a recording to a file that is rotated by size,
// as tcpdump's and ptcpdump's -C and -W do, but named as logrotate names
// them: FILE is the newest, FILE.1 the one before it, up to FILE.(W-1).
// A file is only cut after a whole line, so each one reads on its own.
package rotate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Writer is an io.WriteCloser of lines.
type Writer struct {
	path  string
	max   int64 // bytes a file may reach before the next line starts a new one; 0: no limit
	count int   // files kept, FILE included; 0: all
	f     *os.File
	size  int64
	// atLineStart says the current file ends after a whole line.
	atLineStart bool
}

// Create starts FILE (truncating it): rotated past maxBytes when that is
// not 0, keeping count files when that is not 0. A rotated recording
// replaces an earlier one: its FILE.1, FILE.2 ... are removed first.
func Create(path string, maxBytes int64, count int) (*Writer, error) {
	w := &Writer{path: path, max: maxBytes, count: count, atLineStart: true}
	if maxBytes > 0 {
		old, _ := filepath.Glob(path + ".*")
		for _, o := range old {
			if _, err := strconv.Atoi(strings.TrimPrefix(o, path+".")); err == nil {
				_ = os.Remove(o)
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w.f = f
	return w, nil
}

// Write writes p; a line that would begin past the limit begins a new
// file instead.
func (w *Writer) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if w.max > 0 && w.size >= w.max && w.atLineStart {
			if err := w.rotate(); err != nil {
				return written, err
			}
		}
		chunk := p
		if w.max > 0 {
			// Up to the end of the line under way: the file may be cut after it.
			if i := bytes.IndexByte(p, '\n'); i >= 0 {
				chunk = p[:i+1]
			}
		}
		n, err := w.f.Write(chunk)
		written += n
		w.size += int64(n)
		if n > 0 {
			w.atLineStart = chunk[n-1] == '\n'
		}
		if err != nil {
			return written, fmt.Errorf("write %s: %w", w.f.Name(), err)
		}
		p = p[n:]
	}
	return written, nil
}

// rotate shifts FILE.i to FILE.(i+1), drops what is past count, and
// starts FILE anew.
func (w *Writer) rotate() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", w.path, err)
	}
	name := func(i int) string {
		if i == 0 {
			return w.path
		}
		return w.path + "." + strconv.Itoa(i)
	}
	last := w.count - 1
	if w.count == 0 {
		last = 0
		for {
			if _, err := os.Stat(name(last + 1)); err != nil {
				break
			}
			last++
		}
		last++ // every file is kept: the oldest moves one further
	}
	if last == 0 {
		// -W 1: one file, started again.
		f, err := os.Create(w.path)
		if err != nil {
			return err
		}
		w.f, w.size, w.atLineStart = f, 0, true
		return nil
	}
	_ = os.Remove(name(last))
	for i := last - 1; i >= 0; i-- {
		if err := os.Rename(name(i), name(i+1)); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("rotate %s: %w", w.path, err)
		}
	}
	f, err := os.Create(w.path)
	if err != nil {
		return err
	}
	w.f, w.size, w.atLineStart = f, 0, true
	return nil
}

// Close closes the current file.
func (w *Writer) Close() error { return w.f.Close() }
