package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"
)

// series makes n samples of a loop with the given typical latency (ns):
// most within ±15 % of it, 1 % slow (up to 60 ×), a few very slow.
func series(n int, typical int64, seed uint64) []Sample {
	rng := rand.New(rand.NewPCG(seed, 7))
	s := make([]Sample, n)
	t := int64(1e9)
	for i := range s {
		lat := typical + int64(rng.NormFloat64()*float64(typical)*0.05)
		switch r := rng.IntN(10000); {
		case r < 100:
			lat = typical * int64(2+rng.IntN(60))
		case r < 102:
			lat = typical * int64(100+rng.IntN(1000))
		}
		lat = max(lat, 1)
		s[i] = Sample{Start: t, Lat: lat}
		t += 2 * lat
	}
	return s
}

func record(cfg RecorderConfig, s []Sample) *Recorder {
	r := NewRecorder(cfg)
	for i := 0; i < len(s); i += ChunkSamples {
		r.Add(s[i:min(i+ChunkSamples, len(s))])
	}
	return r
}

func TestRecorderWithinTheExactBudgetIsSummarize(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 12, 1000, 3000, ChunkSamples + 5, 200_000} {
		s := series(n, 37_000, uint64(n))
		r := record(RecorderConfig{}, s)
		if !r.Exact() {
			t.Fatalf("%d samples: not exact", n)
		}
		if got, want := r.Summary(), Summarize(s); !reflect.DeepEqual(got, want) {
			t.Errorf("%d samples: summary %+v, want %+v", n, got, want)
		}
		if !slices.Equal(r.Samples(), s) && n > 0 {
			t.Errorf("%d samples: Samples differ", n)
		}
		thr := Threshold(Summarize(s), 3)
		got, total, complete := r.Above(thr)
		var want []Indexed
		for i, x := range s {
			if x.Lat > thr {
				want = append(want, Indexed{i, x})
			}
		}
		if !complete || total != len(want) || !slices.Equal(got, want) {
			t.Errorf("%d samples: %d outliers (total %d, complete %v), want %d", n, len(got), total, complete, len(want))
		}
	}
}

// printed is how the table prints a figure (µs, %.2f).
func printed(us float64) string { return fmt.Sprintf("%.2f", us) }

func TestRecorderHistogramSummaryStaysWithinRounding(t *testing.T) {
	// A TCG-like loop (37 µs) and a hardware-like one (1.9 µs), past an
	// exact budget of 1000 samples.
	for _, typical := range []int64{37_000, 1_900} {
		s := series(300_000, typical, uint64(typical))
		r := record(RecorderConfig{Exact: 1000}, s)
		if r.Exact() {
			t.Fatal("still exact")
		}
		got, want := r.Summary(), Summarize(s)
		if !got.FromHistogram || got.N != want.N {
			t.Fatalf("N %d (from histogram %v), want %d", got.N, got.FromHistogram, want.N)
		}
		for _, c := range []struct {
			name      string
			got, want float64
			exact     bool
		}{
			{"t_min", got.Min, want.Min, true}, {"max", got.TrueMax, want.TrueMax, true},
			{"t_avg", got.Avg, want.Avg, true}, {"t_stdev", got.Stdev, want.Stdev, true},
			{"t_max", got.Max, want.Max, true}, // the 2nd largest: among the worst kept
			{"t_typical", got.Typical, want.Typical, typical < 4096/2},
			{"99%", got.P99, want.P99, false}, {"99.9%", got.P999, want.P999, false},
		} {
			if c.exact && math.Abs(c.got-c.want) > 1e-9*math.Max(1, c.want) {
				t.Errorf("%d ns loop: %s = %v, want %v exactly", typical, c.name, c.got, c.want)
			}
			if rel := math.Abs(c.got-c.want) / c.want; rel > HistRelErr {
				t.Errorf("%d ns loop: %s = %v, want %v within %.3g (off %.3g)", typical, c.name, c.got, c.want, HistRelErr, rel)
			}
			// Printed: the same, or one unit in the last place.
			if g, w := printed(c.got), printed(c.want); g != w && math.Abs(c.got-c.want) > 0.01 {
				t.Errorf("%d ns loop: %s prints %s, want %s", typical, c.name, g, w)
			}
		}
	}
}

func TestHistogramBucketsCoverEveryValueOnce(t *testing.T) {
	prev := -1
	for _, v := range []int64{0, 1, 4095, 4096, 4097, 8191, 8192, 1 << 20, 1<<20 + 511, 1<<40 + 3, math.MaxInt64} {
		b := bucket(v)
		lo, w := bucketRange(b)
		if v < lo || v-lo >= w || b < prev || b >= histBuckets {
			t.Errorf("value %d: bucket %d [%d, +%d) of %d", v, b, lo, w, histBuckets)
		}
		if w > 1 && float64(w)/2/float64(v) > HistRelErr {
			t.Errorf("value %d: bucket width %d beyond the relative error", v, w)
		}
		prev = b
	}
	for i := 1; i < histBuckets; i++ {
		lo0, w0 := bucketRange(i - 1)
		lo1, _ := bucketRange(i)
		if lo0+w0 != lo1 || bucket(lo1) != i {
			t.Fatalf("buckets %d, %d are not contiguous: %d+%d, %d", i-1, i, lo0, w0, lo1)
		}
	}
}

func TestRecorderOutliersPastTheBudget(t *testing.T) {
	s := series(400_000, 37_000, 3)
	want := Summarize(s)
	thr := Threshold(want, 3)
	var all []Indexed
	for i, x := range s {
		if x.Lat > thr {
			all = append(all, Indexed{i, x})
		}
	}
	// Few enough outliers for the worst kept: all of them, exactly.
	r := record(RecorderConfig{Exact: 1000, Worst: 2 * len(all)}, s)
	got, total, complete := r.Above(thr)
	if !complete || total != len(all) || !slices.Equal(got, all) {
		t.Errorf("worst %d: %d outliers, total %d, complete %v; want all %d", 2*len(all), len(got), total, complete, len(all))
	}
	// More than that: a bounded subset, in time order, each above the
	// threshold, the worst among them, and a total close to the truth.
	const worst, res = 500, 500
	r = record(RecorderConfig{Exact: 1000, Worst: worst, Reservoir: res}, s)
	got, total, complete = r.Above(thr)
	if complete || len(got) > worst+res || len(got) < worst {
		t.Fatalf("%d listed of %d (complete %v)", len(got), len(all), complete)
	}
	if math.Abs(float64(total-len(all))) > 0.02*float64(len(all)) {
		t.Errorf("total %d, want about %d", total, len(all))
	}
	if !slices.IsSortedFunc(got, func(a, b Indexed) int { return a.Index - b.Index }) {
		t.Error("not in time order")
	}
	byLat := slices.Clone(all)
	slices.SortStableFunc(byLat, func(a, b Indexed) int { return int(b.Lat - a.Lat) })
	for _, x := range got {
		if x.Lat <= thr || s[x.Index] != x.Sample {
			t.Fatalf("listed %+v: not an outlier of the series", x)
		}
	}
	for _, x := range byLat[:worst-1] {
		if !slices.Contains(got, x) && x.Lat > byLat[worst].Lat {
			t.Fatalf("%+v, among the %d worst, is not listed", x, worst)
		}
	}
	// The reservoir spreads over the run: some listed outliers come from
	// each quarter of it.
	var q [4]int
	for _, x := range got {
		q[x.Index*4/len(s)]++
	}
	for i, c := range q {
		if c == 0 {
			t.Errorf("quarter %d of the run has no listed outlier: %v", i, q)
		}
	}
}

func TestRecorderSeriesIsBoundedAndSpread(t *testing.T) {
	s := series(100_003, 10_000, 5)
	r := record(RecorderConfig{Series: 1000}, s)
	got := r.Series()
	if len(got) > 1000 || len(got) < 500 || got[0] != s[0] {
		t.Fatalf("%d samples kept, first %+v", len(got), got[0])
	}
	k := r.stride
	for i, x := range got {
		if x != s[i*k] {
			t.Fatalf("kept[%d] is not sample %d (stride %d)", i, i*k, k)
		}
	}
	if len(got) != (len(s)+k-1)/k {
		t.Errorf("%d kept with stride %d of %d", len(got), k, len(s))
	}
}

func TestRecorderAddAllocatesNothingPastTheBudget(t *testing.T) {
	s := series(4*ChunkSamples, 37_000, 9)
	r := record(RecorderConfig{Exact: 1000, Worst: 100, Reservoir: 100, Series: 1000}, s)
	chunk := s[:ChunkSamples]
	if a := testing.AllocsPerRun(5, func() { r.Add(chunk) }); a != 0 {
		t.Errorf("%v allocations per chunk", a)
	}
}

// peakHeap samples the live heap every millisecond until stopped.
func peakHeap() (stop func() uint64) {
	m := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond) // allocates nothing per tick
		defer tick.Stop()
		for {
			metrics.Read(m)
			peak = max(peak, m[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak }
}

// BenchmarkRecorderLongRun is what rdmabench lat holds for one series of
// n samples, fed in chunks as the timing loop hands them over (a 14 µs
// loop, 1 % slow): the live heap at its highest above where it started
// (peak-MB) and what the Recorder holds at the end (held-MB) must not grow
// with n past the exact budget.
func BenchmarkRecorderLongRun(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000, 5_000_000, 50_000_000, 500_000_000} {
		name := fmt.Sprintf("%dk", n/1_000)
		if n >= 1_000_000 {
			name = fmt.Sprintf("%dM", n/1_000_000)
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				runtime.GC()
				var m0 runtime.MemStats
				runtime.ReadMemStats(&m0)
				stop := peakHeap()
				start := time.Now()
				r := NewRecorder(RecorderConfig{})
				chunk := make([]Sample, ChunkSamples)
				rng := rand.New(rand.NewPCG(1, 2))
				t0 := int64(1e9)
				for i := 0; i < n; i += ChunkSamples {
					c := chunk[:min(ChunkSamples, n-i)]
					for k := range c {
						lat := 14_000 + int64(rng.IntN(1000))
						if rng.IntN(100) == 0 {
							lat = 50_000 + int64(rng.IntN(1_000_000))
						}
						c[k] = Sample{Start: t0, Lat: lat}
						t0 += 2 * lat
					}
					r.Add(c)
				}
				sum := r.Summary()
				out, total, _ := r.Above(Threshold(sum, 3))
				el := time.Since(start)
				peak := stop()
				runtime.GC()
				var m1 runtime.MemStats
				runtime.ReadMemStats(&m1)
				b.ReportMetric(float64(peak-min(peak, m0.HeapAlloc))/(1<<20), "peak-MB")
				b.ReportMetric(float64(m1.HeapAlloc-min(m1.HeapAlloc, m0.HeapAlloc))/(1<<20), "held-MB")
				b.ReportMetric(float64(el.Nanoseconds())/float64(n), "ns/sample")
				b.ReportMetric(float64(len(out)), "listed")
				b.ReportMetric(float64(total), "outliers")
				runtime.KeepAlive(r)
			}
		})
	}
}
