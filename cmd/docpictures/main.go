// Command docpictures draws the docs' pictures from recordings made in a
// guest (make docs-capture): no picture in docs/ is drawn by hand.
//
//	docpictures docs testdata/docs docs     # both, as docs/ has them (make docs-pictures)
//	docpictures top -r top.ndjson -links link.json -hooks 51 -at 6s -o top.png
//	docpictures seq -r rping.ndjson -o rping-sequence.svg
//
// top replays a recording into top's counts and draws the full-screen view
// (the tcell screen `rdmatrace top` draws on, simulated) as a PNG; seq draws
// an rdma_cm connection between two processes as an SVG sequence diagram.
// docs runs both with the settings docs/ was drawn with, on the
// recordings in testdata/docs.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/png"
	"io"
	"os"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/rdmatrace/rdmatrace/internal/analysis/top"
	"github.com/rdmatrace/rdmatrace/internal/base/decompress"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/source/replay"
	"github.com/rdmatrace/rdmatrace/internal/view/seqview"
	"github.com/rdmatrace/rdmatrace/internal/view/termshot"
	"github.com/rdmatrace/rdmatrace/internal/view/topview"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: docpictures top|seq [flags] (-h for each)")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "top":
		err = topShot(os.Args[2:])
	case "seq":
		err = seq(os.Args[2:])
	case "docs":
		if len(os.Args) != 4 {
			fmt.Fprintln(os.Stderr, "usage: docpictures docs RECORDINGS-DIR OUT-DIR")
			os.Exit(2)
		}
		err = drawDocs(os.Args[2], os.Args[3])
	default:
		fmt.Fprintf(os.Stderr, "docpictures: unknown picture %q: top or seq\n", os.Args[1])
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "docpictures:", err)
		os.Exit(1)
	}
}

// topArgs draws docs/top.png: the recording made while an rping pair,
// an ib_write_bw pair and a churn of PDs, CQs and MRs ran (make
// docs-capture), the ports and hooks as that run saw them, a second after
// an rping client was refused by a port nobody listened on.
func topArgs(data, out string) []string {
	return []string{"-r", data + "/top.ndjson.gz", "-links", data + "/top-link.json", "-hooks", "51",
		"-at", "23s", "-d", "1s", "-cols", "150", "-lines", "24", "-o", out}
}

// seqArgs draws docs/rping-sequence.svg: an rping pair's connect, three
// pings and disconnect.
func seqArgs(data, out string) []string {
	return []string{"-r", data + "/rping.ndjson", "-o", out}
}

// slowArgs draws docs/slow-connect-sequence.svg: an rping pair whose
// server was stopped for 3 s before it accepted.
func slowArgs(data, out string) []string {
	return []string{"-r", data + "/slow.ndjson", "-o", out}
}

// drawDocs draws every picture of docs/ into out.
func drawDocs(data, out string) error {
	if err := topShot(topArgs(data, out+"/top.png")); err != nil {
		return err
	}
	if err := seq(seqArgs(data, out+"/rping-sequence.svg")); err != nil {
		return err
	}
	return seq(slowArgs(data, out+"/slow-connect-sequence.svg"))
}

// events reads a recording to its end; a bad line stops it, named.
func events(path string) ([]rdma.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, _, err := decompress.NewReader(f, 256<<20)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer d.Close()
	r := replay.NewReader(d, path)
	var evs []rdma.Event
	for {
		var e rdma.Event
		err := r.Next(&e)
		if errors.Is(err, io.EOF) {
			return evs, nil
		}
		if err != nil {
			return nil, err
		}
		evs = append(evs, e)
	}
}

func topShot(args []string) error {
	fs := flag.NewFlagSet("top", flag.ExitOnError)
	rec := fs.String("r", "", "the recording (trace -w) to replay")
	links := fs.String("links", "", "the ports, as `rdmatrace -j link` printed them during the recording")
	hooks := fs.Int("hooks", 0, "the hooks the tracer attached, as top's header said during the recording")
	at := fs.Duration("at", 5*time.Second, "the screen at this long after the recording's first event")
	delay := fs.Duration("d", time.Second, "top's refresh: the rates are over this long before -at")
	cols := fs.Int("cols", 132, "the terminal's columns")
	lines := fs.Int("lines", 30, "the terminal's lines")
	out := fs.String("o", "", "the PNG to write")
	_ = fs.Parse(args)
	if *rec == "" || *out == "" {
		return errors.New("top: -r RECORDING and -o PNG are needed")
	}
	evs, err := events(*rec)
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		return fmt.Errorf("%s: no event", *rec)
	}
	var ports []rdma.Port
	if *links != "" {
		if ports, err = readLinks(*links); err != nil {
			return err
		}
	}
	start := evs[0].Time
	a := top.New(top.ByProcess, 0, 0)
	a.Start(start)
	end, before := start.Add(*at), start.Add(*at-*delay)
	i := 0
	for ; i < len(evs) && evs[i].Time.Before(before); i++ {
		a.Add(&evs[i])
	}
	a.Frame(before) // the refresh before: the rates are of the last -d
	for ; i < len(evs) && evs[i].Time.Before(end); i++ {
		a.Add(&evs[i])
	}
	f := a.Frame(end)
	f.Source = top.Source{BPF: true, Hooks: *hooks}
	f.DropsKnown = true
	f.Ports = ports

	sim := tcell.NewSimulationScreen("UTF-8")
	sim.SetSize(*cols, *lines)
	sc, err := topview.NewScreen(sim, top.SortCreates, func() {})
	if err != nil {
		return err
	}
	sim.SetSize(*cols, *lines)
	if err := sc.Show(f); err != nil {
		return err
	}
	cells, w, h := sim.GetContents()
	img, err := termshot.Render(cells, w, h, termshot.Options{})
	if cerr := sc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return write(*out, func(w io.Writer) error { return png.Encode(w, img) })
}

// readLinks reads `rdmatrace -j link`'s array: iproute2's keys.
func readLinks(path string) ([]rdma.Port, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var links []struct {
		IfName string `json:"ifname"`
		Port   uint32 `json:"port"`
		State  string `json:"state"`
		Netdev string `json:"netdev"`
	}
	if err := json.Unmarshal(b, &links); err != nil {
		return nil, fmt.Errorf("%s: not rdmatrace -j link's output: %w", path, err)
	}
	var ports []rdma.Port
	for _, l := range links {
		p := rdma.Port{DevName: l.IfName, Port: l.Port, Netdev: l.Netdev}
		for s := rdma.PortState(0); s < 6; s++ {
			if s.String() == l.State {
				p.State = s
			}
		}
		ports = append(ports, p)
	}
	return ports, nil
}

func seq(args []string) error {
	fs := flag.NewFlagSet("seq", flag.ExitOnError)
	rec := fs.String("r", "", "the recording (trace -w) of the connection")
	client := fs.Uint("client", 0, "the client's pid (0: the first that sent a connect request)")
	server := fs.Uint("server", 0, "the server's pid (0: the first whose listener got one)")
	title := fs.String("title", "", "the picture's title")
	out := fs.String("o", "", "the SVG to write")
	_ = fs.Parse(args)
	if *rec == "" || *out == "" {
		return errors.New("seq: -r RECORDING and -o SVG are needed")
	}
	evs, err := events(*rec)
	if err != nil {
		return err
	}
	return write(*out, func(w io.Writer) error {
		return seqview.Render(w, evs, seqview.Options{Client: uint32(*client), Server: uint32(*server), Title: *title})
	})
}

// write makes path through a temporary file, so that a failed run leaves
// the old picture.
func write(path string, f func(io.Writer) error) error {
	tmp, err := os.CreateTemp(dirOf(path), ".docpictures-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := f(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func dirOf(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[:i+1]
		}
	}
	return "."
}
