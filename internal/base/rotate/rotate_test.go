package rotate

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Errorf("%s ends inside a line", path)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// Lines written through a buffer (which cuts them anywhere) land whole,
// in files of about the limit, the newest in FILE; with count 3 the oldest
// are dropped. A FILE.7 beyond count is no file of this recording's, and
// stays.
func TestRotatesOnLineBoundariesKeepingCount(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rec.ndjson")
	os.WriteFile(path+".7", []byte("stale\n"), 0o644)
	w, err := Create(path, 100, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriterSize(w, 16) // cuts lines in the middle
	for i := 0; i < 40; i++ {
		fmt.Fprintf(bw, "{\"n\":%d,\"pad\":\"xxxxxxxxxxxx\"}\n", i) // 30 bytes or so
	}
	bw.Flush()
	w.Close()
	got := map[string][]string{}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		got[e.Name()] = lines(t, filepath.Join(dir, e.Name()))
	}
	if len(got) != 4 || got["rec.ndjson"] == nil || got["rec.ndjson.1"] == nil || got["rec.ndjson.2"] == nil || got["rec.ndjson.7"][0] != "stale" {
		t.Fatalf("files %v, want rec.ndjson, .1 and .2, and the stale .7 untouched", got)
	}
	delete(got, "rec.ndjson.7")
	last := got["rec.ndjson"][len(got["rec.ndjson"])-1]
	if !strings.HasPrefix(last, `{"n":39,`) {
		t.Errorf("the newest file ends with %q, want the last line", last)
	}
	for name, ls := range got {
		size := 0
		for _, l := range ls {
			size += len(l) + 1
			if !strings.HasPrefix(l, `{"n":`) || !strings.HasSuffix(l, `"}`) {
				t.Errorf("%s: a cut line %q", name, l)
			}
		}
		if size > 100+40 {
			t.Errorf("%s: %d bytes, want about 100", name, size)
		}
	}
}

func TestWithoutLimitOneFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec")
	w, err := Create(path, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		fmt.Fprintf(w, "line %d\n", i)
	}
	w.Close()
	if n := len(lines(t, path)); n != 100 {
		t.Errorf("%d lines, want 100", n)
	}
}

func TestKeepAllShiftsEveryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec")
	w, _ := Create(path, 10, 0, nil)
	for i := 0; i < 5; i++ {
		fmt.Fprintf(w, "line %02d xx\n", i) // 12 bytes: each line its own file
	}
	w.Close()
	for i, name := range []string{path + ".4", path + ".3", path + ".2", path + ".1", path} {
		if ls := lines(t, name); ls[0] != fmt.Sprintf("line %02d xx", i) {
			t.Errorf("%s holds %q, want line %02d", name, ls[0], i)
		}
	}
}

func TestCreateErrorNamesTheFile(t *testing.T) {
	if _, err := Create(filepath.Join(t.TempDir(), "no", "such", "dir"), 0, 0, nil); err == nil || !strings.Contains(err.Error(), "no/such/dir") {
		t.Errorf("Create error = %v, want the path", err)
	}
}
