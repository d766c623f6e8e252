package tracer

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/rdmatrace/rdmatrace/bpf"
	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/analysis/filter"
	"github.com/rdmatrace/rdmatrace/internal/host/enrich"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// burstRecordsPerQP is what the kernel writes for one QP of a connection
// burst (rdmabench burst, over verbs), as `rdmatrace trace` recorded it on
// 6.12: the create, the moves to INIT, RTR and RTS, the settings of the
// RTR and RTS modifies (qp-attr), and the two halves of the destroy.
const burstRecordsPerQP = 8

// burstRecords makes the records of a burst of qps QPs spread over pids
// processes, in the order a rank makes them: real RC QP records of the
// 6.12 recording (create, modify, destroy_begin, destroy) and qp-attr
// records, each given its own QP number, object, owner and time.
func burstRecords(tb testing.TB, qps, pids int) [][]byte {
	tb.Helper()
	_, recs := readRecording(tb, "../testdata/tracer/6.12")
	d := NewDecoder(Clock{})
	var ev rdma.Event
	tmpl := map[string]bpf.RdmatraceResEvent{}
	for _, rec := range recs {
		if len(rec) != resSize || d.Decode(rec, &ev) != nil || ev.Type != rdma.ResQP || ev.QPType != rdma.QPTypeRC {
			continue
		}
		key := ev.Kind.String()
		if ev.Kind == rdma.EvModify {
			key += "-" + ev.QPState.String()
		}
		if _, ok := tmpl[key]; !ok {
			var r bpf.RdmatraceResEvent
			if err := load(rec, &r, "res"); err != nil {
				tb.Fatal(err)
			}
			tmpl[key] = r
		}
	}
	order := []string{"create", "modify-INIT", "modify-RTR", "qp-attr-RTR", "modify-RTS", "qp-attr-RTS", "destroy_begin", "destroy"}
	for _, k := range order {
		if _, ok := tmpl[k]; !ok && !strings.HasPrefix(k, "qp-attr") {
			tb.Fatalf("the 6.12 recording has no RC QP %s record", k)
		}
	}
	attrs := qpAttrRecords()
	// A handful of real processes, in this process's cgroup: the owner
	// cache then finds what it would find for a job's ranks.
	cg := ownCgroupID()
	var owners []uint32
	for _, p := range []int{os.Getpid(), os.Getppid(), 1} {
		owners = append(owners, uint32(p))
	}
	for len(owners) < pids {
		owners = append(owners, owners[len(owners)-1]+1) // gone or foreign: cached all the same
	}
	owners = owners[:pids]
	out := make([][]byte, 0, qps*burstRecordsPerQP)
	ts := uint64(1_000_000_000)
	for q := 0; q < qps; q++ {
		pid := owners[q%pids]
		qpn := uint32(100 + q)
		obj := uint64(0xffff888100000000) + uint64(q)*0x400
		for _, k := range order {
			ts += 2500 // 400 000 events a second
			setHdr := func(h *bpf.RdmatraceEventHdr) {
				h.Ts, h.Obj, h.OwnerCgroup, h.Cgroup = ts, obj, cg, cg
				h.OwnerPid, h.OwnerTid, h.ActorPid, h.ActorTid = pid, pid+1000, pid, pid+1000
			}
			switch k {
			case "qp-attr-RTR", "qp-attr-RTS":
				a := attrs[0]
				if k == "qp-attr-RTS" {
					a = attrs[1]
				}
				setHdr(&a.H)
				a.Res.Qpn, a.Res.Id = qpn, qpn
				out = append(out, append([]byte(nil), bytesOf(&a)...))
			default:
				r := tmpl[k]
				setHdr(&r.H)
				r.Res.Qpn, r.Res.Id = qpn, qpn
				out = append(out, append([]byte(nil), bytesOf(&r)...))
			}
		}
	}
	return out
}

// ownCgroupID is this process's cgroup v2 id (its directory's inode), 0
// when there is none.
func ownCgroupID() uint64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			var st syscall.Stat_t
			if syscall.Stat(filepath.Join("/sys/fs/cgroup", p), &st) == nil {
				return st.Ino
			}
		}
	}
	return 0
}

// processCPU is this process's CPU time so far (user and system), ns.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkBurstDecodeEnrichEncode is `rdmatrace trace -j`'s user-space
// work per event of a connection burst (4 processes × 2500 QPs, 8 records
// a QP: see burstRecords), on one core as the tracer runs (GOMAXPROCS=1):
// decode the ring's record, name its owner's place (the owner cache,
// keyed by pid and cgroup), match trace's filter (no words: keep all),
// write the NDJSON line. cpu-ns/event is the CPU it took (the process's,
// user and system), which a loaded machine changes less than the wall
// time per event. The last case writes through a file as trace's
// stdout redirected to one does: a write(2) per 4 KiB. events/s is the
// rate the reader sustains when the ring is never empty; the ring fills
// when the burst makes events faster than that.
func BenchmarkBurstDecodeEnrichEncode(b *testing.B) {
	recs := burstRecords(b, 10000, 4)
	f, err := filter.ParseEvents(nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name                string
		enrich, write, file bool
	}{
		{"decode", false, false, false},
		{"decode+enrich", true, false, false},
		{"decode+enrich+ndjson", true, true, false},
		{"decode+enrich+ndjson+file", true, true, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			d := NewDecoder(Clock{})
			x := enrich.New(enrich.Options{SMCOwners: true})
			var out io.Writer = io.Discard
			if c.file {
				fh, err := os.Create(filepath.Join(b.TempDir(), "trace.ndjson"))
				if err != nil {
					b.Fatal(err)
				}
				defer fh.Close()
				out = fh
			}
			w := formats.NewEventWriter(out, true)
			var ev rdma.Event
			n := 0
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				if err := d.Decode(recs[n%len(recs)], &ev); err != nil {
					b.Fatal(err)
				}
				n++
				if c.enrich {
					x.Event(&ev)
				}
				if !f.Match(&ev) {
					b.Fatal("trace's filter without words dropped an event")
				}
				if c.write {
					if err := w.Write(&ev); err != nil {
						b.Fatal(err)
					}
				}
			}
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			cpu := processCPU() - cpu0
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
			// On a shared machine the wall time per event says more of the
			// neighbours than of the code: the CPU it took is the budget.
			b.ReportMetric(float64(cpu)/float64(n), "cpu-ns/event")
		})
	}
}

// TestBurstRecordsDecodeAsABurst: the benchmark's records are what it
// says: each QP created, moved to INIT, RTR and RTS with its settings, and
// destroyed, by its process, with its own number.
func TestBurstRecordsDecodeAsABurst(t *testing.T) {
	recs := burstRecords(t, 3, 2)
	if len(recs) != 3*burstRecordsPerQP {
		t.Fatalf("%d records for 3 QPs, want %d", len(recs), 3*burstRecordsPerQP)
	}
	d := NewDecoder(Clock{})
	var got []string
	for i, rec := range recs {
		var ev rdma.Event
		if err := d.Decode(rec, &ev); err != nil {
			t.Fatal(err)
		}
		if want := uint32(100 + i/burstRecordsPerQP); ev.LQPN != want || ev.Type != rdma.ResQP || !ev.Has(rdma.EvHasOwner) {
			t.Fatalf("record %d: %v QP %d owner %v, want QP %d with an owner", i, ev.Type, ev.LQPN, ev.Has(rdma.EvHasOwner), want)
		}
		if i < burstRecordsPerQP {
			s := ev.Kind.String()
			if ev.Kind == rdma.EvModify {
				s += " " + ev.QPState.String()
			}
			got = append(got, s)
		}
		if pid := ev.Owner.PID; (i/burstRecordsPerQP)%2 == 0 && pid != uint32(os.Getpid()) {
			t.Errorf("record %d owned by %d, want this process", i, pid)
		}
	}
	if want := "create,modify INIT,modify RTR,qp-attr,modify RTS,qp-attr,destroy_begin,destroy"; strings.Join(got, ",") != want {
		t.Errorf("one QP's records: %s, want %s", strings.Join(got, ","), want)
	}
}
