package debugfs

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// within runs f and fails t when it has not returned after d: the code
// under test must not block on what it reads (a FIFO, trace_pipe).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s still blocked after %v", what, d)
	}
}

const cmLine = "link rxe0/1 cm-idn 3 state CONNECT ps TCP\n"

// skips returns what the error of Inputs says was skipped, by path.
func skips(t *testing.T, err error) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		walk = j.Unwrap()
	} else if err != nil {
		walk = []error{err}
	}
	for _, e := range walk {
		var s *SkipError
		if !errors.As(e, &s) {
			t.Errorf("a failure, not a skip: %v", e)
			continue
		}
		out[s.Path] = s.Why
	}
	return out
}

func mkfifo(t *testing.T, p string) {
	t.Helper()
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
}

func TestAWalkSkipsAFIFOAndSaysSo(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "k.txt"), []byte(cmLine), 0o644)
	os.Mkdir(filepath.Join(dir, "rdma_cm"), 0o755)
	mkfifo(t, filepath.Join(dir, "fifo"))
	mkfifo(t, filepath.Join(dir, "rdma_cm", "mlx4_0"))
	var ins []Input
	var err error
	within(t, 10*time.Second, "Inputs", func() { ins, err = Inputs(dir, nil) })
	if len(ins) != 1 || ins[0].Name != filepath.Join(dir, "k.txt") {
		t.Errorf("inputs %v, want k.txt alone", ins)
	}
	got := skips(t, err)
	for _, p := range []string{"fifo", "rdma_cm/mlx4_0"} {
		if why := got[filepath.Join(dir, p)]; why != "not a regular file (a FIFO)" {
			t.Errorf("%s: skipped %q, want a note that it is a FIFO", p, why)
		}
	}
}

// TestAFileReplacedByAFIFOAfterTheWalkDoesNotBlock: the walk saw a regular
// file, which is a FIFO with no writer by the time it is opened.
func TestAFileReplacedByAFIFOAfterTheWalkDoesNotBlock(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rdma_cm", "mlx4_0")
	os.Mkdir(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte("mthca0 0 0.0.0.0:7174 TCP LISTEN 0\n"), 0o644)
	ins, err := Inputs(dir, nil)
	if err != nil || len(ins) != 1 {
		t.Fatalf("inputs %v, %v", ins, err)
	}
	os.Remove(p)
	mkfifo(t, p)
	within(t, 10*time.Second, "Open", func() {
		rc, err := ins[0].Open()
		var s *SkipError
		if !errors.As(err, &s) {
			t.Errorf("Open of a FIFO: %v, %v; want a *SkipError", rc, err)
		}
		if rc != nil {
			rc.Close()
		}
	})
}

// TestANamedFIFOIsReadAndItsOpenDoesNotBlock: `parse <(zcat dump.gz)`
// names a pipe; it is read. One with no writer reads as empty.
func TestANamedFIFOIsReadAndItsOpenDoesNotBlock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo")
	mkfifo(t, p)
	ins, err := Inputs(p, nil)
	if err != nil || len(ins) != 1 {
		t.Fatalf("inputs %v, %v", ins, err)
	}
	within(t, 10*time.Second, "reading a FIFO without a writer", func() {
		rc, err := ins[0].Open()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		if b, err := io.ReadAll(rc); len(b) != 0 || err != nil {
			t.Errorf("read %q, %v; want nothing", b, err)
		}
	})
}

// TestATracefsMountIsWalkedWithoutBlocking mounts tracefs (root only) and
// walks it, and a directory it is mounted in, and reads trace_pipe named
// on its own: trace_pipe and per_cpu/*/trace_pipe_raw would block for
// ever and take events from whoever else reads them.
func TestATracefsMountIsWalkedWithoutBlocking(t *testing.T) {
	top := t.TempDir()
	os.WriteFile(filepath.Join(top, "k.txt"), []byte(cmLine), 0o644)
	mnt := filepath.Join(top, "tracing")
	os.Mkdir(mnt, 0o755)
	if err := syscall.Mount("nodev", mnt, "tracefs", 0, ""); err != nil {
		t.Skipf("mount tracefs: %v (needs root)", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })

	t.Run("the tracefs root", func(t *testing.T) {
		within(t, 60*time.Second, "parse of a tracefs mount", func() {
			// Nothing there is saved state: nothing is read, nothing
			// is said.
			ins, err := Inputs(mnt, nil)
			if len(ins) != 0 || err != nil {
				t.Errorf("inputs %v, error %v; want none", ins, err)
			}
		})
	})
	t.Run("a directory holding the mount", func(t *testing.T) {
		within(t, 60*time.Second, "parse of a directory holding a tracefs mount", func() {
			ins, err := Inputs(top, nil)
			got := skips(t, err)
			if len(ins) != 1 || ins[0].Name != filepath.Join(top, "k.txt") {
				t.Errorf("inputs %v, want k.txt alone", ins)
			}
			if why := got[mnt]; !strings.Contains(why, "another filesystem") || len(got) != 1 {
				t.Errorf("skipped %q, want the mount point alone, as another filesystem", got)
			}
		})
	})
	t.Run("trace_pipe named", func(t *testing.T) {
		within(t, 10*time.Second, "parse of trace_pipe", func() {
			ins, err := Inputs(filepath.Join(mnt, "trace_pipe"), nil)
			if err != nil {
				t.Fatal(err)
			}
			rc, err := ins[0].Open()
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			_, err = NewReader(rc, ins[0].Name).Next()
			var s *SkipError
			if !errors.As(err, &s) {
				t.Errorf("reading trace_pipe gave %v, want a *SkipError", err)
			}
		})
	})
}

// TestADebugfsRootIsReadOnlyUnderRdmaCM mounts debugfs (root only): its
// other files are no RDMA state, and some block or have side effects.
func TestADebugfsRootIsReadOnlyUnderRdmaCM(t *testing.T) {
	mnt := t.TempDir()
	if err := syscall.Mount("nodev", mnt, "debugfs", 0, ""); err != nil {
		t.Skipf("mount debugfs: %v (needs root)", err)
	}
	t.Cleanup(func() { syscall.Unmount(mnt, syscall.MNT_DETACH) })
	within(t, 60*time.Second, "parse of a debugfs mount", func() {
		ins, err := Inputs(mnt, nil)
		for _, in := range ins {
			if filepath.Base(filepath.Dir(in.Name)) != "rdma_cm" {
				t.Errorf("reads %s", in.Name)
			}
		}
		// Not even a note for tracing/, the automount of tracefs.
		if got := skips(t, err); len(got) != 0 {
			t.Errorf("skipped %q; want nothing said of what is not rdma_cm", got)
		}
	})
}

func TestProcIsNotWalked(t *testing.T) {
	within(t, 30*time.Second, "parse of /proc", func() {
		ins, err := Inputs("/proc", nil)
		if len(ins) != 0 || err != nil {
			t.Errorf("inputs %v, error %v; want none", ins, err)
		}
	})
}

func TestAReadErrorNamesTheInputOnce(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Open(dir) // reading a directory fails: EISDIR
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = NewReader(f, dir).Next()
	if err == nil || strings.Count(err.Error(), dir) != 1 {
		t.Errorf("error %q: want the input named once", err)
	}
}

func TestABOMBeforeJSONIsStillJSON(t *testing.T) {
	in := "\ufeff" + `[{"ifindex":1,"ifname":"rxe0","port":1,"ps":"TCP","state":"LISTEN","pid":7,"comm":"rping"}]`
	rec, err := NewReader(strings.NewReader(in), "bom.json").Next()
	if err != nil || rec.Kind != KindRdmaJSON || rec.Res.Owner.Comm != "rping" {
		t.Fatalf("record %+v, error %v", rec, err)
	}
	if !Recognize([]byte(in)) {
		t.Error("Recognize does not see JSON after a BOM")
	}
	in = "\ufeffTYPE DEVICE PORT NET_DEV SRC_ADDR DST_ADDR SPACE STATE QP_NUM\nmthca0 0 0.0.0.0:7174 TCP LISTEN 0\n"
	if rec, err := NewReader(strings.NewReader(in), "bom.txt").Next(); err != nil || rec.Kind != KindLegacy {
		t.Errorf("legacy after a BOM: %+v, %v", rec, err)
	}
	if !Recognize([]byte(in)) {
		t.Error("Recognize does not see a legacy header after a BOM")
	}
}

func TestJSONNullIsAnAbsentValue(t *testing.T) {
	in := `[{"ifname":"rxe0","port":1,"ps":"TCP","state":"LISTEN","pid":null,"comm":null,"cm-idn":null}]`
	rec, err := NewReader(bytes.NewReader([]byte(in)), "null.json").Next()
	if err != nil {
		t.Fatal(err)
	}
	if o := rec.Res.Owner; o.Comm != "" || o.KernName != "" || rec.Res.Has&(rdma.HasPID|rdma.HasCMIDN) != 0 {
		t.Errorf("null read as a value: %+v", rec.Res)
	}
}

// A support bundle's rdma-res.txt.gz is found by what it decompresses to,
// and a compressed file named or piped is read as its plain self; a
// compressed file that cannot be decompressed is named, not passed over.
func TestCompressedDumpsAreReadAsThePlainOnes(t *testing.T) {
	plain, err := os.ReadFile("../testdata/debugfs/in/rdma-cmid.txt")
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(plain)
	zw.Close()
	dir := t.TempDir()
	for name, b := range map[string][]byte{"rdma-res.txt.gz": z.Bytes(), "notes.gz": []byte("\x1f\x8bxxxxxxxxxxxxxxxxxxxxxx"), "plain.txt": plain} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	records := func(in Input) int {
		rc, err := in.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		rd := NewReader(rc, in.Name)
		n := 0
		for {
			_, err := rd.Next()
			if err == io.EOF {
				return n
			}
			if err != nil {
				t.Fatalf("%s: %v", in.Name, err)
			}
			n++
		}
	}
	want := records(Input{Name: "plain", Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(plain)), nil }})
	ins, err := Inputs(dir, nil)
	var skip *SkipError
	if !errors.As(err, &skip) || !strings.HasSuffix(err.Error(), "notes.gz: gzip: invalid header") {
		t.Errorf("error %v, want notes.gz skipped as gzip: invalid header", err)
	}
	if len(ins) != 2 || filepath.Base(ins[1].Name) != "rdma-res.txt.gz" || records(ins[1]) != want || want == 0 {
		t.Errorf("inputs %v, want plain.txt and rdma-res.txt.gz, with %d records each", ins, want)
	}
	named, _ := Inputs(filepath.Join(dir, "rdma-res.txt.gz"), nil)
	piped, _ := Inputs("-", bytes.NewReader(z.Bytes()))
	if records(named[0]) != want || records(piped[0]) != want {
		t.Error("a compressed file named or piped is not read as the plain one")
	}
}
