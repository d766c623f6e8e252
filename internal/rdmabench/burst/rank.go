package burst

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/verbs"
)

// A rank is a process (by default, as a job's ranks are: rdmabench's
// hidden burst-rank command runs ServeRank) or a thread of this one. Either
// way it talks with the coordinator over a pair of pipes, in gob: the
// coordinator sends the rank's configuration, then "go" and "destroy"; the
// rank answers "ready" (its device, PD and CQ made), "held" (every QP in
// RTS) and "done" (every QP destroyed, with the times of all its steps).
// Between them the coordinator holds every rank at the same point, so that
// the ranks' QPs are made at once, as at a job's start.

type rankConfig struct {
	Index int
	Cfg   verbs.BurstConfig
}

type order struct{ Step string }

const (
	orderGo      = "go"
	orderDestroy = "destroy"
)

type rankMsg struct {
	Stage    string // "ready", "held", "done"
	PID, TID int
	Err      string
	Setup    []bench.StepTime
	QPs      []bench.BurstQP // with "done"
}

// rankVerbs is what a rank does to the device: verbs.BurstRank, or a
// test's stand-in.
type rankVerbs interface {
	Connect() error
	Destroy() error
	Close()
	Free()
	QPs() []bench.BurstQP
	TID() int
	RankSteps() []bench.StepTime
}

var openRank = func(cfg verbs.BurstConfig) (rankVerbs, error) { return verbs.OpenBurst(cfg) }

// ServeRank runs one rank on the calling thread, which it locks: its
// orders come from in, its answers go to out. It returns when the rank is
// done, or at the first error (also sent to the coordinator), or when in
// ends (the coordinator gave up): what it made is destroyed either way.
func ServeRank(in io.Reader, out io.Writer) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	dec, enc := gob.NewDecoder(in), gob.NewEncoder(out)
	var c rankConfig
	if err := dec.Decode(&c); err != nil {
		return fmt.Errorf("burst rank: its configuration: %w", err)
	}
	pid := os.Getpid()
	say := func(m rankMsg, err error) error {
		m.PID = pid
		if err != nil {
			m.Err = err.Error()
		}
		if eerr := enc.Encode(m); eerr != nil && err == nil {
			return fmt.Errorf("burst rank %d: tell the coordinator: %w", c.Index, eerr)
		}
		return err
	}
	r, err := openRank(c.Cfg)
	if err != nil {
		return say(rankMsg{Stage: "ready"}, err)
	}
	defer r.Free()
	if err := say(rankMsg{Stage: "ready", TID: r.TID()}, nil); err != nil {
		return err
	}
	if err := await(dec, orderGo); err != nil {
		return err
	}
	if err := say(rankMsg{Stage: "held", TID: r.TID()}, r.Connect()); err != nil {
		return err
	}
	if err := await(dec, orderDestroy); err != nil {
		return err
	}
	err = r.Destroy()
	r.Close()
	return say(rankMsg{Stage: "done", TID: r.TID(), Setup: r.RankSteps(), QPs: r.QPs()}, err)
}

func await(dec *gob.Decoder, want string) error {
	var o order
	if err := dec.Decode(&o); err != nil {
		return fmt.Errorf("burst rank: waiting for %q: %w", want, err)
	}
	if o.Step != want {
		return fmt.Errorf("burst rank: got %q, want %q", o.Step, want)
	}
	return nil
}

// rank is the coordinator's handle on one rank.
type rank struct {
	index int
	pid   int
	enc   *gob.Encoder
	msgs  chan rankMsg // closed when the rank's output ends
	stdin io.WriteCloser
	done  chan error // the process's or thread's end
	proc  *os.Process
	errw  *tailBuffer
}

// startRank starts rank i: a process running cmd, or with cmd nil a
// thread of this one.
func startRank(i int, cmd []string, cfg verbs.BurstConfig) (*rank, error) {
	r := &rank{index: i, msgs: make(chan rankMsg, 4), done: make(chan error, 1)}
	var out io.Reader
	var wait func() error // after the rank's output has ended
	if len(cmd) == 0 {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		r.stdin, out = inW, outR
		served := make(chan error, 1)
		go func() {
			err := ServeRank(inR, outW)
			outW.Close()
			inR.Close()
			served <- err
		}()
		wait = func() error { return <-served }
	} else {
		c := exec.Command(cmd[0], cmd[1:]...)
		in, err := c.StdinPipe()
		if err != nil {
			return nil, err
		}
		o, err := c.StdoutPipe()
		if err != nil {
			return nil, err
		}
		r.errw = &tailBuffer{max: 4096}
		c.Stderr = r.errw
		if err := c.Start(); err != nil {
			return nil, fmt.Errorf("start rank %d (%s): %w", i, cmd[0], err)
		}
		r.proc, r.pid = c.Process, c.Process.Pid
		r.stdin, out = in, o
		wait = c.Wait // it closes stdout: only once everything is read
	}
	r.enc = gob.NewEncoder(r.stdin.(io.Writer))
	go func() {
		dec := gob.NewDecoder(out)
		for {
			var m rankMsg
			if err := dec.Decode(&m); err != nil {
				break
			}
			r.msgs <- m
		}
		close(r.msgs)
		r.done <- wait()
	}()
	if err := r.enc.Encode(rankConfig{Index: i, Cfg: cfg}); err != nil {
		r.abort()
		return nil, fmt.Errorf("rank %d: send its configuration: %w", i, err)
	}
	return r, nil
}

// expect waits for the rank's next message, which must be stage.
func (r *rank) expect(stage string) (rankMsg, error) {
	m, ok := <-r.msgs
	if !ok {
		return m, fmt.Errorf("rank %d%s ended before it was %s%s", r.index, r.who(), stage, r.why())
	}
	if m.Err != "" {
		return m, fmt.Errorf("rank %d%s: %s", r.index, r.who(), m.Err)
	}
	if m.Stage != stage {
		return m, fmt.Errorf("rank %d%s: said %q, want %q", r.index, r.who(), m.Stage, stage)
	}
	return m, nil
}

func (r *rank) who() string {
	if r.pid != 0 {
		return fmt.Sprintf(" (pid %d)", r.pid)
	}
	return ""
}

// why is the last line the rank's process wrote on stderr, if any.
func (r *rank) why() string {
	if r.errw == nil {
		return ""
	}
	if l := bytes.TrimSpace(r.errw.last()); len(l) > 0 {
		return ": " + string(l)
	}
	return ""
}

func (r *rank) order(step string) error {
	if err := r.enc.Encode(order{Step: step}); err != nil {
		return fmt.Errorf("rank %d%s: tell it %q: %w", r.index, r.who(), step, err)
	}
	return nil
}

// abortWait is how long a rank told to stop (its input closed) has to
// destroy what it made and exit before it is killed.
const abortWait = 30 * time.Second

// abort closes the rank's input (it destroys what it made and ends) and
// waits for its end, killing a process that does not end in abortWait.
func (r *rank) abort() {
	r.stdin.Close()
	r.wait()
}

// wait waits for the rank's end (after its last message, or an abort).
func (r *rank) wait() error {
	select {
	case err := <-r.done:
		return err
	case <-time.After(abortWait):
		if r.proc != nil {
			_ = r.proc.Signal(syscall.SIGKILL)
			return <-r.done
		}
		return fmt.Errorf("rank %d did not end within %v", r.index, abortWait)
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

// last is the last non-empty line.
func (t *tailBuffer) last() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := bytes.TrimRight(t.b, "\n")
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return append([]byte(nil), b...)
}
