package plot

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/correlate"
)

// TestPlotsAreDrawn draws the correlation fixture as SVG and PNG. What the
// picture shows was checked by eye (PLOT_OUT=dir keeps the files).
func TestPlotsAreDrawn(t *testing.T) {
	s, ev := correlate.Fixture()
	r := correlate.Outliers(s, ev, correlate.Options{PID: 100, Threads: []int{101}, Dev: "rxe0"})
	dir := os.Getenv("PLOT_OUT")
	if dir == "" {
		dir = t.TempDir()
	}
	for _, name := range []string{"lat.svg", "lat.png"} {
		format, err := Format(name)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := Write(&b, format, &Run{Title: "fixture", Samples: s, Result: &r}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		switch format {
		case "png":
			if !bytes.HasPrefix(b.Bytes(), []byte("\x89PNG")) {
				t.Error("not a PNG")
			}
		case "svg":
			for _, want := range []string{"<svg", "outlier: off-cpu (1)", "outlier: mr-reg (1)", "outlier: nothing (1)", "latency CDF"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("SVG without %q", want)
				}
			}
		}
	}
	if _, err := Format("x.pdf"); err == nil || !strings.Contains(err.Error(), ".svg or .png") {
		t.Errorf("x.pdf: error %v", err)
	}
}

// TestBurstPlotsAreDrawn draws the burst fixture's two passes as SVG and
// PNG (PLOT_OUT=dir keeps the files).
func TestBurstPlotsAreDrawn(t *testing.T) {
	p, _ := correlate.BurstFixture()
	dir := os.Getenv("PLOT_OUT")
	if dir == "" {
		dir = t.TempDir()
	}
	for _, name := range []string{"burst.svg", "burst.png"} {
		format, err := Format(name)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteBurst(&b, format, &BurstRun{Title: "fixture", Untraced: &p, Traced: &p, Connected: 3, Destroyed: 4}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if format == "svg" {
			for _, want := range []string{"untraced: 6 QPs in RTS", "traced: 6 QPs destroyed", "QPs destroyed"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("SVG without %q", want)
				}
			}
		}
	}
	if err := WriteBurst(io.Discard, "svg", &BurstRun{}); err == nil {
		t.Error("an empty burst drawn")
	}
}
