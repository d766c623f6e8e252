package snapdiff

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/debugfs"
	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/base/golden"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// readSnapshot reads one of testdata/snapdiff's snapshots: "dev INDEX
// NAME" lines (the device list), "failed TYPE" (a type whose dump failed)
// and `rdma res show` lines, the resources.
func readSnapshot(t *testing.T, path string, at time.Time) *Snapshot {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := &Snapshot{Time: at, DevicesOK: true, Types: []rdma.ResType{rdma.ResQP, rdma.ResCMID}}
	index := map[string]uint32{}
	var res bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "dev":
			n, err := strconv.ParseUint(f[1], 10, 32)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			s.Devices = append(s.Devices, rdma.Device{Index: uint32(n), Name: f[2]})
			index[f[2]] = uint32(n)
		case len(f) == 2 && f[0] == "failed":
			typ, err := rdma.ParseResType(f[1])
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			s.Failed = append(s.Failed, typ)
		default:
			res.WriteString(sc.Text() + "\n")
		}
	}
	rd := debugfs.NewReader(&res, path)
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		r := rec.Res
		r.DevIndex = index[r.DevName]
		s.Resources = append(s.Resources, r)
	}
	return s
}

// The churn case: a snapshot, then a device registered and a client
// connecting (a QP and a cm_id created), then the QP in RTS, one QP
// destroyed and its number taken by another process's, the device
// renamed; then the cm_id dump failing (no cm_id taken as destroyed), a
// QP destroyed and the device unregistered; then the cm_id dump whole
// again, the client's cm_id gone. Each golden holds every snapshot's
// events, in text and as trace -j writes them.
func TestSnapshotsDifferAsEvents(t *testing.T) {
	dir := "../../../../testdata/snapdiff/churn"
	files, _ := filepath.Glob(filepath.Join(dir, "[0-9].txt"))
	if len(files) < 2 {
		t.Fatalf("%s: no snapshots", dir)
	}
	d := New(Options{Devices: true})
	var text, js bytes.Buffer
	tw := formats.NewEventSink(&text, formats.FormatText, formats.EventView{Stamp: formats.StampNone, Snapshot: formats.SnapshotList})
	jw := formats.NewEventSink(&js, formats.FormatNDJSON, formats.EventView{})
	start := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	for i, f := range files {
		evs := d.Next(readSnapshot(t, f, start.Add(time.Duration(i)*time.Second)))
		tw.Flush()
		fmt.Fprintf(&text, "== %s\n", filepath.Base(f))
		for j := range evs {
			tw.Write(&evs[j])
			jw.Write(&evs[j])
		}
	}
	tw.Close()
	jw.Close()
	golden.Check(t, filepath.Join(dir, "events.txt"), text.Bytes())
	golden.Check(t, filepath.Join(dir, "events.ndjson"), js.Bytes())
}

// Where the monitor group reports devices, the differ does not.
func TestDevicesAreLeftToTheMonitor(t *testing.T) {
	d := New(Options{})
	d.Next(&Snapshot{DevicesOK: true, Devices: []rdma.Device{{Index: 1, Name: "rxe0"}}})
	evs := d.Next(&Snapshot{DevicesOK: true, Devices: []rdma.Device{{Index: 2, Name: "rxe1"}}})
	if len(evs) != 0 {
		t.Errorf("got %d events, want none: %+v", len(evs), evs)
	}
}

// A failed device list is no device unregistered.
func TestAFailedDeviceListUnregistersNothing(t *testing.T) {
	d := New(Options{Devices: true})
	d.Next(&Snapshot{DevicesOK: true, Devices: []rdma.Device{{Index: 1, Name: "rxe0"}}})
	if evs := d.Next(&Snapshot{}); len(evs) != 0 {
		t.Errorf("got %+v, want nothing", evs)
	}
	if evs := d.Next(&Snapshot{DevicesOK: true}); len(evs) != 1 || evs[0].Kind != rdma.EvDevUnregistered || !evs[0].Has(rdma.EvPolled) {
		t.Errorf("got %+v, want rxe0 unregistered, polled", evs)
	}
}
