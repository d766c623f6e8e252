package bench

import (
	"math"
	"testing"
)

func lats(us ...float64) []Sample {
	s := make([]Sample, len(us))
	for i, u := range us {
		s[i] = Sample{Start: int64(i) * 1000, Lat: int64(u * 1000)}
	}
	return s
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestSummaryFollowsPerftestsDefinitions(t *testing.T) {
	// 12 samples, shuffled: perftest sorts, keeps the 10 smallest, and its
	// t_max is the 11th (the first one past the dropped tail of 2).
	s := Summarize(lats(7, 200, 3, 1, 10, 5, 100, 2, 9, 4, 6, 8))
	want := Summary{N: 12, Min: 1, Max: 100, Typical: 5.5, Avg: 5.5, Stdev: math.Sqrt(8.25), P99: 100, P999: 100, TrueMax: 200}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"t_min", s.Min, want.Min}, {"t_max", s.Max, want.Max}, {"t_typical", s.Typical, want.Typical},
		{"t_avg", s.Avg, want.Avg}, {"t_stdev", s.Stdev, want.Stdev}, {"99%", s.P99, want.P99},
		{"99.9%", s.P999, want.P999}, {"max", s.TrueMax, want.TrueMax},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if s.N != 12 {
		t.Errorf("N = %d", s.N)
	}
}

func TestMedianOfAnOddNumberOfKeptSamplesIsTheMiddleOne(t *testing.T) {
	// 5 samples keep 3: 1, 2, 3.
	if s := Summarize(lats(3, 1, 2, 50, 60)); s.Typical != 2 || s.Max != 50 || s.TrueMax != 60 {
		t.Errorf("got %+v", s)
	}
}

func TestStdevIsNotTruncatedToWholeMicroseconds(t *testing.T) {
	// perftest computes each deviation into an int, so spreads below 1 µs
	// report 0; these samples (plus the dropped tail) have stdev 0.25 µs.
	s := Summarize(lats(1.25, 1.75, 1.25, 1.75, 9, 9))
	if !near(s.Stdev, 0.25) {
		t.Errorf("t_stdev = %v, want 0.25", s.Stdev)
	}
}

func TestPercentilesIndexPastTheKeptSamplesAsPerftestDoes(t *testing.T) {
	// 1002 samples keep 1000: 99% is kept[990] (0-based), 99.9% kept[999].
	us := make([]float64, 1002)
	for i := range us {
		us[i] = float64(i + 1)
	}
	s := Summarize(lats(us...))
	if s.P99 != 991 || s.P999 != 1000 || s.Max != 1001 || s.TrueMax != 1002 {
		t.Errorf("99%% %v 99.9%% %v t_max %v max %v", s.P99, s.P999, s.Max, s.TrueMax)
	}
}

func TestTooFewSamplesGiveOnlyTheCount(t *testing.T) {
	for n := 0; n <= MeasureTail; n++ {
		if s := Summarize(lats(make([]float64, n)...)); s != (Summary{N: n}) {
			t.Errorf("%d samples: %+v", n, s)
		}
	}
}

func TestDistributionUsesNearestRank(t *testing.T) {
	ns := make([]int64, 100)
	for i := range ns {
		ns[i] = int64(100-i) * 1000 // 100 µs down to 1 µs
	}
	d := Distribution(ns)
	if d.N != 100 || d.Min != 1 || d.P50 != 50 || d.P90 != 90 || d.P99 != 99 || d.Max != 100 || d.Avg != 50.5 {
		t.Errorf("got %+v", d)
	}
	if (Distribution(nil) != Dist{}) {
		t.Error("empty input")
	}
}

func TestLinearFitRecoversALine(t *testing.T) {
	x := []float64{1, 2, 4, 8}
	y := []float64{12, 22, 42, 82} // 10x + 2
	f := LinearFit(x, y)
	if !near(f.Slope, 10) || !near(f.Intercept, 2) || !near(f.R2, 1) || f.N != 4 {
		t.Errorf("got %+v", f)
	}
	if f := LinearFit([]float64{3, 3}, []float64{1, 2}); f.Slope != 0 || f.N != 2 {
		t.Errorf("one x value: %+v", f)
	}
}

func TestRegFitGivesMicrosecondsPerGiB(t *testing.T) {
	var ops []Op
	for _, size := range []int64{4096, 1 << 20, 1 << 30} {
		// 100 µs per GiB plus 5 µs, in ns.
		dur := int64(5000 + float64(size)/(1<<30)*100000)
		ops = append(ops, Op{Name: "reg-mr", Size: size, Prefault: true, Dur: dur},
			Op{Name: "dereg-mr", Size: size, Prefault: true, Dur: 1},
			Op{Name: "reg-mr", Size: size, Prefault: false, Dur: 3 * dur})
	}
	f, perGiB := RegFit(ops, true)
	if math.Abs(perGiB-100) > 0.01 || math.Abs(f.Intercept-5) > 0.01 || f.N != 3 {
		t.Errorf("fit %+v, %v µs/GiB", f, perGiB)
	}
}
