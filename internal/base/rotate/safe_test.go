package rotate

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/safefile"
)

// Lines written in odd pieces through many cuts come back whole, in
// order, none lost or doubled, from FILE.(n) ... FILE.1 then FILE.
func TestRotationKeepsEveryLineInOrder(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rec.ndjson")
	w, err := Create(p, 10_000, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for i := 0; i < 5000; i++ {
		b := []byte(fmt.Sprintf("{\"n\":%d,\"pad\":\"%s\"}\n", i, strings.Repeat("x", i%300)))
		want.Write(b)
		k := i % len(b) // a line split over two Writes
		if _, err := w.Write(b[:k]); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(b[k:]); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	ents, _ := os.ReadDir(dir)
	nums := map[string]int{}
	var names []string
	for _, e := range ents {
		s := strings.TrimPrefix(e.Name(), "rec.ndjson")
		nums[e.Name()], _ = strconv.Atoi(strings.TrimPrefix(s, "."))
		names = append(names, e.Name())
		if st, _ := os.Stat(filepath.Join(dir, e.Name())); st.Mode() != 0o600 {
			t.Errorf("%s: mode %v, want -rw-------", e.Name(), st.Mode())
		}
	}
	sort.Slice(names, func(i, j int) bool { return nums[names[i]] > nums[names[j]] })
	var got bytes.Buffer
	for _, n := range names {
		b, _ := os.ReadFile(filepath.Join(dir, n))
		if len(b) > 0 && b[len(b)-1] != '\n' {
			t.Errorf("%s does not end with a line end", n)
		}
		got.Write(b)
	}
	if len(names) < 50 || !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("%d files; concatenated they hold %d bytes, want the %d written, in order", len(names), got.Len(), want.Len())
	}
}

// Someone who can write the directory re-creates FILE as a symbolic link
// to a file of root's, over and over, while the writer cuts: the new FILE
// replaces the link, and the victim is never written.
func TestRotationNeverFollowsARacedSymlink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("secret\n"), 0o600)
	p := filepath.Join(dir, "rec.ndjson")
	w, err := Create(p, 100, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			default:
			}
			if os.Symlink(victim, p) == nil {
				n++
			}
		}
	}()
	// Each line a cut; before files were made safely, 500 cuts were enough
	// for a link to win.
	line := []byte(strings.Repeat("y", 120) + "\n")
	for i := 0; i < 1000; i++ {
		if _, err := w.Write(line); err != nil {
			t.Errorf("write %d: %v", i, err)
			break
		}
	}
	close(stop)
	planted := <-done
	w.Close()
	if b, _ := os.ReadFile(victim); string(b) != "secret\n" {
		t.Errorf("the victim was written through one of %d planted links: it holds %d bytes", planted, len(b))
	}
}

// A name planted before the recording starts, FILE or a FILE.n the
// rotation numbers, is refused and named; nothing is removed, nothing
// written through.
func TestCreateRefusesPlantedLinks(t *testing.T) {
	for _, planted := range []string{"rec", "rec.1", "rec.2"} {
		t.Run(planted, func(t *testing.T) {
			dir := t.TempDir()
			victim := filepath.Join(t.TempDir(), "victim")
			os.WriteFile(victim, []byte("secret\n"), 0o600)
			os.WriteFile(filepath.Join(dir, "rec"), []byte("older\n"), 0o600)
			os.WriteFile(filepath.Join(dir, "rec.3"), []byte("older 3\n"), 0o600)
			os.Remove(filepath.Join(dir, planted))
			os.Symlink(victim, filepath.Join(dir, planted))
			w, err := Create(filepath.Join(dir, "rec"), 100, 3, nil)
			if err == nil {
				w.Write([]byte("new\n"))
				w.Close()
			}
			if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, planted)) || !strings.Contains(err.Error(), "symbolic link") {
				t.Errorf("Create = %v, want an error naming %s, a symbolic link", err, planted)
			}
			if b, _ := os.ReadFile(victim); string(b) != "secret\n" {
				t.Errorf("the victim holds %q", b)
			}
			if planted != "rec" {
				if b, _ := os.ReadFile(filepath.Join(dir, "rec")); string(b) != "older\n" {
					t.Errorf("rec holds %q, want the older recording untouched", b)
				}
			}
		})
	}
}

// Without a count a rotated recording keeps DefaultCount files: a cut
// renames every kept file, and would grow slower with each.
func TestWithoutCountKeepsDefaultCount(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(filepath.Join(dir, "rec"), 10, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < DefaultCount+20; i++ {
		fmt.Fprintf(w, "line %04d x\n", i) // 12 bytes: each line its own file
	}
	w.Close()
	ents, _ := os.ReadDir(dir)
	if len(ents) != DefaultCount {
		t.Errorf("%d files, want %d", len(ents), DefaultCount)
	}
	oldest := fmt.Sprintf("rec.%d", DefaultCount-1)
	if ls := lines(t, filepath.Join(dir, oldest)); ls[0] != "line 0020 x" {
		t.Errorf("%s holds %q, want line 0020", oldest, ls[0])
	}
}

// failAfter is a file on a disk that fills after left more bytes.
type failAfter struct {
	file
	left int
}

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) <= f.left {
		f.left -= len(p)
		return f.file.Write(p)
	}
	n, _ := f.file.Write(p[:f.left])
	f.left = 0
	return n, &os.PathError{Op: "write", Path: "rec", Err: syscall.ENOSPC}
}

// A full disk cuts a write in the middle of a line: the file ends at its
// last whole line, the error names the file, and nothing more is written.
func TestFullDiskLeavesWholeLines(t *testing.T) {
	for _, tc := range []struct {
		name     string
		max      int64
		failFile string
	}{
		{"one file", 0, "rec"},
		{"a rotated recording", 200, "rec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "rec")
			w, err := Create(p, tc.max, 3, nil)
			if err != nil {
				t.Fatal(err)
			}
			bw := bufio.NewWriterSize(w, 64) // cuts lines anywhere
			for i := 0; i < 10; i++ {
				fmt.Fprintf(bw, "{\"n\":%d,\"pad\":\"xxxxxxxxxxxx\"}\n", i)
			}
			bw.Flush()
			w.f = &failAfter{file: w.f, left: 45} // the disk fills in the second line
			var werr error
			for i := 10; i < 20 && werr == nil; i++ {
				_, werr = fmt.Fprintf(bw, "{\"n\":%d,\"pad\":\"xxxxxxxxxxxx\"}\n", i)
			}
			if werr == nil {
				werr = bw.Flush()
			}
			if werr == nil || !strings.Contains(werr.Error(), "no space left") || strings.Count(werr.Error(), p) != 1 {
				t.Errorf("write error %v, want ENOSPC naming %s once", werr, p)
			}
			if _, err := w.Write([]byte("later\n")); err == nil {
				t.Error("a write after the failure succeeded")
			}
			w.Close()
			ls := lines(t, p) // fails if the file ends inside a line
			if last := ls[len(ls)-1]; !strings.HasPrefix(last, `{"n":1`) || !strings.HasSuffix(last, `"}`) {
				t.Errorf("the last line is %q, want a whole event", last)
			}
		})
	}
}

// A file of this user's that is no part of the recording is left alone:
// only FILE.1 ... FILE.(count-1) are removed at the start.
func TestCreateRemovesOnlyTheNumbersItUses(t *testing.T) {
	dir := t.TempDir()
	keep := []string{"rec.3", "rec.10", "rec.1.gz", "rec.x"}
	for _, n := range append([]string{"rec", "rec.1", "rec.2"}, keep...) {
		os.WriteFile(filepath.Join(dir, n), []byte(n+"\n"), 0o644)
	}
	w, err := Create(filepath.Join(dir, "rec"), 100, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	for _, n := range keep {
		if b, _ := os.ReadFile(filepath.Join(dir, n)); string(b) != n+"\n" {
			t.Errorf("%s holds %q, want it untouched", n, b)
		}
	}
	for _, n := range []string{"rec.1", "rec.2"} {
		if _, err := os.Lstat(filepath.Join(dir, n)); err == nil {
			t.Errorf("%s, an earlier recording's, is still there", n)
		}
	}
}

// Under sudo every file of a rotation, and every cut, is the invoking
// user's, made as that user: where that user may not write, no recording
// starts; an earlier recording's file of root's is not removed for them.
func TestRotationUnderSudoIsTheInvokers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to act as another user")
	}
	owner := &safefile.Owner{UID: 65534, GID: 65534}
	top, err := os.MkdirTemp("", "rotate-test-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(top)
	os.Chmod(top, 0o755) // as root's /etc: the user may not write it
	if _, err := Create(filepath.Join(top, "rec"), 100, 3, owner); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("Create in a directory of root's = %v, want permission denied", err)
	}
	dir := filepath.Join(top, "user")
	os.Mkdir(dir, 0o755)
	os.Chown(dir, 65534, 65534)
	p := filepath.Join(dir, "rec")
	os.WriteFile(p+".1", []byte("root's\n"), 0o600) // left by a run of root's
	if _, err := Create(p, 100, 3, owner); err == nil || !strings.Contains(err.Error(), "belongs to uid 0") {
		t.Errorf("Create over a recording of root's = %v, want a refusal", err)
	}
	os.Remove(p + ".1")
	w, err := Create(p, 100, 3, owner)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 40; i++ {
		fmt.Fprintf(w, "line %02d of a recording\n", i)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rec", "rec.1", "rec.2"} {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if s := st.Sys().(*syscall.Stat_t); s.Uid != 65534 || st.Mode() != 0o600 {
			t.Errorf("%s: uid %d mode %v, want 65534's -rw-------", name, s.Uid, st.Mode())
		}
	}
}
