package main

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/formats"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/tracerun"
)

// longRun is a traced lat -D run on a loaded host, made up: samples of a
// 14 µs loop, 1 % of them slow, and a tracer that recorded an off-CPU
// spell of the timed thread every few samples and another process's QP
// now and then (written as trace -j lines, read back as rdmabench does).
func longRun(b *testing.B, nSamples, nEvents int) (samples []bench.Sample, trace string) {
	b.Helper()
	samples = make([]bench.Sample, nSamples)
	const t0, step = int64(1e9), int64(14_000)
	for i := range samples {
		lat := int64(7_000)
		if i%97 == 0 {
			lat = 50_000 + int64(i%1000)*1_000
		}
		samples[i] = bench.Sample{Start: t0 + int64(i)*step, Lat: lat}
	}
	trace = filepath.Join(b.TempDir(), "trace.ndjson")
	f, err := os.Create(trace)
	if err != nil {
		b.Fatal(err)
	}
	w := formats.NewEventWriter(f, true)
	span := int64(nSamples) * step
	bench := rdma.Owner{PID: 100, TID: 101, Comm: "rdmabench"}
	churn := rdma.Owner{PID: 200, TID: 200, Comm: "churn"}
	var ev rdma.Event
	for i := range nEvents {
		mono := t0 + span*int64(i)/int64(nEvents)
		if i%10 == 9 {
			ev = rdma.Event{Kind: rdma.EvCreate, Resource: rdma.Resource{Type: rdma.ResQP, DevName: "rxe0", Owner: churn}, Flags: rdma.EvHasRes | rdma.EvHasDev | rdma.EvHasOwner}
		} else {
			ev = rdma.Event{Kind: rdma.EvOffCPU, Flags: rdma.EvHasDur | rdma.EvHasOwner | rdma.EvPreempted,
				Resource: rdma.Resource{Owner: bench}, OffCPU: rdma.OffCPU{Dur: 30_000, Next: rdma.Owner{PID: 300, TID: 300, Comm: "hog"}}}
		}
		ev.Time = time.Unix(0, mono)
		if err := w.Write(&ev); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return samples, trace
}

// peakHeap samples the live heap every millisecond until stopped, and
// returns the largest seen, in bytes.
func peakHeap() (stop func() uint64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak }
}

// BenchmarkLatLongRunMemory is what rdmabench holds to explain a long
// traced lat run's outliers: the join of its samples with what the tracer
// recorded, and the Perfetto file. The samples themselves (16 B each,
// held by the timing loop) are counted apart: peak-MB is the heap above
// them at its highest, alloc-MB all that was allocated (what the process
// grows by when the collector is off, as it was during a run).
func BenchmarkLatLongRunMemory(b *testing.B) {
	for _, tc := range []struct {
		name            string
		samples, events int
	}{{"5M samples, 1M events", 5_000_000, 1_000_000}, {"5M samples, 3M events", 5_000_000, 3_000_000}} {
		b.Run(tc.name, func(b *testing.B) {
			samples, trace := longRun(b, tc.samples, tc.events)
			// As the loop hands them over: the recorder is what holds
			// the series (bench.Recorder, measured apart).
			rec := bench.NewRecorder(bench.RecorderConfig{Series: keptSamples})
			for i := 0; i < len(samples); i += bench.ChunkSamples {
				rec.Add(samples[i:min(i+bench.ChunkSamples, len(samples))])
			}
			samples = nil
			sum := rec.Summary()
			out := filepath.Join(b.TempDir(), "run.json")
			b.ResetTimer()
			for range b.N {
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				stop := peakHeap()
				s := &session{outputs: outputs{req: traceRequest{Bench: "lat", PID: 100, Dev: "rxe0", JSON: true, Out: io.Discard, Perfetto: out}, traced: true},
					run: tracerun.Recorded(trace, "", 0)}
				if _, err := s.Lat(rec, &sum, []int{101}, 2); err != nil {
					b.Fatal(err)
				}
				if err := s.Stop(); err != nil {
					b.Fatal(err)
				}
				peak := stop()
				runtime.ReadMemStats(&m1)
				b.ReportMetric(float64(peak-min(peak, m0.HeapAlloc))/(1<<20), "peak-MB")
				b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/(1<<20), "alloc-MB")
			}
		})
	}
}
