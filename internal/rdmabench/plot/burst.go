package plot

import (
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
)

// BurstRun is a connection burst to draw: its untraced pass and, when
// there was one, its traced pass.
type BurstRun struct {
	Title            string
	Untraced, Traced *bench.BurstPass
	// Connected and Destroyed are the steps (indexes into the passes'
	// Steps) whose ends count a QP connected and destroyed.
	Connected, Destroyed int
}

// maxCurvePoints bounds the points of a curve: a step every so many QPs.
const maxCurvePoints = 4000

// curve is the count of QPs whose step ended by each moment, from t0.
func curve(p *bench.BurstPass, step int, t0 int64) plotter.XYs {
	ends := p.Ends(step)
	every := max(1, len(ends)/maxCurvePoints)
	xy := plotter.XYs{{X: 0, Y: 0}}
	for i, t := range ends {
		if i%every == 0 || i == len(ends)-1 {
			xy = append(xy, plotter.XY{X: float64(t-t0) / 1e9, Y: float64(i + 1)})
		}
	}
	return xy
}

var (
	untracedColor = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	tracedColor   = color.RGBA{R: 214, G: 39, B: 40, A: 255}
)

// firstStart is the moment since Go the first QP of the pass began step
// (the destroys begin after the hold, which is not drawn).
func firstStart(p *bench.BurstPass, step int) int64 {
	start, _, ok := p.Span(step, step)
	if !ok {
		return 0
	}
	return start - p.Go
}

// WriteBurst draws, for each pass, the QPs in RTS over time since the
// ranks were told to go, and the QPs destroyed over time since the first
// destroy, into w as format ("svg" or "png").
func WriteBurst(w io.Writer, format string, r *BurstRun) error {
	if r.Untraced == nil || r.Untraced.QPs() == 0 {
		return fmt.Errorf("no QPs to plot")
	}
	mk := func(title, x string) *plot.Plot {
		p := plot.New()
		p.Title.Text = title
		p.X.Label.Text = x
		p.Y.Label.Text = "QPs"
		p.Legend.Top = true
		p.Legend.Left = true
		p.Add(plotter.NewGrid())
		return p
	}
	conn := mk(r.Title, "time since the ranks were told to go [s]")
	dest := mk("QPs destroyed", "time since the first destroy [s]")
	for _, pass := range []struct {
		name string
		p    *bench.BurstPass
		col  color.RGBA
	}{{"untraced", r.Untraced, untracedColor}, {"traced", r.Traced, tracedColor}} {
		if pass.p == nil {
			continue
		}
		for _, c := range []struct {
			plot *plot.Plot
			step int
			t0   int64
			what string
		}{{conn, r.Connected, 0, "in RTS"}, {dest, r.Destroyed, firstStart(pass.p, r.Destroyed), "destroyed"}} {
			l, err := plotter.NewLine(curve(pass.p, c.step, c.t0))
			if err != nil {
				return err
			}
			l.Color = pass.col
			l.Width = vg.Points(1.5)
			c.plot.Add(l)
			c.plot.Legend.Add(fmt.Sprintf("%s: %d QPs %s", pass.name, pass.p.QPs(), c.what), l)
		}
	}
	width, height := 9*vg.Inch, 8*vg.Inch
	var c vgCanvas
	if format == "svg" {
		c = vgsvg.New(width, height)
	} else {
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(100))}
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(12), PadY: vg.Points(18)}
	canv := plot.Align([][]*plot.Plot{{conn}, {dest}}, tiles, dc)
	conn.Draw(canv[0][0])
	dest.Draw(canv[1][0])
	_, err := c.WriteTo(w)
	return err
}
