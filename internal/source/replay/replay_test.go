package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rdmatrace/rdmatrace/internal/base/lineerr"
	"github.com/rdmatrace/rdmatrace/internal/base/lines"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// TestLiveRecordingsRoundTrip reads the `trace -j` output recorded live in
// the guests and renders every event again: the same bytes must come out.
func TestLiveRecordingsRoundTrip(t *testing.T) {
	for _, k := range []string{"6.1", "6.12"} {
		path := filepath.Join("..", "..", "..", "testdata", "tracer", k, "trace.ndjson")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r := NewReader(bytes.NewReader(data), path)
		var out bytes.Buffer
		var ev rdma.Event
		n := 0
		for {
			err := r.Next(&ev)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			out.WriteString(RenderEvent(&ev))
			n++
		}
		if !bytes.Equal(out.Bytes(), data) {
			a, b := bufio.NewScanner(bytes.NewReader(data)), bufio.NewScanner(&out)
			for a.Scan() && b.Scan() {
				if a.Text() != b.Text() {
					t.Fatalf("%s: round trip differs:\n in  %s\n out %s", k, a.Text(), b.Text())
				}
			}
			t.Fatalf("%s: round trip differs in length", k)
		}
		if n < 100 {
			t.Errorf("%s: only %d events", k, n)
		}
	}
}

func TestDeviceIndexesAreNewAfterUnregistration(t *testing.T) {
	in := `{"time":"2026-11-22T10:00:00Z","event":"dev_register","ifname":"rxe9"}
{"time":"2026-11-22T10:00:01Z","event":"dev_unregistered","ifname":"rxe9"}
{"time":"2026-11-22T10:00:02Z","event":"dev_register","ifname":"rxe9"}
{"time":"2026-11-22T10:00:03Z","event":"dev_register","ifname":"rxe0"}
`
	r := NewReader(strings.NewReader(in), "x")
	var got []uint32
	var ev rdma.Event
	for r.Next(&ev) == nil {
		got = append(got, ev.DevIndex)
	}
	if want := []uint32{1, 1, 2, 3}; len(got) != 4 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] || got[3] != want[3] {
		t.Errorf("indexes %v, want %v", got, want)
	}
}

// TestBadLinesAreErrorsAndReadingGoesOn: each bad line gives an error
// naming the source and line, and the good ones around it are read.
func TestBadLinesAreErrorsAndReadingGoesOn(t *testing.T) {
	in := strings.Join([]string{
		`{"time":"2026-11-22T10:00:00Z","event":"create","res":"pd","ifname":"rxe0","id":3,"pid":7,"comm":"a"}`,
		`not json`,
		`{"time":"yesterday","event":"create"}`,
		`{"time":"2026-11-22T10:00:00Z","event":"explode"}`,
		`{"time":"2026-11-22T10:00:00Z","event":"create","res":"qp","lqpn":3,"type":"XX"}`,
		`{"time":"2026-11-22T10:00:00Z","event":"create","unknown-key":1}`,
		`{"time":"2026-11-22T10:00:00Z","event":"destroy","res":"pd","ifname":"rxe0","id":3,"pid":7,"comm":"a","cleanup":"soon"}`,
		``,
		strings.Repeat("x", lines.Max+10),
		`{"time":"2026-11-22T10:00:01Z","event":"destroy","res":"pd","ifname":"rxe0","id":3,"pid":7,"comm":"a","cleanup":"exit"}`,
	}, "\r\n")
	r := NewReader(strings.NewReader(in), "rec.ndjson")
	var evs []rdma.Event
	var errs []string
	for {
		var ev rdma.Event
		err := r.Next(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		var pe *lineerr.Error
		if errors.As(err, &pe) {
			errs = append(errs, pe.Error())
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	wantErrs := []string{
		"rec.ndjson:2: expected an event of rdmatrace trace -j, found \"not json\"",
		"rec.ndjson:3: expected time in RFC 3339, found \"yesterday\"",
		"rec.ndjson:4: expected event: one of rdmatrace's event names, found \"explode\"",
		"rec.ndjson:5: expected a valid type, found \"XX\" (unknown QP type",
		"rec.ndjson:6: expected an event of rdmatrace trace -j",
		"rec.ndjson:7: expected cleanup: exit or close, found \"soon\"",
		"rec.ndjson:9: expected a line of at most 65536 bytes",
	}
	if len(errs) != len(wantErrs) {
		t.Fatalf("errors %q, want %d", errs, len(wantErrs))
	}
	for i, w := range wantErrs {
		if !strings.HasPrefix(errs[i], w) {
			t.Errorf("error %d: %q, want it to start with %q", i, errs[i], w)
		}
	}
	if len(evs) != 2 || evs[1].Cleanup() != "exit" || evs[0].Owner.Comm != "a" || evs[0].ID != 3 {
		t.Errorf("events %+v", evs)
	}
}

func FuzzReader(f *testing.F) {
	for _, k := range []string{"6.1", "6.12"} {
		if data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "tracer", k, "trace.ndjson")); err == nil {
			f.Add(data[:min(len(data), 4000)])
		}
	}
	f.Add([]byte(`{"time":"2026-11-22T10:00:00Z","event":"create","res":"qp","ifname":"rxe0","lqpn":3,"type":"RC","src-addr":"[fe80::1%2]:1","ps":"TCP"}`))
	for _, name := range []string{"spans.ndjson", "failures.ndjson"} {
		if data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "formats", name)); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), "fuzz")
		var ev rdma.Event
		for i := 0; i < 100000; i++ {
			err := r.Next(&ev)
			if errors.Is(err, io.EOF) {
				return
			}
			var pe *lineerr.Error
			if err != nil && !errors.As(err, &pe) {
				t.Fatalf("not a line error: %v", err)
			}
		}
	})
}

// TestOwnerCgroupRoundTrips: a recording made with the owner's cgroup id
// (`cgroup-id`, issue 10) reads back and renders the same.
func TestOwnerCgroupRoundTrips(t *testing.T) {
	line := `{"time":"2026-11-23T18:00:00.5Z","event":"create","res":"qp","ifname":"rxe0","id":0,"lqpn":17,"type":"RC","state":"RESET","pid":301,"comm":"leakqp","cgroup-id":4242,` +
		`"cgroup":"/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope","runtime":"docker",` +
		`"container-id":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","pidns-pid":7,"netns":4026532301}` + "\n"
	r := NewReader(strings.NewReader(line), "x.ndjson")
	var ev rdma.Event
	if err := r.Next(&ev); err != nil {
		t.Fatal(err)
	}
	if ev.OwnerCgroup != 4242 {
		t.Errorf("OwnerCgroup = %d, want 4242", ev.OwnerCgroup)
	}
	if p := ev.Owner.Place; p == nil || p.Runtime != "docker" || p.NSPid != 7 || ev.Actor.Place != nil {
		t.Errorf("Owner.Place = %+v, Actor.Place = %+v: want docker's, pidns pid 7, and none for the actor", p, ev.Actor.Place)
	}
	if out := RenderEvent(&ev); out != line {
		t.Errorf("round trip:\n in  %s out %s", line, out)
	}
}

// TestSpansRoundTrip reads the span and off-CPU golden of formats/ back and
// renders it again: every new key (func, dur-us, size, status, wait-us,
// preempted, next-pid, next-comm) survives, to the nanosecond.
func TestSpansRoundTrip(t *testing.T) {
	path := filepath.Join("..", "..", "..", "testdata", "formats", "spans.ndjson")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := rerender(t, NewReader(bytes.NewReader(data), path)); got != string(data) {
		t.Errorf("round trip differs:\n--- got ---\n%s--- want ---\n%s", got, data)
	}
}

// rerender reads every event of r and renders it again as trace -j does.
func rerender(t *testing.T, r *Reader) string {
	t.Helper()
	var out strings.Builder
	var ev rdma.Event
	for {
		err := r.Next(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString(RenderEvent(&ev))
	}
	return out.String()
}

func TestBadSpanFieldsAreOneLineErrors(t *testing.T) {
	in := `{"time":"2023-11-14T22:13:20Z","event":"span","pid":1,"comm":"x","dur-us":1.5}
{"time":"2023-11-14T22:13:20Z","event":"off-cpu","pid":1,"comm":"x","dur-us":"1.2345"}
{"time":"2023-11-14T22:13:20Z","event":"off-cpu","pid":1,"comm":"x","dur-us":-3}
{"time":"2023-11-14T22:13:20Z","event":"span","func":"ib_umem_get","pid":1,"comm":"x","dur-us":2.5,"size":4096}
`
	r := NewReader(strings.NewReader(in), "t.ndjson")
	var ev rdma.Event
	var errs []string
	for {
		err := r.Next(&ev)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if ev.Span.Func != "ib_umem_get" || ev.Span.Dur != 2500 || ev.Size != 4096 {
			t.Errorf("last line read as %+v", ev)
		}
	}
	want := []string{"t.ndjson:1: expected func", "t.ndjson:2: expected dur-us", "t.ndjson:3: expected dur-us"}
	if len(errs) != len(want) {
		t.Fatalf("errors %q, want %d", errs, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(errs[i], w) || strings.Contains(errs[i], "\n") {
			t.Errorf("error %q, want a line starting %q", errs[i], w)
		}
	}
}

// TestPortBusyAndSMCFallbackRoundTrip: the two events of the guest's
// conflict and SMC tests, as trace -j printed them, read back and render
// the same (holders, status, the fallback reason and the inode survive);
// an smc-fallback without its reason is a one-line error.
func TestPortBusyAndSMCFallbackRoundTrip(t *testing.T) {
	lines := `{"time":"2026-11-26T08:43:45.28249711Z","event":"port-busy","func":"rdma_listen","res":"cm_id","ifname":"siw0","port":1,"id":5,"state":"ADDR_BOUND","ps":"TCP","src-addr":"10.99.1.1:7410","dst-addr":"0.0.0.0:0","pid":221,"comm":"rping","cgroup-id":1,"cgroup":"/","status":-98,"status-name":"EADDRINUSE","holders":["e2e.test[129] tcp LISTEN 10.99.1.1:7410"]}
{"time":"2026-11-26T08:52:30.61610977Z","event":"smc-fallback","ps":"TCP","src-addr":"10.99.0.1:44406","dst-addr":"10.99.0.1:7500","pid":129,"comm":"e2e.test","actor-pid":132,"actor-comm":"e2e.test","fallback":50528256,"fallback-reason":"0x03030000 (no SMC device found (R or D))","inode":12936}
`
	if got := rerender(t, NewReader(strings.NewReader(lines), "x.ndjson")); got != lines {
		t.Errorf("round trip differs:\n--- got ---\n%s--- want ---\n%s", got, lines)
	}
	var ev rdma.Event
	r := NewReader(strings.NewReader(`{"time":"2026-11-26T08:52:30Z","event":"smc-fallback"}`+"\n"), "y.ndjson")
	if err := r.Next(&ev); err == nil || !strings.Contains(err.Error(), "fallback: the SMC fallback reason") {
		t.Errorf("smc-fallback without a reason: %v", err)
	}
}

// readAll reads a recording to its end: its events and its errors' text.
func readAll(t *testing.T, in string) (evs []rdma.Event, errs []string) {
	t.Helper()
	r := NewReader(strings.NewReader(in), "rec.ndjson")
	for {
		var ev rdma.Event
		err := r.Next(&ev)
		if errors.Is(err, io.EOF) {
			return evs, errs
		}
		var pe *lineerr.Error
		if !errors.As(err, &pe) && err != nil {
			t.Fatal(err)
		}
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		evs = append(evs, ev)
	}
}

// A line that trace -j cannot have written is an error naming it, not
// read as something else: a key given twice (encoding/json keeps the
// last), a key in other case, bytes that are not UTF-8 (they would become
// U+FFFD), a time past 2262 (it would come back as 1816), a value of the
// wrong type (in the manual's words, not Go's).
func TestLinesTraceCannotHaveWrittenAreErrors(t *testing.T) {
	for _, c := range []struct{ line, want string }{
		{`{"time":"2026-11-22T10:00:00Z","event":"create","res":"pd","id":3,"id":4}`,
			`rec.ndjson:1: expected an event of rdmatrace trace -j, each key once, found "id" twice`},
		{`{"time":"2026-11-22T10:00:00Z","event":"create","res":"pd","ID":3}`,
			`rec.ndjson:1: expected an event of rdmatrace trace -j, found unknown key "ID"`},
		{"{\"time\":\"2026-11-22T10:00:00Z\",\"event\":\"create\",\"res\":\"pd\",\"comm\":\"a\xffb\"}",
			`rec.ndjson:1: expected an event of rdmatrace trace -j in UTF-8 (as trace -j writes), found "comm\":\"a\xffb\"}" (byte 69 of the line is not)`},
		{`{"time":"9999-01-01T00:00:00Z","event":"create","res":"pd","id":3}`,
			`rec.ndjson:1: expected time between 1677-09-21T00:12:43Z and 2262-04-11T23:47:16Z (nanoseconds since 1970 in 64 bits), found "9999-01-01T00:00:00Z"`},
		{`{"time":"2026-11-22T10:00:00Z","event":"create","res":"pd","pid":"7"}`,
			`rec.ndjson:1: expected pid: a whole number from 0 to 4294967295, found a string`},
		{`{"time":"2026-11-22T10:00:00Z","event":"create","res":"pd","pid":-1}`,
			`rec.ndjson:1: expected pid: a whole number from 0 to 4294967295, found -1`},
		{`{"time":"2026-11-22T10:00:00Z","event":"create","res":"pd","holders":"x"}`,
			`rec.ndjson:1: expected holders: an array of strings, found a string`},
		// func and dur-us belong to the kinds that have them: nowhere
		// else would they be kept.
		{`{"time":"2026-11-22T10:00:00Z","event":"create","res":"pd","func":"ib_uverbs_alloc_pd"}`,
			`rec.ndjson:1: expected no func on a create (spans and port-busy have one), found "ib_uverbs_alloc_pd"`},
		{`{"time":"2026-11-22T10:00:00Z","event":"port-busy","func":"bind","dur-us":1.5}`,
			`rec.ndjson:1: expected no dur-us on a port-busy (spans and off-cpu spells have one), found 1.5`},
	} {
		evs, errs := readAll(t, c.line+"\n")
		if len(evs) != 0 || len(errs) != 1 || errs[0] != c.want {
			t.Errorf("%s:\n got %d events, errors %q\nwant %q", c.line, len(evs), errs, c.want)
		}
	}
	// The last time an event can hold reads back as itself.
	evs, errs := readAll(t, `{"time":"2262-04-11T23:47:16.854775807Z","event":"create","res":"pd","id":3}`+"\n")
	if len(errs) != 0 || len(evs) != 1 || evs[0].Time.Year() != 2262 {
		t.Errorf("events %v, errors %q", evs, errs)
	}
}

// Millions of bad lines are not millions of errors: the first
// lineerr.Shown, then one counting the rest; the good lines among them
// are all read.
func TestBadLinesAreBounded(t *testing.T) {
	var b strings.Builder
	for i := range 3000 {
		if i%3 == 0 {
			b.WriteString(`{"time":"2026-11-22T10:00:00Z","event":"create","res":"pd","id":3}` + "\n")
		} else {
			b.WriteString("junk\n")
		}
	}
	evs, errs := readAll(t, b.String())
	if len(evs) != 1000 || len(errs) != lineerr.Shown+1 || errs[len(errs)-1] != "rec.ndjson: … and 1980 more bad lines (not shown)" {
		t.Errorf("%d events, %d errors, last %q", len(evs), len(errs), errs[len(errs)-1])
	}
}

// A file that is no recording is given up after lineerr.GiveUp lines.
func TestAFileOfNoEventsIsGivenUp(t *testing.T) {
	evs, errs := readAll(t, strings.Repeat("junk\n", 3*lineerr.GiveUp))
	want := "rec.ndjson:10000: expected an event of rdmatrace trace -j in the last 10000 lines, found none: not read further (is it the right file?)"
	if len(evs) != 0 || len(errs) != lineerr.Shown+2 || errs[lineerr.Shown] != want ||
		errs[lineerr.Shown+1] != "rec.ndjson: … and 9979 more bad lines (not shown)" {
		t.Errorf("%d events, %d errors: %q", len(evs), len(errs), errs[lineerr.Shown:])
	}
}

// The reader's object has one field for each key of rdma.EventKeys, the
// table trace -j writes by, of its value's type: a key the writer puts in
// an event is never refused when the recording is read back.
func TestObjectHoldsEveryKeyOfTheTable(t *testing.T) {
	types := map[rdma.EventValue][]reflect.Type{
		rdma.ValString:  {reflect.TypeFor[string]()},
		rdma.ValBool:    {reflect.TypeFor[bool]()},
		rdma.ValStrings: {reflect.TypeFor[[]string]()},
		rdma.ValMicros:  {reflect.TypeFor[json.Number]()},
		rdma.ValUint8:   {reflect.TypeFor[uint8]()},
		rdma.ValUint32:  {reflect.TypeFor[uint32]()},
		rdma.ValUint64:  {reflect.TypeFor[uint64]()},
		rdma.ValInt32:   {reflect.TypeFor[int32]()},
		rdma.ValFrames:  {reflect.TypeFor[[]rdma.CallFrame]()},
	}
	fields := map[string]reflect.Type{}
	ot := reflect.TypeFor[object]()
	for i := range ot.NumField() {
		f := ot.Field(i)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		fields[strings.Split(f.Tag.Get("json"), ",")[0]] = ft
	}
	for _, k := range append(rdma.EventKeys[:len(rdma.EventKeys):len(rdma.EventKeys)], rdma.OldEventKeys...) {
		ft, ok := fields[k.Name]
		switch {
		case !ok:
			t.Errorf("the table's key %q has no field in the reader's object", k.Name)
		case !slices.Contains(types[k.Value], ft):
			t.Errorf("key %q: the field is a %v, the table says %v", k.Name, ft, types[k.Value])
		}
		delete(fields, k.Name)
	}
	for name := range fields {
		t.Errorf("the reader's object has key %q, which is not in rdma.EventKeys", name)
	}
}

// A port-busy event after others the kernel's rate limit held back says
// how many ("suppressed"): trace -j wrote the key and the reader refused
// it as unknown, so a recording with one could not be read back.
func TestPortBusyWithHeldBackEventsRoundTrips(t *testing.T) {
	lines := `{"time":"2026-11-26T08:43:45.28249711Z","event":"port-busy","func":"bind","ps":"TCP","src-addr":"10.99.1.1:7410","pid":221,"comm":"rping","status":-98,"status-name":"EADDRINUSE","suppressed":3}
`
	if got := rerender(t, NewReader(strings.NewReader(lines), "x.ndjson")); got != lines {
		t.Errorf("round trip differs:\n--- got ---\n%s--- want ---\n%s", got, lines)
	}
}

// A kernel owner is written as iproute2 writes it, comm without pid;
// recordings of earlier versions said kern-name, and still read the same.
func TestKernelOwnersReadInBothSpellings(t *testing.T) {
	in := `{"time":"2026-11-22T10:00:00Z","event":"create","res":"pd","ifname":"rxe0","id":1,"comm":"ib_core"}
{"time":"2026-11-22T10:00:01Z","event":"create","res":"pd","ifname":"rxe0","id":2,"kern-name":"nvme_rdma"}
{"time":"2026-11-22T10:00:02Z","event":"create","res":"pd","ifname":"rxe0","id":3,"pid":7,"comm":"rping"}
`
	evs, errs := readAll(t, in)
	if len(errs) != 0 || len(evs) != 3 {
		t.Fatalf("%d events, errors %q", len(evs), errs)
	}
	for i, want := range []struct{ kern, comm string }{{"ib_core", ""}, {"nvme_rdma", ""}, {"", "rping"}} {
		if o := evs[i].Owner; o.KernName != want.kern || o.Comm != want.comm {
			t.Errorf("event %d: owner %+v, want module %q, comm %q", i, o, want.kern, want.comm)
		}
	}
	want := `{"time":"2026-11-22T10:00:01Z","event":"create","res":"pd","ifname":"rxe0","id":2,"comm":"nvme_rdma"}`
	if got := strings.TrimSuffix(RenderEvent(&evs[1]), "\n"); got != want {
		t.Errorf("an old recording's kernel owner is written\n %s\nwant\n %s", got, want)
	}
}

// What trace without BPF writes reads back as written: polled resource
// events and the monitor's device events, with their net device.
func TestPolledAndMonitorEventsRoundTrip(t *testing.T) {
	lines := `{"time":"2026-11-27T08:00:01Z","event":"create","res":"qp","ifname":"rxe0","port":1,"id":0,"lqpn":17,"type":"RC","state":"INIT","pid":812,"comm":"rping","polled":true}
{"time":"2026-11-27T08:00:02Z","event":"dev_register","ifname":"rxe1"}
{"time":"2026-11-27T08:00:02.5Z","event":"netdev-attach","ifname":"rxe1","port":1,"netdev":"veth0"}
{"time":"2026-11-27T08:00:03Z","event":"destroy","res":"cm_id","ifname":"rxe0","port":1,"id":3,"state":"CONNECT","ps":"TCP","src-addr":"10.0.0.1:7174","pid":812,"comm":"rping","polled":true}
`
	if got := rerender(t, NewReader(strings.NewReader(lines), "x.ndjson")); got != lines {
		t.Errorf("round trip differs:\n--- got ---\n%s--- want ---\n%s", got, lines)
	}
	evs, errs := readAll(t, lines)
	if len(errs) > 0 || len(evs) != 4 {
		t.Fatalf("read %d events, errors %q", len(evs), errs)
	}
	if !evs[0].Has(rdma.EvPolled) || evs[1].Has(rdma.EvPolled) || evs[2].Netdev != "veth0" {
		t.Errorf("polled %v %v, netdev %q: want true false veth0", evs[0].Has(rdma.EvPolled), evs[1].Has(rdma.EvPolled), evs[2].Netdev)
	}
}

// TestFailuresRoundTrip reads the async event and QP error golden of
// formats/ back and renders it again: ib-event, qp-error, wc-status,
// count, rgid, rqpn and on-port survive.
func TestFailuresRoundTrip(t *testing.T) {
	path := filepath.Join("..", "..", "..", "testdata", "formats", "failures.ndjson")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := rerender(t, NewReader(bytes.NewReader(data), path)); got != string(data) {
		t.Errorf("round trip differs:\n--- got ---\n%s--- want ---\n%s", got, data)
	}
}

// A failure's own keys with values trace -j cannot have written are
// errors that name the key, and the lines after them are read.
func TestBadFailureFieldsAreOneLineErrors(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{`{"time":"2023-11-14T22:13:20Z","event":"async","ib-event":"PORT_ON_FIRE"}`, "ib-event"},
		{`{"time":"2023-11-14T22:13:20Z","event":"qp-error","qp-error":"later"}`, "qp-error"},
		{`{"time":"2023-11-14T22:13:20Z","event":"qp-error","qp-error":"first","wc-status":"OK"}`, "wc-status"},
		{`{"time":"2023-11-14T22:13:20Z","event":"qp-error","qp-error":"driver","rgid":"10.0.0.1x"}`, "rgid"},
	} {
		in := tc.line + "\n" + `{"time":"2023-11-14T22:13:20Z","event":"async","ib-event":"PORT_ACTIVE"}` + "\n"
		r := NewReader(strings.NewReader(in), "rec.ndjson")
		var ev rdma.Event
		err := r.Next(&ev)
		if err == nil || !strings.Contains(err.Error(), "rec.ndjson:1") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one at rec.ndjson:1 naming %s", tc.line, err, tc.want)
		}
		if err := r.Next(&ev); err != nil || ev.Fault.IBEvent != rdma.IBEventPortActive {
			t.Errorf("%s: the next line gave %v, %v", tc.line, err, ev.Fault.IBEvent)
		}
	}
}

// A create that --stacks named by its call site keeps its frames when the
// recording is read back.
func TestACreateWithItsCallSiteRoundTrips(t *testing.T) {
	lines := `{"time":"2026-11-27T08:00:00.5Z","event":"create","res":"qp","ifname":"rxe0","id":0,"lqpn":17,"type":"RC","pid":300,"comm":"leakqp","via":"ibv_create_qp","stack":[{"func":"setup_conn","file":"/src/leakqp.c","line":40,"binary":"/usr/bin/leakqp","offset":4454,"build-id":"e898"},{"binary":"/usr/lib/x86_64-linux-gnu/libc.so.6","offset":160330}]}
`
	if got := rerender(t, NewReader(strings.NewReader(lines), "x.ndjson")); got != lines {
		t.Errorf("round trip differs:\n--- got ---\n%s--- want ---\n%s", got, lines)
	}
}
