package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gzipped compresses b.
func gzipped(b []byte) []byte {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(b)
	zw.Close()
	return z.Bytes()
}

// writeFile writes a file of a test's own directory.
func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Every command that reads saved files says what is wrong with one in one
// message: the format named once, the file named once and escaped once, a
// truncated archive said to be truncated (not "not a kernel log").
func TestInputErrorsAreSaidOnce(t *testing.T) {
	dir := t.TempDir()
	xz, err := os.ReadFile("../../testdata/decompress/dmesg.txt.xz")
	if err != nil {
		t.Fatal(err)
	}
	badGzip := writeFile(t, dir, "bad.gz", []byte("\x1f\x8bxxxxxxxxxxxxxxxxxxxxxx"))
	cutXZ := writeFile(t, dir, "cut.xz", xz[:len(xz)/2])
	evil := writeFile(t, dir, "evil\x1bname", []byte("x\n"))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"leaks", "--log", badGzip}, "rdmatrace: read " + badGzip + ": gzip: invalid header\n"},
		{[]string{"trace", "-r", badGzip}, "rdmatrace: read " + badGzip + ": gzip: invalid header\n"},
		{[]string{"leaks", "--log", dir}, "rdmatrace: read " + dir + ": is a directory (name the files in it)\n"},
		{[]string{"trace", "-r", dir}, "rdmatrace: read " + dir + ": is a directory (name the files in it)\n"},
		{[]string{"leaks", "--log", cutXZ}, "rdmatrace: read " + cutXZ + ": xz: unexpected end of data: the file is truncated\n"},
		{[]string{"trace", "-r", evil}, `rdmatrace: ` + dir + `/evil\x1bname: 1 lines were not events (named or counted above)` + "\n"},
		{[]string{"parse", badGzip}, "rdmatrace: read " + badGzip + ": gzip: invalid header\n"},
	} {
		_, stderr, code := runCLI(t, "", c.args...)
		if !strings.HasSuffix(stderr, c.want) || strings.Contains(stderr, "not a kernel log") || code == 0 {
			t.Errorf("%q: exit %d, stderr\n%s\nwant it to end in\n%s", c.args, code, stderr, c.want)
		}
	}
}

// `parse r.gz` reads the dump inside (a support bundle's rdma-res.txt.gz
// was skipped in silence, and a named one read as binary junk).
func TestParseReadsCompressedDumps(t *testing.T) {
	plain, err := os.ReadFile("../../testdata/debugfs/in/rdma-cmid.txt")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gz := writeFile(t, dir, "rdma-res.txt.gz", gzipped(plain))
	want, _, _ := runCLI(t, string(plain), "parse", "-j", "-")
	for _, args := range [][]string{{"parse", "-j", gz}, {"parse", "-j", dir}} {
		got, stderr, code := runCLI(t, "", args...)
		if code != 0 || stderr != "" || strings.ReplaceAll(got, gz, "<stdin>") != want || want == "" {
			t.Errorf("%q: exit %d, stderr %q, stdout\n%s\nwant\n%s", args, code, stderr, got, want)
		}
	}
}

// --max-input bounds what a compressed input may decompress to, in every
// command that reads files; a bad value is a usage error.
func TestMaxInputBoundsDecompression(t *testing.T) {
	dir := t.TempDir()
	bomb := writeFile(t, dir, "bomb.gz", gzipped(bytes.Repeat([]byte("\n"), 2<<20)))
	for _, args := range [][]string{{"leaks", "--log", bomb}, {"trace", "-r", bomb}, {"parse", bomb}} {
		_, stderr, code := runCLI(t, "", withFlag(args, "1M")...)
		want := "rdmatrace: read " + bomb + ": gzip: decompresses to more than 1 MiB: the rest is not read (--max-input raises the limit)\n"
		if code == 0 || !strings.HasSuffix(stderr, want) {
			t.Errorf("%q: exit %d, stderr %q, want it to end in %q", args, code, stderr, want)
		}
		if _, stderr, code := runCLI(t, "", withFlag(args, "4M")...); strings.Contains(stderr, "decompresses to more") {
			t.Errorf("%q under the limit: exit %d, stderr %q", args, code, stderr)
		}
		if _, stderr, code := runCLI(t, "", withFlag(args, "lots")...); code != 2 || !strings.Contains(stderr, `--max-input "lots": expected a size such as 1G`) {
			t.Errorf("%q with a bad size: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// leaks --recording keeps at most --max-table resources, as a live run
// does, and says how many it could not.
func TestRecordingHonoursMaxTable(t *testing.T) {
	if _, err := os.Stat("../../testdata/leaklog/6.12/trace.ndjson"); err != nil {
		t.Skip(err)
	}
	_, stderr, _ := runCLI(t, "", "leaks", "--log", "../../testdata/leaklog/6.12/dmesg.txt",
		"--recording", "../../testdata/leaklog/6.12/trace.ndjson", "--max-table", "2")
	if !strings.Contains(stderr, "trace.ndjson: table full (--max-table 2), ") {
		t.Errorf("stderr %q, want the table full at 2", stderr)
	}
}

// withFlag puts --max-input SIZE after the command's name.
func withFlag(args []string, size string) []string {
	return append([]string{args[0], "--max-input", size}, args[1:]...)
}
