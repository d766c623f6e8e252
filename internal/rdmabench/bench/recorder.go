package bench

import (
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// A latency series of any length in bounded memory. The timing loop hands
// its samples over in chunks (ChunkSamples at a time) and a Recorder keeps
// what the report and the correlation need:
//
//   - every sample, while the series has at most Exact of them (the -n runs:
//     their summary and outliers are exactly what Summarize gives);
//   - beyond that, a log-linear histogram (fixed size, values below 4096 ns
//     exact, above within 1/4096 of their value), the exact minimum and
//     maximum, exact sums for t_avg and t_stdev, and the worst Worst samples
//     exactly (perftest's t_max and the top percentiles when they fall among
//     them);
//   - as outlier candidates: the worst Worst samples, and a uniform reservoir
//     of Reservoir samples among those above the outlier threshold as it
//     stood (from the histogram so far) when they ran;
//   - a time series for the plot and the Perfetto file: every k-th sample,
//     at most Series of them (k doubles when it fills).

// ChunkSamples is how many samples the timing loop hands over at a time.
const ChunkSamples = 1 << 16

// Defaults of RecorderConfig.
const (
	ExactSamples     = 1 << 20 // 16 MiB of samples
	WorstSamples     = 10_000
	ReservoirSamples = 10_000
	SeriesSamples    = 250_000
)

// histBits is the histogram's precision: 2^histBits buckets per octave,
// and every value below 2^(histBits+1) ns has a bucket of its own.
const histBits = 11

// histBuckets covers every non-negative int64 (the largest has 63 bits).
const histBuckets = (63-histBits-1)<<histBits + 2<<histBits

// HistRelErr bounds the relative error of a percentile taken from the
// histogram (half a bucket's width over its lower bound).
const HistRelErr = 1.0 / (2 << histBits)

// RecorderConfig sizes a Recorder; zero fields take the defaults.
type RecorderConfig struct {
	Factor    float64 // an outlier is above max(p99, Factor × median); 0: 3
	Exact     int     // samples kept whole; past this many, the histogram
	Worst     int     // the worst samples kept exactly
	Reservoir int     // candidates kept at random among those above the running threshold
	Series    int     // samples kept for the plot (every k-th)
}

// Indexed is a sample and its place in its series.
type Indexed struct {
	Index int
	Sample
}

// Recorder takes a series chunk by chunk.
type Recorder struct {
	cfg RecorderConfig

	n        int
	blocks   [][]Sample // every sample while n ≤ cfg.Exact; nil past it
	min, max int64
	sum, sq  u128 // of the latencies in ns, and of their squares: exact for 2^48 samples below 2^40 ns (18 min)
	hist     []uint64
	last     Sample

	worst   []Indexed // a min-heap on Lat
	res     []Indexed
	resSeen int
	resThr  int64 // the outlier threshold of the histogram so far
	rng     *rand.Rand
	series  []Sample
	stride  int
}

type u128 struct{ hi, lo uint64 }

func (a *u128) add(x uint64) {
	var c uint64
	a.lo, c = bits.Add64(a.lo, x, 0)
	a.hi += c
}

func (a *u128) addSq(x uint64) {
	hi, lo := bits.Mul64(x, x)
	var c uint64
	a.lo, c = bits.Add64(a.lo, lo, 0)
	a.hi, _ = bits.Add64(a.hi, hi, c)
}

func (a u128) big() *big.Int {
	b := new(big.Int).SetUint64(a.hi)
	b.Lsh(b, 64)
	return b.Or(b, new(big.Int).SetUint64(a.lo))
}

// NewRecorder makes an empty Recorder.
func NewRecorder(cfg RecorderConfig) *Recorder {
	if cfg.Factor <= 0 {
		cfg.Factor = 3
	}
	if cfg.Exact <= 0 {
		cfg.Exact = ExactSamples
	}
	if cfg.Worst <= 0 {
		cfg.Worst = WorstSamples
	}
	cfg.Worst = max(cfg.Worst, MeasureTail+1)
	if cfg.Reservoir <= 0 {
		cfg.Reservoir = ReservoirSamples
	}
	if cfg.Series <= 0 {
		cfg.Series = SeriesSamples
	}
	return &Recorder{cfg: cfg, min: math.MaxInt64, hist: make([]uint64, histBuckets), stride: 1,
		rng: rand.New(rand.NewPCG(1, 2))}
}

func bucket(v int64) int {
	u := uint64(max(v, 0))
	e := bits.Len64(u) - (histBits + 1)
	if e <= 0 {
		return int(u)
	}
	return e<<histBits + int(u>>e)
}

// bucketRange is the values [lo, lo+width) of bucket i.
func bucketRange(i int) (lo, width int64) {
	if i < 2<<histBits {
		return int64(i), 1
	}
	e := i>>histBits - 1
	return int64(i-e<<histBits) << e, 1 << e
}

// N is the number of samples so far.
func (r *Recorder) N() int { return r.n }

// Exact tells whether every sample is still kept.
func (r *Recorder) Exact() bool { return r.blocks != nil || r.n == 0 }

// End is when the last sample ended (0: none).
func (r *Recorder) End() int64 { return r.last.Start + r.last.Lat }

// Add takes a chunk of samples in time order; chunk is not retained.
// Past the exact budget it allocates nothing.
func (r *Recorder) Add(chunk []Sample) {
	if len(chunk) == 0 {
		return
	}
	if r.n+len(chunk) <= r.cfg.Exact {
		r.keepExact(chunk)
	} else {
		r.blocks = nil // the histogram from here
	}
	first := r.n
	for _, s := range chunk {
		r.hist[bucket(s.Lat)]++
		r.min, r.max = min(r.min, s.Lat), max(r.max, s.Lat)
		u := uint64(max(s.Lat, 0))
		r.sum.add(u)
		r.sq.addSq(u)
	}
	r.n += len(chunk)
	r.last = chunk[len(chunk)-1]
	r.resThr = r.runningThreshold()
	for i, s := range chunk {
		x := Indexed{Index: first + i, Sample: s}
		r.pushWorst(x)
		if s.Lat > r.resThr {
			r.sampleRes(x)
		}
		if x.Index%r.stride == 0 {
			r.keepSeries(x)
		}
	}
}

// runningThreshold is max(p99, factor × median) of the histogram so far,
// in ns; it allocates nothing.
func (r *Recorder) runningThreshold() int64 {
	if r.n <= MeasureTail {
		return 0
	}
	m := r.n - MeasureTail
	ks := [3]int{m/2 - 1, m / 2, int(math.Ceil(float64(m) * 0.99))}
	if m < 2 {
		ks[0] = 0
	}
	var v [3]float64
	r.histRanks(ks[:], v[:])
	med := v[1]
	if (m-1)%2 != 0 {
		med = (v[0] + v[1]) / 2
	}
	return max(int64(math.Round(v[2])), int64(math.Round(r.cfg.Factor*med)))
}

// histRanks sets v[i] to the histogram's value of rank ks[i] (ks ascending,
// 0: the smallest), in ns: the middle of its bucket, within [min, max].
func (r *Recorder) histRanks(ks []int, v []float64) {
	var c uint64
	j := 0
	for i, h := range r.hist {
		c += h
		for j < len(ks) && c > uint64(ks[j]) {
			lo, w := bucketRange(i)
			x := float64(lo) + float64(w-1)/2
			v[j] = math.Min(math.Max(x, float64(r.min)), float64(r.max))
			j++
		}
		if j == len(ks) {
			return
		}
	}
	for ; j < len(ks); j++ {
		v[j] = float64(r.max)
	}
}

func (r *Recorder) keepExact(chunk []Sample) {
	for len(chunk) > 0 {
		if len(r.blocks) == 0 || len(r.blocks[len(r.blocks)-1]) == cap(r.blocks[len(r.blocks)-1]) {
			r.blocks = append(r.blocks, make([]Sample, 0, min(ChunkSamples, r.cfg.Exact)))
		}
		b := &r.blocks[len(r.blocks)-1]
		k := min(len(chunk), cap(*b)-len(*b))
		*b = append(*b, chunk[:k]...)
		chunk = chunk[k:]
	}
}

func (r *Recorder) pushWorst(x Indexed) {
	h := r.worst
	if len(h) < r.cfg.Worst {
		if h == nil {
			h = make([]Indexed, 0, r.cfg.Worst)
		}
		h = append(h, x)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if h[p].Lat <= h[i].Lat {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		r.worst = h
		return
	}
	if x.Lat <= h[0].Lat {
		return
	}
	h[0] = x
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(h) && h[l].Lat < h[m].Lat {
			m = l
		}
		if l+1 < len(h) && h[l+1].Lat < h[m].Lat {
			m = l + 1
		}
		if m == i {
			break
		}
		h[m], h[i] = h[i], h[m]
		i = m
	}
}

// sampleRes is Algorithm R over the samples above the running threshold.
func (r *Recorder) sampleRes(x Indexed) {
	r.resSeen++
	if len(r.res) < r.cfg.Reservoir {
		if r.res == nil {
			r.res = make([]Indexed, 0, r.cfg.Reservoir)
		}
		r.res = append(r.res, x)
		return
	}
	if j := r.rng.IntN(r.resSeen); j < len(r.res) {
		r.res[j] = x
	}
}

// keepSeries keeps x, whose index is a multiple of the stride; when the
// series is full it keeps every other one (the multiples of twice the
// stride) and doubles the stride.
func (r *Recorder) keepSeries(x Indexed) {
	if len(r.series) == r.cfg.Series {
		k := 0
		for i := 0; i < len(r.series); i += 2 {
			r.series[k] = r.series[i]
			k++
		}
		r.series = r.series[:k]
		r.stride *= 2
		if x.Index%r.stride != 0 {
			return
		}
	}
	if r.series == nil {
		r.series = make([]Sample, 0, min(r.cfg.Series, 4096))
	}
	if len(r.series) == cap(r.series) { // grow to the cap, no further
		r.series = append(make([]Sample, 0, min(r.cfg.Series, 2*cap(r.series))), r.series...)
	}
	r.series = append(r.series, x.Sample)
}

// Series is every k-th sample (k a power of two), at most the configured
// number, in time order; the Recorder keeps it.
func (r *Recorder) Series() []Sample { return r.series }

// Samples is every sample of the series while it is exact (nil beyond).
func (r *Recorder) Samples() []Sample {
	if r.blocks == nil {
		return nil
	}
	out := make([]Sample, 0, r.n)
	for _, b := range r.blocks {
		out = append(out, b...)
	}
	return out
}

// Threshold is max(p99, factor × median) of s, in ns.
func Threshold(s Summary, factor float64) int64 {
	return max(int64(math.Round(s.P99*1e3)), int64(math.Round(factor*s.Typical*1e3)))
}

// Summary is the series' Summary: Summarize's exactly while every sample is
// kept; beyond, from the histogram (FromHistogram set).
func (r *Recorder) Summary() Summary {
	if r.Exact() {
		d := make([]float64, 0, r.n)
		for _, b := range r.blocks {
			for _, x := range b {
				d = append(d, float64(x.Lat)/1e3)
			}
		}
		return summarizeUS(d)
	}
	return r.histSummary()
}

// worstSorted is the worst samples' latencies, largest first.
func (r *Recorder) worstSorted() []int64 {
	w := make([]int64, len(r.worst))
	for i, x := range r.worst {
		w[i] = x.Lat
	}
	slices.Sort(w)
	slices.Reverse(w)
	return w
}

// rankValue is the latency of rank k (0: the smallest) in ns: exact when
// it is among the worst kept (worst: largest first), else from the
// histogram.
func (r *Recorder) rankValue(k int, worst []int64) float64 {
	if top := r.n - 1 - k; top < len(worst) {
		return float64(worst[top])
	}
	var v [1]float64
	r.histRanks([]int{k}, v[:])
	return v[0]
}

// histSummary is the Summary from the histogram, the exact extremes, the
// worst samples and the exact sums.
func (r *Recorder) histSummary() Summary {
	s := Summary{N: r.n, FromHistogram: true}
	if r.n <= MeasureTail {
		return s
	}
	worst := r.worstSorted()
	m := r.n - MeasureTail
	val := func(k int) float64 { return r.rankValue(k, worst) / 1e3 }
	s.Min, s.TrueMax = float64(r.min)/1e3, float64(r.max)/1e3
	s.Max = val(m)
	if (m-1)%2 != 0 {
		s.Typical = (val(m/2) + val(m/2-1)) / 2
	} else {
		s.Typical = val(m / 2)
	}
	s.P99 = val(int(math.Ceil(float64(m) * 0.99)))
	s.P999 = val(int(math.Ceil(float64(m) * 0.999)))
	// The kept samples' sums: all of them less the tail.
	sum, sq := r.sum.big(), r.sq.big()
	for _, t := range worst[:MeasureTail] {
		b := big.NewInt(t)
		sum.Sub(sum, b)
		sq.Sub(sq, b.Mul(b, b))
	}
	mb := big.NewInt(int64(m))
	avg, _ := new(big.Float).Quo(new(big.Float).SetInt(sum), new(big.Float).SetInt(mb)).Float64()
	s.Avg = avg / 1e3
	// m·Σx² − (Σx)², over m², exact until the division.
	num := new(big.Int).Mul(mb, sq)
	num.Sub(num, new(big.Int).Mul(sum, sum))
	v, _ := new(big.Float).Quo(new(big.Float).SetInt(num), new(big.Float).SetInt(new(big.Int).Mul(mb, mb))).Float64()
	s.Stdev = math.Sqrt(math.Max(v, 0)) / 1e3
	return s
}

// Above is the series' samples above threshold (ns), in time order, and how
// many there are. While every sample is kept, they are all of them. Beyond,
// they are those among the candidates (the worst and the reservoir) above
// it: all of them if the worst kept include one at or below threshold
// (complete), else a subset, and total is estimated from the histogram.
func (r *Recorder) Above(threshold int64) (out []Indexed, total int, complete bool) {
	if r.blocks != nil {
		i := 0
		for _, b := range r.blocks {
			for _, x := range b {
				if x.Lat > threshold {
					out = append(out, Indexed{Index: i, Sample: x})
				}
				i++
			}
		}
		return out, len(out), true
	}
	seen := make(map[int]bool, len(r.worst)+len(r.res))
	complete = len(r.worst) < r.cfg.Worst
	for _, x := range r.worst {
		if x.Lat <= threshold {
			complete = true
			continue
		}
		seen[x.Index] = true
		out = append(out, x)
	}
	if complete {
		total = len(out)
	} else {
		for _, x := range r.res {
			if x.Lat > threshold && !seen[x.Index] {
				seen[x.Index] = true
				out = append(out, x)
			}
		}
		total = max(len(out), r.countAbove(threshold))
	}
	slices.SortFunc(out, func(a, b Indexed) int { return a.Index - b.Index })
	return out, total, complete
}

// countAbove estimates from the histogram how many samples exceed v: the
// bucket that holds v is split in proportion.
func (r *Recorder) countAbove(v int64) int {
	b := bucket(v)
	var c float64
	for i := b + 1; i < len(r.hist); i++ {
		c += float64(r.hist[i])
	}
	lo, w := bucketRange(b)
	c += float64(r.hist[b]) * float64(lo+w-1-v) / float64(w)
	return int(math.Round(c))
}
