// Package plot draws a latency run with gonum/plot: the latency of every
// sample over time, with the outliers marked by their cause and the
// outlier threshold, and the latency CDF. SVG or PNG by the file's name.
package plot

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/correlate"
)

// Run is what is drawn.
type Run struct {
	Title   string // e.g. "rdmabench lat write 2 B, rxe0 (soft-RoCE under qemu: emulation)"
	Samples []bench.Sample
	Result  *correlate.Result // outliers and threshold; nil: none marked
}

// Format is how Write encodes: by the file name's extension.
func Format(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("--plot %s: expected a file name ending in .svg or .png", path)
	}
}

// categories in legend order, with their colours; "other" takes the rest.
var categories = []struct {
	name string
	col  color.RGBA
}{
	{"off-cpu", color.RGBA{R: 214, G: 39, B: 40, A: 255}},
	{"mr-reg", color.RGBA{R: 31, G: 119, B: 180, A: 255}},
	{"qp-create", color.RGBA{R: 44, G: 160, B: 44, A: 255}},
	{"other", color.RGBA{R: 255, G: 127, B: 14, A: 255}},
	{correlate.Nothing, color.RGBA{R: 90, G: 90, B: 90, A: 255}},
}

// category is the outlier's cause to mark: an RDMA event of another
// process before an off-CPU spell (it says more), nothing when none.
func category(o *correlate.Outlier) string {
	if len(o.Causes) == 0 {
		return correlate.Nothing
	}
	best := "other"
	for _, c := range o.Causes {
		k, _, _ := strings.Cut(c, ":")
		switch k {
		case "mr-reg", "qp-create":
			return k
		case "off-cpu":
			best = k
		}
	}
	if best == "off-cpu" {
		for _, c := range o.Causes {
			if k, _, _ := strings.Cut(c, ":"); k != "off-cpu" {
				return "other"
			}
		}
	}
	return best
}

// Write draws r into w as format ("svg" or "png").
func Write(w io.Writer, format string, r *Run) error {
	if len(r.Samples) == 0 {
		return fmt.Errorf("no samples to plot")
	}
	t0 := r.Samples[0].Start
	over := plot.New()
	over.Title.Text = r.Title
	over.X.Label.Text = "time since the first sample [s]"
	over.Y.Label.Text = "latency [µs]"
	over.Y.Scale = plot.LogScale{}
	over.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	pts := make(plotter.XYs, len(r.Samples))
	lo := math.Inf(1)
	for i, s := range r.Samples {
		pts[i].X = float64(s.Start-t0) / 1e9
		pts[i].Y = max(float64(s.Lat)/1e3, 0.001)
		lo = min(lo, pts[i].Y)
	}
	all, err := plotter.NewScatter(pts)
	if err != nil {
		return err
	}
	all.GlyphStyle.Radius = vg.Points(1)
	all.GlyphStyle.Color = color.RGBA{R: 150, G: 150, B: 200, A: 255}
	over.Add(all)
	over.Legend.Add("sample", all)
	if r.Result != nil {
		byCat := map[string]plotter.XYs{}
		for i := range r.Result.Outliers {
			o := &r.Result.Outliers[i]
			c := category(o)
			byCat[c] = append(byCat[c], plotter.XY{X: float64(o.Sample.Start-t0) / 1e9, Y: float64(o.Sample.Lat) / 1e3})
		}
		for _, c := range categories {
			xy := byCat[c.name]
			if len(xy) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return err
			}
			sc.GlyphStyle.Shape = draw.CircleGlyph{}
			sc.GlyphStyle.Radius = vg.Points(3)
			sc.GlyphStyle.Color = c.col
			over.Add(sc)
			over.Legend.Add(fmt.Sprintf("outlier: %s (%d)", c.name, len(xy)), sc)
		}
		if th := float64(r.Result.Threshold) / 1e3; th > 0 {
			line, err := plotter.NewLine(plotter.XYs{{X: 0, Y: th}, {X: pts[len(pts)-1].X, Y: th}})
			if err != nil {
				return err
			}
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			over.Add(line)
			over.Legend.Add(fmt.Sprintf("outlier threshold %.0f µs", th), line)
		}
	}
	// Room above the highest point for the legend, which sits there.
	over.Y.Min = lo / 1.5
	over.Y.Max = math.Max(over.Y.Max, lo) * 6
	over.Legend.Top = true

	cdf := plot.New()
	cdf.Title.Text = "latency CDF"
	cdf.X.Label.Text = "latency [µs]"
	cdf.Y.Label.Text = "fraction of samples"
	cdf.X.Scale = plot.LogScale{}
	cdf.X.Tick.Marker = plot.LogTicks{Prec: -1}
	lat := make([]float64, len(r.Samples))
	for i, s := range r.Samples {
		lat[i] = max(float64(s.Lat)/1e3, 0.001)
	}
	slices.Sort(lat)
	cxy := make(plotter.XYs, len(lat))
	for i, v := range lat {
		cxy[i] = plotter.XY{X: v, Y: float64(i+1) / float64(len(lat))}
	}
	cl, err := plotter.NewLine(cxy)
	if err != nil {
		return err
	}
	cl.Color = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	cdf.Add(cl, plotter.NewGrid())

	width, height := 9*vg.Inch, 8*vg.Inch
	var c vgCanvas
	if format == "svg" {
		c = vgsvg.New(width, height)
	} else {
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(100))}
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(12), PadY: vg.Points(18)}
	canv := plot.Align([][]*plot.Plot{{over}, {cdf}}, tiles, dc)
	over.Draw(canv[0][0])
	cdf.Draw(canv[1][0])
	_, err = c.WriteTo(w)
	return err
}

type vgCanvas interface {
	vg.CanvasSizer
	io.WriterTo
}
