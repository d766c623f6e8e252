// Package termshot renders a terminal screen's cells (a tcell simulation
// screen's, which the full-screen views draw on in tests) to an image, as
// a terminal with a dark background would show them: for screenshots in
// the docs made from what the program drew, not drawn by hand.
package termshot

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"

	"github.com/gdamore/tcell/v2"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/gomono"
	"golang.org/x/image/font/gofont/gomonobold"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// The terminal's default colors and its padding around the cells.
var (
	defaultFG = color.RGBA{0xd8, 0xd8, 0xd8, 0xff}
	defaultBG = color.RGBA{0x1c, 0x1f, 0x24, 0xff}
	boldFG    = color.RGBA{0xff, 0xff, 0xff, 0xff}
)

const pad = 12

// Options size the font.
type Options struct {
	Points float64 // font size; 0: 14
	DPI    float64 // 0: 72
}

// Render draws the w×h cells (row by row, as tcell's GetContents gives
// them) with the Go Mono fonts, bold and reverse video as a terminal
// shows them.
func Render(cells []tcell.SimCell, w, h int, o Options) (*image.RGBA, error) {
	if w <= 0 || h <= 0 || len(cells) < w*h {
		return nil, fmt.Errorf("termshot: %d cells for a %d×%d screen", len(cells), w, h)
	}
	if o.Points == 0 {
		o.Points = 14
	}
	if o.DPI == 0 {
		o.DPI = 72
	}
	regular, err := face(gomono.TTF, o)
	if err != nil {
		return nil, err
	}
	defer regular.Close()
	bold, err := face(gomonobold.TTF, o)
	if err != nil {
		return nil, err
	}
	defer bold.Close()
	m := regular.Metrics()
	adv, _ := regular.GlyphAdvance('M')
	cw := adv.Ceil()
	ch := (m.Ascent + m.Descent).Ceil() + 2
	img := image.NewRGBA(image.Rect(0, 0, 2*pad+w*cw, 2*pad+h*ch))
	draw.Draw(img, img.Bounds(), image.NewUniform(defaultBG), image.Point{}, draw.Src)
	for y := range h {
		for x := range w {
			c := cells[y*w+x]
			fg, bg, attr := c.Style.Decompose()
			fgc, bgc := rgba(fg, defaultFG), rgba(bg, defaultBG)
			f := font.Face(regular)
			if attr&tcell.AttrBold != 0 {
				f = bold
				if fg == tcell.ColorDefault {
					fgc = boldFG
				}
			}
			if attr&tcell.AttrReverse != 0 {
				fgc, bgc = bgc, fgc
			}
			cell := image.Rect(pad+x*cw, pad+y*ch, pad+(x+1)*cw, pad+(y+1)*ch)
			if bgc != defaultBG {
				draw.Draw(img, cell, image.NewUniform(bgc), image.Point{}, draw.Src)
			}
			if len(c.Runes) == 0 || c.Runes[0] == ' ' {
				continue
			}
			d := font.Drawer{Dst: img, Src: image.NewUniform(fgc), Face: f,
				Dot: fixed.Point26_6{X: fixed.I(cell.Min.X), Y: fixed.I(cell.Min.Y+1) + m.Ascent}}
			d.DrawString(string(c.Runes))
		}
	}
	return img, nil
}

func face(ttf []byte, o Options) (font.Face, error) {
	f, err := opentype.Parse(ttf)
	if err != nil {
		return nil, fmt.Errorf("termshot: the Go Mono font: %w", err)
	}
	return opentype.NewFace(f, &opentype.FaceOptions{Size: o.Points, DPI: o.DPI, Hinting: font.HintingFull})
}

// rgba is a tcell color as an image color; def for the terminal's own.
func rgba(c tcell.Color, def color.RGBA) color.RGBA {
	if c == tcell.ColorDefault || !c.Valid() {
		return def
	}
	r, g, b := c.RGB()
	if r < 0 {
		return def
	}
	return color.RGBA{uint8(r), uint8(g), uint8(b), 0xff}
}
