package otlp

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/ratelog"
)

var (
	vlogsBin   = flag.String("vlogs", "", "VictoriaLogs' binary (guest/vlogs.sh builds it): TestRealStoreStoppedUnderChurn stops and restarts it")
	outageTime = flag.Duration("outage", 30*time.Second, "how long TestRealStoreStoppedUnderChurn keeps the store stopped")
)

// vlogs is a VictoriaLogs process on a data directory and address of its
// own, which the test stops and starts again.
type vlogs struct {
	t         *testing.T
	bin, dir  string
	addr      string
	cmd       *exec.Cmd
	startedAt time.Time
}

func (v *vlogs) start() {
	v.t.Helper()
	v.cmd = exec.Command(v.bin, "-storageDataPath", v.dir, "-httpListenAddr", v.addr, "-retentionPeriod", "100y", "-loggerLevel", "ERROR")
	if err := v.cmd.Start(); err != nil {
		v.t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + v.addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				v.startedAt = time.Now()
				return
			}
		}
		if time.Now().After(deadline) {
			v.t.Fatalf("VictoriaLogs at %s did not answer /health in 30 s: %v", v.addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop ends it as its operator would (SIGTERM: what it took is kept).
func (v *vlogs) stop() {
	_ = v.cmd.Process.Signal(syscall.SIGTERM)
	_ = v.cmd.Wait()
}

// count is how many QP identity records the store holds.
func (v *vlogs) count() int {
	v.t.Helper()
	resp, err := http.Get("http://" + v.addr + "/internal/force_flush")
	if err == nil {
		resp.Body.Close()
	}
	q := url.Values{"query": {`{event_name="rdma.qp.identity"} | stats count() n`}}
	resp, err = http.PostForm("http://"+v.addr+"/select/logsql/query", q)
	if err != nil {
		v.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var row struct{ N string }
		if json.Unmarshal(sc.Bytes(), &row) == nil && row.N != "" {
			n, _ := strconv.Atoi(row.N)
			return n
		}
	}
	v.t.Fatalf("VictoriaLogs gave no count (status %d)", resp.StatusCode)
	return 0
}

// The store stopped for -outage (30 s) under a churn of 1 000 QP records
// a second, with the delivery's defaults (a queue of 8192, batches of
// 512 a second, retries from 1 s doubling to 30 s): the node goes on,
// every record written is sent or counted as dropped, exactly; the store
// holds exactly those sent; sending resumes by itself once the store is
// back, and the time it took is said.
//
//	go test ./internal/fleet/otlp -run RealStore -v -vlogs PATH/victoria-logs
func TestRealStoreStoppedUnderChurn(t *testing.T) {
	if *vlogsBin == "" {
		t.Skip("-vlogs: VictoriaLogs' binary is needed (guest/vlogs.sh builds it)")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	v := &vlogs{t: t, bin: *vlogsBin, dir: filepath.Join(t.TempDir(), "vl"), addr: ln.Addr().String()}
	ln.Close()
	v.start()
	t.Cleanup(func() { _ = v.cmd.Process.Kill(); _ = v.cmd.Wait() })

	var log syncBuffer
	s, err := New(context.Background(), "http://"+v.addr+"/insert/opentelemetry/v1/logs", Options{Node: "node-churn", Log: ratelog.New(&log, time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	// The churn: a record a millisecond, each QPN once.
	n := uint32(0)
	began := time.Now()
	churn := func(d time.Duration) {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for end := time.Now().Add(d); time.Now().Before(end); {
			<-tick.C
			n++
			s.WriteQP(qpRecord(n))
		}
	}
	churn(5 * time.Second)
	before := s.Stats()

	v.stop()
	churn(*outageTime)
	during := s.Stats()
	if during.Dropped == 0 || during.Queued > DefaultQueueSize {
		t.Errorf("after %v of the store stopped: %+v; want drops counted and at most %d queued", *outageTime, during, DefaultQueueSize)
	}

	v.start()
	backAt := v.startedAt
	sentAtRestart := s.Stats().Sent
	var recovered time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		for time.Since(backAt) < 60*time.Second {
			if s.Stats().Sent > sentAtRestart {
				recovered = time.Since(backAt)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	churn(10 * time.Second)
	churned := time.Since(began)
	<-done
	if recovered == 0 {
		t.Fatalf("nothing sent within 60 s of the store's return: %+v\n%s", s.Stats(), log.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	end := s.Close(ctx)

	written := uint64(n)
	if end.Emitted != written || end.Sent+end.Dropped+end.Refused != written || end.Refused != 0 || end.Queued != 0 {
		t.Errorf("end %+v: %d written; want each sent or dropped, none refused or left", end, written)
	}
	stored := v.count()
	if uint64(stored) != end.Sent {
		t.Errorf("the store holds %d records, the node says it sent %d", stored, end.Sent)
	}
	t.Logf("%d records written (%.0f a second); the store stopped for %v after 5 s (%d sent by then); %d dropped during the outage, %d queued at its end; "+
		"sending resumed %v after the store was back; at the end %d sent, %d dropped, the store holds %d",
		written, float64(written)/churned.Seconds(), *outageTime, before.Sent, during.Dropped, during.Queued, recovered.Round(time.Millisecond), end.Sent, end.Dropped, stored)
	if t.Failed() {
		t.Logf("the delivery said:\n%s", log.String())
	}
}
