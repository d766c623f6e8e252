package debugfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// checkReader reads in to the end and checks what any input must give: no
// panic, only line errors besides the end, line numbers that never go
// backwards nor past the input, and records that have what their layout
// requires.
func checkReader(t *testing.T, in []byte) {
	lines := bytes.Count(in, []byte("\n")) + 1
	rd := NewReader(bytes.NewReader(in), "fuzz")
	last, more := 0, false
	for n := 0; ; n++ {
		if n > len(in)+1 {
			// Every result uses up input: a line, or a JSON element.
			t.Fatalf("more results (%d) than bytes (%d)", n, len(in))
		}
		rec, err := rd.Next()
		if err == io.EOF {
			return
		}
		line := 0
		var le *lineerr.Error
		switch {
		case errors.As(err, &le):
			line = le.Line
			if more {
				t.Fatalf("%v after the error counting the bad lines not shown: that one is the last", le)
			}
			if le.More > 0 {
				// Past lineerr.Shown bad lines, one error at the end
				// counts the rest (lineerr.Limit), in words of ours.
				more = true
				if want := fmt.Sprintf("fuzz: … and %d more bad lines (not shown)", le.More); le.Error() != want {
					t.Fatalf("error %q, want %q", le.Error(), want)
				}
				break
			}
			if le.Expected == "" || le.Found == "" {
				t.Fatalf("error without a what: %#v", le)
			}
			// Errors go to a terminal as they are: nothing from the
			// input may reach it raw.
			for _, r := range le.Error() {
				if r < 0x20 || r >= 0x7f {
					t.Fatalf("error %q holds %U", le.Error(), r)
				}
			}
		case err != nil:
			t.Fatalf("not a line error: %v", err)
		default:
			if more {
				t.Fatalf("record %+v after the error counting the bad lines not shown", rec)
			}
			line = rec.Line
			r := &rec.Res
			if r.DevName == "" && rec.Kind != KindRdmaJSON {
				t.Fatalf("record without a device: %+v", rec)
			}
			if rec.Kind == KindLegacy && (r.Type != rdma.ResCMID || rec.Layout == nil) {
				t.Fatalf("legacy record %+v", rec)
			}
		}
		if line < last || line < 1 || line > lines {
			t.Fatalf("line %d after %d, input of %d lines", line, last, lines)
		}
		last = line
	}
}

func addFixtures(f *testing.F, names ...string) {
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("../testdata/debugfs/in", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

func FuzzParseLegacy(f *testing.F) {
	addFixtures(f, "single.txt", "concat.txt", "grep-h.txt", "grep-rn.txt", "headtail.txt", "crlf-truncated.txt", "ipv6.txt", "errors.txt")
	f.Add([]byte("TYPE DEVICE PORT NET_DEV SRC_ADDR DST_ADDR SPACE STATE QP_NUM PID COMM\nIB 1 ib0 [fe80::1%x]:1 IB LISTEN 0 7 a b c\n"))
	f.Add(manyBad("x y z\n"))
	f.Fuzz(func(t *testing.T, in []byte) { checkReader(t, in) })
}

// manyBad is more bad lines than lineerr.Limit shows: the rest are one
// error at the end.
func manyBad(line string) []byte { return bytes.Repeat([]byte(line), lineerr.Shown+3) }

func FuzzParseRdmaText(f *testing.F) {
	addFixtures(f, "rdma-cmid.txt", "rdma-qp.txt", "rdma-qp-pretty-driver.txt", "hostile-keys.txt")
	f.Add([]byte("\ufefflink rxe0/1 ps TCP state LISTEN comm \\u202egnipr \\U000e0041 x\n"))
	f.Add(manyBad("link\n"))
	f.Fuzz(func(t *testing.T, in []byte) { checkReader(t, in) })
}

func FuzzParseRdmaJSON(f *testing.F) {
	addFixtures(f, "rdma-cmid.json", "rdma-qp-pretty.json", "bom-null.json")
	f.Add(append(append([]byte("[\n"), manyBad("{\"ifname\":5},\n")...), "{}]"...))
	f.Add([]byte("\ufeff[{\"ifname\":null,\"ps\":\"TCP\",\"state\":null,\"k\\u001b\":\"\\u202e\"}]"))
	f.Add([]byte(`[][{"ifname":"a","ps":"TCP","state":"LISTEN"}]`))
	f.Fuzz(func(t *testing.T, in []byte) { checkReader(t, in) })
}
