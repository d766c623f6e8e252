package topview

import (
	"sync"

	"github.com/gdamore/tcell/v2"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/top"
)

// Screen draws frames on the whole terminal, each over the last, and
// reads keys: q (or Esc, Ctrl-C) ends the run, s and the column letters
// sort the owners, the arrows and page keys scroll them. It is tcell's
// (a maintained terminal library: terminfo, resizes, raw mode and its
// undoing on exit), not escape codes of ours.
type Screen struct {
	s    tcell.Screen
	stop func()

	mu     sync.Mutex
	frame  *top.Frame
	sort   top.SortKey
	scroll int
	note   string // the newest of the source's lines

	done chan struct{}
}

// sortKeys are the keys that choose a sort column, as the keys line
// shows them.
var sortKeys = map[rune]top.SortKey{'c': top.SortCreates, 'l': top.SortLive, 'p': top.SortQPs,
	'f': top.SortFailures, 'e': top.SortConnects, 'n': top.SortName}

// keysLine is the last line of the screen.
const keysLine = " q quit  s next sort  c creates  l live  p QPs  f failures  e connects  n name  ↑↓ PgUp PgDn scroll "

// OpenScreen takes the terminal (tcell.NewScreen) for a Screen.
func OpenScreen(key top.SortKey, stop func()) (*Screen, error) {
	s, err := tcell.NewScreen()
	if err != nil {
		return nil, err
	}
	return NewScreen(s, key, stop)
}

// NewScreen starts drawing on s (a terminal's, or a simulation's in
// tests); stop is called when the user quits.
func NewScreen(s tcell.Screen, key top.SortKey, stop func()) (*Screen, error) {
	if err := s.Init(); err != nil {
		return nil, err
	}
	s.HideCursor()
	sc := &Screen{s: s, stop: stop, sort: key, done: make(chan struct{})}
	sc.draw()
	go sc.keys()
	return sc, nil
}

// Show draws f.
func (sc *Screen) Show(f *top.Frame) error {
	sc.mu.Lock()
	sc.frame = f
	if n := len(f.Notes); n > 0 {
		sc.note = f.Notes[n-1]
	}
	sc.mu.Unlock()
	sc.draw()
	return nil
}

// Close gives the terminal back.
func (sc *Screen) Close() error {
	sc.s.Fini() // PollEvent returns nil: keys ends
	<-sc.done
	return nil
}

// Sort is the owners' sort key now.
func (sc *Screen) Sort() top.SortKey {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.sort
}

// keys reads the terminal's events until the screen ends.
func (sc *Screen) keys() {
	defer close(sc.done)
	for {
		ev := sc.s.PollEvent()
		switch ev := ev.(type) {
		case nil:
			return
		case *tcell.EventResize:
			sc.s.Sync()
			sc.draw()
		case *tcell.EventKey:
			if sc.key(ev) {
				sc.stop()
			}
			sc.draw()
		}
	}
}

// key applies a key; true when it quits.
func (sc *Screen) key(ev *tcell.EventKey) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	_, h := sc.s.Size()
	page := max(h-10, 1)
	switch ev.Key() {
	case tcell.KeyEscape, tcell.KeyCtrlC:
		return true
	case tcell.KeyUp:
		sc.scroll--
	case tcell.KeyDown:
		sc.scroll++
	case tcell.KeyPgUp:
		sc.scroll -= page
	case tcell.KeyPgDn:
		sc.scroll += page
	case tcell.KeyHome:
		sc.scroll = 0
	case tcell.KeyRune:
		r := ev.Rune()
		switch {
		case r == 'q' || r == 'Q':
			return true
		case r == 's':
			sc.sort = sc.sort.Next()
		default:
			if k, ok := sortKeys[r]; ok {
				sc.sort = k
			}
		}
	}
	sc.scroll = max(sc.scroll, 0)
	return false
}

// draw lays the frame out on the screen: the header, the devices, the
// owners (scrolled), the newest note and the keys.
func (sc *Screen) draw() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	s := sc.s
	s.Clear()
	w, h := s.Size()
	plain, bold, inverse := tcell.StyleDefault, tcell.StyleDefault.Bold(true), tcell.StyleDefault.Reverse(true)
	y := 0
	put := func(text string, st tcell.Style) {
		if y < h-1 {
			s.PutStrStyled(0, y, text, st)
		}
		y++
	}
	if sc.frame == nil {
		put("rdmatrace top: waiting for the first refresh", plain)
	} else {
		l := Lay(sc.frame, sc.sort)
		for _, line := range l.Header {
			put(line, plain)
		}
		put("", plain)
		put(l.DevicesTitle, bold)
		put(pad(l.DeviceHead, w), inverse)
		for _, r := range l.Devices {
			put(r, plain)
		}
		put("", plain)
		put(l.OwnersTitle, bold)
		put(pad(l.OwnerHead, w), inverse)
		room := h - 2 - y // the note's and the keys' lines stay
		if room > 0 {
			sc.scroll = min(sc.scroll, max(len(l.Owners)-room, 0))
			end := min(sc.scroll+room, len(l.Owners))
			for _, r := range l.Owners[sc.scroll:end] {
				put(r, plain)
			}
		}
	}
	if sc.note != "" && h >= 2 {
		s.PutStrStyled(0, h-2, formats.Sanitize(sc.note), bold)
	}
	s.PutStrStyled(0, h-1, pad(keysLine, w), inverse)
	s.Show()
}

// pad fills a heading to the screen's width, for its inverse band.
func pad(s string, w int) string {
	for n := len([]rune(s)); n < w; n++ {
		s += " "
	}
	return s
}
