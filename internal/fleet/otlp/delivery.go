package otlp

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdklog "go.opentelemetry.io/otel/sdk/log"

	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
)

// delivery is the Sink's processor: a bounded queue of records and one
// sender that exports them in batches. Writing never waits on the network:
// while the store is down or slow the queue fills, and past its size the
// oldest record is dropped and counted. A batch the store could not take
// for a reason that may pass (no connection, a timeout, 429, 5xx) is
// retried, after 1 s doubled up to 30 s, until it is taken: the node
// recovers by itself when the store comes back. A batch the store refused
// for good (another 4xx: the request is wrong and would be refused again)
// is dropped and counted as refused. Every record ends counted once:
// sent, refused, dropped, or still queued.
type delivery struct {
	exp      sdklog.Exporter
	batch    int
	interval time.Duration
	backoff  time.Duration // the first wait after a failure
	maxWait  time.Duration // the longest
	noRetry  bool
	log      func() *ratelog.Logger

	mu       sync.Mutex
	ring     []sdklog.Record
	head, n  int
	closed   bool
	wake     chan struct{} // a batch is full, or Close began
	stopping chan struct{} // closed by Shutdown: flush and end
	ended    chan struct{} // closed when the sender returned
	deadline atomic.Pointer[context.Context]

	emitted, sent, refused, dropped, failed atomic.Uint64
	retries                                 atomic.Uint64
	lastErr                                 atomic.Pointer[error]
}

func newDelivery(exp sdklog.Exporter, o Options, log func() *ratelog.Logger) *delivery {
	d := &delivery{exp: exp, batch: o.BatchSize, interval: o.Interval, backoff: o.Backoff, maxWait: o.MaxBackoff,
		noRetry: o.NoRetry, log: log, ring: make([]sdklog.Record, o.QueueSize),
		wake: make(chan struct{}, 1), stopping: make(chan struct{}), ended: make(chan struct{})}
	go d.run()
	return d
}

func (d *delivery) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }

// OnEmit queues a copy of r (the SDK reuses r). With the queue full the
// oldest record is dropped.
func (d *delivery) OnEmit(_ context.Context, r *sdklog.Record) error {
	c := r.Clone()
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		d.emitted.Add(1)
		d.dropped.Add(1)
		return nil
	}
	d.emitted.Add(1)
	if d.n == len(d.ring) {
		d.ring[d.head] = sdklog.Record{}
		d.head = (d.head + 1) % len(d.ring)
		d.n--
		d.dropped.Add(1)
	}
	d.ring[(d.head+d.n)%len(d.ring)] = c
	d.n++
	full := d.n >= d.batch
	d.mu.Unlock()
	if full {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// take moves up to max records out of the queue into buf.
func (d *delivery) take(buf []sdklog.Record) []sdklog.Record {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := min(d.n, cap(buf))
	buf = buf[:k]
	for i := range k {
		j := (d.head + i) % len(d.ring)
		buf[i] = d.ring[j]
		d.ring[j] = sdklog.Record{}
	}
	d.head = (d.head + k) % len(d.ring)
	d.n -= k
	return buf
}

// queued is how many records wait.
func (d *delivery) queued() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

func (d *delivery) run() {
	defer close(d.ended)
	buf := make([]sdklog.Record, 0, d.batch)
	tick := time.NewTicker(d.interval)
	defer tick.Stop()
	for {
		select {
		case <-d.stopping:
			d.drain(buf)
			return
		case <-tick.C:
		case <-d.wake:
		}
		for {
			b := d.take(buf)
			if len(b) == 0 {
				break
			}
			if !d.send(b) {
				d.drain(buf)
				return
			}
			if len(b) < d.batch {
				break
			}
		}
	}
}

// drain sends what is queued at shutdown, until the shutdown's deadline;
// what is left then is dropped.
func (d *delivery) drain(buf []sdklog.Record) {
	for {
		b := d.take(buf)
		if len(b) == 0 {
			return
		}
		if !d.send(b) {
			d.dropped.Add(uint64(d.queued()))
			d.take(make([]sdklog.Record, 0, len(d.ring)))
			return
		}
	}
}

// send exports one batch until it is taken or refused for good; false
// when the shutdown's deadline came first (the batch is then dropped).
func (d *delivery) send(b []sdklog.Record) bool {
	wait := d.backoff
	var downSince time.Time
	for {
		ctx := context.Background()
		if p := d.deadline.Load(); p != nil {
			ctx = *p
		}
		err := d.exp.Export(ctx, b)
		if err == nil {
			d.sent.Add(uint64(len(b)))
			if !downSince.IsZero() {
				d.say("otlp: the store takes records again, after " + time.Since(downSince).Round(time.Second).String())
			}
			clear(b)
			return true
		}
		d.lastErr.Store(&err)
		if permanent(err) {
			d.refused.Add(uint64(len(b)))
			d.say("otlp: the store refused " + strconv.Itoa(len(b)) + " records: " + err.Error())
			clear(b)
			return true
		}
		if d.noRetry {
			d.failed.Add(uint64(len(b)))
			d.say("otlp: " + err.Error())
			clear(b)
			return true
		}
		if downSince.IsZero() {
			downSince = time.Now()
			d.say(fmt.Sprintf("otlp: cannot send (%v); retrying, keeping at most %d records meanwhile", err, len(d.ring)))
		}
		d.retries.Add(1)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-d.stopping:
			t.Stop()
			// At shutdown a retry is worth it only until the deadline.
			if p := d.deadline.Load(); p != nil {
				select {
				case <-(*p).Done():
					d.dropped.Add(uint64(len(b)))
					clear(b)
					return false
				case <-time.After(min(wait, time.Second)):
				}
			}
		}
		wait = min(2*wait, d.maxWait)
	}
}

func (d *delivery) say(msg string) {
	if l := d.log(); l != nil {
		l.Log(ratelog.Kind(msg), msg)
	}
}

// statusRE finds the HTTP status in the exporter's error for a response
// it will not retry: "failed to send logs to URL: 400 Bad Request (body: ...)".
var statusRE = regexp.MustCompile(`failed to send logs to \S+: ([0-9]{3}) `)

// permanent says whether err is a refusal that would come again: a 4xx
// other than 408 (timeout) and 429 (too many requests), or a request
// too large. A store down, slow or overloaded is not.
func permanent(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	m := statusRE.FindStringSubmatch(err.Error())
	if m == nil {
		return strings.Contains(err.Error(), "request body too large")
	}
	code, _ := strconv.Atoi(m[1])
	return code >= 400 && code < 500 && code != 408 && code != 429
}

func (d *delivery) Shutdown(ctx context.Context) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	d.deadline.Store(&ctx)
	close(d.stopping)
	select {
	case <-d.ended:
	case <-ctx.Done():
		<-d.ended // send gives up at the deadline
	}
	return d.exp.Shutdown(context.Background())
}

func (d *delivery) ForceFlush(context.Context) error { return nil }
