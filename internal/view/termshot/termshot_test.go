package termshot

import (
	"bytes"
	"image/png"
	"path/filepath"
	"testing"

	"github.com/gdamore/tcell/v2"

	"github.com/rdmatrace/rdmatrace/internal/base/golden"
)

// screen is a small simulation screen with plain, bold and reverse text.
func screen(t *testing.T) (tcell.SimulationScreen, int, int) {
	t.Helper()
	s := tcell.NewSimulationScreen("UTF-8")
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	s.SetSize(24, 3)
	s.PutStrStyled(0, 0, "rdmatrace top", tcell.StyleDefault)
	s.PutStrStyled(0, 1, "DEVICES", tcell.StyleDefault.Bold(true))
	s.PutStrStyled(0, 2, " q quit  s next sort    ", tcell.StyleDefault.Reverse(true))
	s.Show()
	return s, 24, 3
}

// The picture of a small screen, byte for byte (Go Mono at 14 points,
// image/png's encoding).
func TestGolden(t *testing.T) {
	s, w, h := screen(t)
	defer s.Fini()
	cells, _, _ := s.GetContents()
	img, err := Render(cells, w, h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("..", "..", "..", "testdata", "termshot", "small.png"), b.Bytes())
}

// Reverse video is light on dark's inverse: the keys line's cells are
// filled with the default foreground; a blank plain cell is the background.
func TestReverseAndBlank(t *testing.T) {
	s, w, h := screen(t)
	defer s.Fini()
	cells, _, _ := s.GetContents()
	img, err := Render(cells, w, h, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	ch := (b.Dy() - 2*pad) / h
	cw := (b.Dx() - 2*pad) / w
	// The middle of the blank cell after "q" (x=2) on the reverse line,
	// and of a blank cell at the end of the first line.
	if got := img.RGBAAt(pad+2*cw+cw/2, pad+2*ch+ch/2); got != defaultFG {
		t.Errorf("reverse blank cell %v, want %v", got, defaultFG)
	}
	if got := img.RGBAAt(pad+20*cw+cw/2, pad+ch/2); got != defaultBG {
		t.Errorf("plain blank cell %v, want %v", got, defaultBG)
	}
	// Some pixel of "r" in the first cell is lit.
	lit := false
	for y := pad; y < pad+ch; y++ {
		for x := pad; x < pad+cw; x++ {
			if img.RGBAAt(x, y) != defaultBG {
				lit = true
			}
		}
	}
	if !lit {
		t.Error("the first cell's letter drew nothing")
	}
}

func TestTooFewCells(t *testing.T) {
	if _, err := Render(make([]tcell.SimCell, 3), 2, 2, Options{}); err == nil {
		t.Error("no error for 3 cells of a 2×2 screen")
	}
}
