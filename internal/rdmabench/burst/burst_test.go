package burst

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/rdmabench/bench"
	"github.com/rdmatrace/rdmatrace/internal/rdmabench/verbs"
)

// fakeRank stands in for a rank's verbs: QP numbers from a counter shared
// by the ranks, steps timed with the real clock.
type fakeRank struct {
	cfg     verbs.BurstConfig
	qps     []bench.BurstQP
	failAt  string // "connect" or "destroy": fail there
	freed   *atomic.Int32
	setup   []bench.StepTime
	stepsOf int
}

var nextQPN atomic.Uint32

func (f *fakeRank) Connect() error {
	if f.failAt == "connect" {
		return errors.New("ibv_create_qp, QP 3 of 4: Cannot allocate memory")
	}
	for i := range f.qps {
		f.qps[i].QPN = nextQPN.Add(1)
		for s := 0; s < f.stepsOf-1; s++ {
			f.qps[i].Steps[s] = bench.StepTime{Start: verbs.Now(), Dur: 1000}
		}
	}
	return nil
}

func (f *fakeRank) Destroy() error {
	if f.failAt == "destroy" {
		return errors.New("ibv_destroy_qp, QP 1: Device or resource busy")
	}
	for i := range f.qps {
		f.qps[i].Steps[f.stepsOf-1] = bench.StepTime{Start: verbs.Now(), Dur: 1000}
	}
	return nil
}

func (f *fakeRank) Close()                      { f.setup[3] = bench.StepTime{Start: verbs.Now(), Dur: 10} }
func (f *fakeRank) Free()                       { f.freed.Add(1) }
func (f *fakeRank) QPs() []bench.BurstQP        { return f.qps }
func (f *fakeRank) TID() int                    { return 7 }
func (f *fakeRank) RankSteps() []bench.StepTime { return f.setup }

// fakeRanks replaces the verbs for a test; fail makes rank (by its CM
// port's offset) fail at a step.
func fakeRanks(t *testing.T, fail map[int]string) (freed *atomic.Int32, opened *sync.Map) {
	freed, opened = &atomic.Int32{}, &sync.Map{}
	saved := openRank
	t.Cleanup(func() { openRank = saved })
	openRank = func(cfg verbs.BurstConfig) (rankVerbs, error) {
		idx := cfg.CMPort - 1000
		opened.Store(idx, true)
		if fail[idx] == "open" {
			return nil, errors.New("no RDMA device rxe9")
		}
		n := len(verbs.BurstVerbsSteps)
		if cfg.CM {
			n = len(verbs.BurstCMSteps)
		}
		return &fakeRank{cfg: cfg, qps: make([]bench.BurstQP, cfg.QPs), failAt: fail[idx], freed: freed, stepsOf: n,
			setup: []bench.StepTime{{Start: verbs.Now(), Dur: 100}, {Start: verbs.Now(), Dur: 50}, {Start: verbs.Now(), Dur: 60}, {}, {}, {}}}, nil
	}
	return freed, opened
}

// TestRanksRunTogetherAndReportTheirQPs: in thread mode every rank is made,
// told to go, held and told to destroy; each reports its QPs with all
// their steps, and is freed.
func TestRanksRunTogetherAndReportTheirQPs(t *testing.T) {
	freed, _ := fakeRanks(t, nil)
	held := filepath.Join(t.TempDir(), "held")
	go func() {
		for {
			if b, err := os.ReadFile(held); err == nil {
				if strings.Count(string(b), "\n") == 3 && strings.Contains(string(b), "rank 2 pid ") {
					os.Remove(held)
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	r, err := Run(Options{Dev: "rxe0", Ranks: 3, QPs: 5, CMPort: 1000, HoldFile: held, Hold: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Threads || r.Mode != "verbs" || r.Tracing != "off" || r.Traced != nil {
		t.Errorf("report %+v: want threads, verbs, untraced only", r)
	}
	p := r.Untraced
	if p.QPs() != 15 || len(p.Ranks) != 3 || p.Go == 0 {
		t.Fatalf("%d QPs in %d ranks (go at %d), want 15 in 3", p.QPs(), len(p.Ranks), p.Go)
	}
	seen := map[uint32]bool{}
	for _, rk := range p.Ranks {
		if rk.PID != os.Getpid() || rk.TID != 7 || len(rk.Setup) != 6 || rk.Setup[3].Start == 0 {
			t.Errorf("rank %+v: want this pid, tid 7, its setup and close timed", rk)
		}
		for _, q := range rk.QPs {
			if seen[q.QPN] || q.Steps[0].Start < p.Go || q.Steps[4].Start == 0 {
				t.Errorf("QP %+v: want a number of its own, created after go, destroyed", q)
			}
			seen[q.QPN] = true
		}
	}
	if _, err := os.Stat(held); !errors.Is(err, os.ErrNotExist) {
		t.Error("the hold file is still there: the burst did not wait for its removal")
	}
	if freed.Load() != 3 {
		t.Errorf("%d ranks freed, want 3", freed.Load())
	}
}

// A rank that fails names itself and its error; every rank is freed (the
// others were told to stop).
func TestAFailedRankStopsTheOthers(t *testing.T) {
	for _, at := range []string{"open", "connect", "destroy"} {
		t.Run(at, func(t *testing.T) {
			freed, _ := fakeRanks(t, map[int]string{1: at})
			_, err := Run(Options{Dev: "rxe0", Ranks: 3, QPs: 4, CMPort: 1000})
			if err == nil || !strings.Contains(err.Error(), "rank 1: ") {
				t.Fatalf("error %v: want rank 1's", err)
			}
			wantFreed := int32(3)
			if at == "open" {
				wantFreed = 2 // rank 1 never had anything
			}
			deadline := time.Now().Add(5 * time.Second)
			for freed.Load() != wantFreed && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if freed.Load() != wantFreed {
				t.Errorf("%d ranks freed, want %d", freed.Load(), wantFreed)
			}
		})
	}
}

// Over rdma_cm the steps are cmtime's, and each rank gets its own port.
func TestRanksOverCMListenOnTheirOwnPorts(t *testing.T) {
	_, opened := fakeRanks(t, nil)
	r, err := Run(Options{Dev: "rxe0", Ranks: 2, QPs: 4, CM: true, CMPort: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if r.Mode != "rdma_cm" || len(r.Untraced.Steps) != len(verbs.BurstCMSteps) {
		t.Errorf("mode %s, steps %v", r.Mode, r.Untraced.Steps)
	}
	for _, i := range []int{0, 1} {
		if _, ok := opened.Load(i); !ok {
			t.Errorf("no rank on port 1000+%d", i)
		}
	}
}
