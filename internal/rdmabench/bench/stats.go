package bench

import (
	"math"
	"slices"
)

// Summary is perftest's latency report (src/perftest_parameters.c,
// print_report_lat) over a run's samples, in µs, plus the true maximum and a
// correct standard deviation. perftest sorts the samples and drops the 2
// largest (LAT_MEASURE_TAIL) before everything but t_max; we do the same so
// the columns compare one to one.
type Summary struct {
	N       int     // samples
	Min     float64 // t_min: the smallest
	Max     float64 // t_max: perftest's, the 2nd largest (the first sample past the dropped tail)
	Typical float64 // t_typical: the median of the kept samples
	Avg     float64 // t_avg: the mean of the kept samples
	Stdev   float64 // t_stdev: of the kept samples, without perftest's truncation to whole µs
	P99     float64 // 99% percentile: kept[ceil(0.99·kept)]
	P999    float64 // 99.9% percentile: kept[ceil(0.999·kept)]
	TrueMax float64 // the largest sample, which perftest never shows
	// FromHistogram: the percentiles come from a Recorder's histogram
	// (within HistRelErr; exact below 4096 ns and among its worst samples),
	// not from every sample; min, max, t_avg and t_stdev are exact.
	FromHistogram bool
}

// MeasureTail is how many of the largest samples perftest leaves out.
const MeasureTail = 2

// Summarize computes the Summary of samples; with fewer than MeasureTail+1
// samples it returns only N (perftest has nothing to report either).
func Summarize(samples []Sample) Summary {
	if len(samples) <= MeasureTail {
		return Summary{N: len(samples)}
	}
	d := make([]float64, len(samples))
	for i, x := range samples {
		d[i] = float64(x.Lat) / 1e3
	}
	return summarizeUS(d)
}

// summarizeUS is Summarize over latencies in µs, which it sorts.
func summarizeUS(d []float64) Summary {
	s := Summary{N: len(d)}
	if len(d) <= MeasureTail {
		return s
	}
	slices.Sort(d)
	m := len(d) - MeasureTail
	s.Min, s.Max, s.TrueMax = d[0], d[m], d[len(d)-1]
	// perftest's get_median over the first m.
	if (m-1)%2 != 0 {
		s.Typical = (d[m/2] + d[m/2-1]) / 2
	} else {
		s.Typical = d[m/2]
	}
	var sum float64
	for _, x := range d[:m] {
		sum += x
	}
	s.Avg = sum / float64(m)
	var sq float64
	for _, x := range d[:m] {
		sq += (x - s.Avg) * (x - s.Avg)
	}
	s.Stdev = math.Sqrt(sq / float64(m))
	s.P99 = d[int(math.Ceil(float64(m)*0.99))]
	s.P999 = d[int(math.Ceil(float64(m)*0.999))]
	return s
}

// Dist is a distribution of durations in µs: for connection steps and
// control-path operations, where no sample is dropped.
type Dist struct {
	N                       int
	Min, P50, P90, P99, Max float64
	Avg                     float64
}

// Distribution summarises durations given in ns. Percentiles are
// nearest-rank on the sorted values.
func Distribution(ns []int64) Dist {
	d := Dist{N: len(ns)}
	if len(ns) == 0 {
		return d
	}
	v := make([]float64, len(ns))
	var sum float64
	for i, x := range ns {
		v[i] = float64(x) / 1e3
		sum += v[i]
	}
	slices.Sort(v)
	rank := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(v)))) - 1
		return v[max(0, min(i, len(v)-1))]
	}
	d.Min, d.Max, d.Avg = v[0], v[len(v)-1], sum/float64(len(v))
	d.P50, d.P90, d.P99 = rank(0.50), rank(0.90), rank(0.99)
	return d
}

// Fit is a least-squares line y = Slope·x + Intercept with its coefficient
// of determination.
type Fit struct {
	Slope, Intercept, R2 float64
	N                    int
}

// LinearFit fits y over x by least squares. It needs two distinct x values;
// otherwise the zero Fit with N set is returned.
func LinearFit(x, y []float64) Fit {
	f := Fit{N: len(x)}
	n := float64(len(x))
	if len(x) != len(y) || len(x) < 2 {
		return f
	}
	var sx, sy, sxx, sxy, syy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
		syy += y[i] * y[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return f
	}
	f.Slope = (n*sxy - sx*sy) / den
	f.Intercept = (sy - f.Slope*sx) / n
	vy := n*syy - sy*sy
	if vy > 0 {
		r := (n*sxy - sx*sy) / math.Sqrt(den*vy)
		f.R2 = r * r
	} else {
		f.R2 = 1
	}
	return f
}

// RegFit fits registration time (µs) over size (bytes) for the reg-mr ops
// with the given prefault choice, and gives µs per GiB from its slope.
func RegFit(ops []Op, prefault bool) (fit Fit, usPerGiB float64) {
	var x, y []float64
	for _, o := range ops {
		if o.Name == "reg-mr" && o.Prefault == prefault {
			x = append(x, float64(o.Size))
			y = append(y, float64(o.Dur)/1e3)
		}
	}
	fit = LinearFit(x, y)
	return fit, fit.Slope * (1 << 30)
}
