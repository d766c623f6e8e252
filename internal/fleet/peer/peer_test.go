package peer_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/fleet/otlp"
	"github.com/rdmatrace/rdmatrace/internal/fleet/peer"
	"github.com/rdmatrace/rdmatrace/internal/fleet/store"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// The answers of a real VictoriaLogs to the questions below are recorded
// in testdata/victorialogs.json, and the tests replay them. To record
// them again (after a change of the records or the queries):
//
//	go test ./internal/fleet/peer -run TestAnswers -record-vlogs PATH/victoria-logs
//
// (guest/vlogs.sh builds it).
var recordVLogs = flag.String("record-vlogs", "", "record the store's answers from this VictoriaLogs binary, started on a scratch directory")

const fixture = "testdata/victorialogs.json"

// t0 is the scenario's start: fixed, so that the recorded answers hold.
var t0 = time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// scenario is what node-b sent: its GID table, and QPN 17 on rxe0 twice.
// The first lifetime, ib_write_bw[999]'s, connected to node-a's QP 18,
// ended when its owner was killed by SIGKILL at +4 s; the second,
// rping[1000]'s, created at +5 s, is alive. QPN 40 was seen alive when
// node-b's rdmatrace started, then again after it restarted. node-c
// sent the other GID of the same address earlier (the address moved).
func scenario() (gids []rdma.GIDRecord, qps []rdma.QPIdentity) {
	gidB := netip.MustParseAddr("::ffff:10.98.1.2")
	gidA := netip.MustParseAddr("::ffff:10.98.1.1")
	gids = []rdma.GIDRecord{
		{Node: "node-c", GIDEntry: rdma.GIDEntry{DevName: "mlx5_0", Port: 1, Index: 3, GID: gidB, Type: rdma.GIDTypeRoCEv2, Eth: true, Netdev: "ens1f0"}, Time: ms(-3600_000)},
		{Node: "node-b", GIDEntry: rdma.GIDEntry{DevName: "rxe0", Port: 1, Index: 1, GID: gidB, Type: rdma.GIDTypeRoCEv2, Eth: true, Netdev: "eth0"}, Time: ms(-1000)},
	}
	bw := rdma.Owner{PID: 999, TID: 999, Comm: "ib_write_bw", Place: &rdma.Placement{Cgroup: "/kubepods/pod1234/cri-containerd-3f2a", Runtime: "containerd", ContainerID: "3f2a", PodUID: "1234-5678"}}
	first := rdma.QPIdentity{Node: "node-b", Dev: "rxe0", Port: 1, QPN: 17, Type: rdma.QPTypeRC, Created: ms(0), Owner: bw}
	rec := func(q rdma.QPIdentity, c rdma.QPChange, t time.Time) rdma.QPIdentity {
		q.Change, q.Time = c, t
		q.Transitions = append([]rdma.QPTransition(nil), q.Transitions...)
		return q
	}
	qps = append(qps, rec(first, rdma.QPCreated, ms(0)))
	first.LocalGID, first.RemoteGID, first.RemoteQPN, first.HasRemoteQPN = gidB, gidA, 18, true
	first.State = rdma.QPStateRTS
	first.AddTransition(rdma.QPStateRTR, ms(2))
	first.AddTransition(rdma.QPStateRTS, ms(3))
	qps = append(qps, rec(first, rdma.QPConnected, ms(500)))
	first.Fate, first.Ended, first.Signal = rdma.FateSignal, ms(4000), 9
	qps = append(qps, rec(first, rdma.QPEnded, ms(4000)))

	second := rdma.QPIdentity{Node: "node-b", Dev: "rxe0", Port: 1, QPN: 17, Type: rdma.QPTypeRC, Created: ms(5000),
		Owner: rdma.Owner{PID: 1000, TID: 1000, Comm: "rping"}}
	qps = append(qps, rec(second, rdma.QPCreated, ms(5000)))
	second.RemoteGID, second.RemoteQPN, second.HasRemoteQPN, second.State = gidA, 21, true, rdma.QPStateRTS
	second.AddTransition(rdma.QPStateRTR, ms(5002))
	qps = append(qps, rec(second, rdma.QPConnected, ms(5010)))

	seen := rdma.QPIdentity{Node: "node-b", Dev: "rxe0", Port: 1, QPN: 40, Type: rdma.QPTypeRC, Created: ms(-500), CreatedSeen: true,
		Owner: rdma.Owner{PID: 77, TID: 77, Comm: "train.py"}, State: rdma.QPStateRTS, RemoteQPN: 41, HasRemoteQPN: true}
	qps = append(qps, rec(seen, rdma.QPExists, ms(-500)))
	seen.Created = ms(6000) // node-b's rdmatrace restarted: first seen again
	qps = append(qps, rec(seen, rdma.QPExists, ms(6000)))
	return gids, qps
}

// question is one question of the tests, and what its answer must say.
type question struct {
	name    string
	addr    string
	qpn     uint32
	at      time.Time
	which   peer.Which
	owner   string // comm[pid] of the chosen lifetime
	fate    rdma.QPFate
	lives   int
	missing string
}

var questions = []question{
	{"at a time inside the first lifetime, the killed one", "10.98.1.2", 17, ms(3000), peer.WhichAt, "ib_write_bw[999]", rdma.FateSignal, 1, ""},
	{"at a time between the two lifetimes, the first as the last before", "::ffff:10.98.1.2", 17, ms(4500), peer.WhichBefore, "ib_write_bw[999]", rdma.FateSignal, 1, ""},
	{"at a time inside the second lifetime", "10.98.1.2", 17, ms(7000), peer.WhichAt, "rping[1000]", rdma.FateAlive, 2, ""},
	{"at the instant of the kill, the killed one", "10.98.1.2", 17, ms(4000), peer.WhichAt, "ib_write_bw[999]", rdma.FateSignal, 1, ""},
	{"now, the live one", "10.98.1.2", 17, time.Time{}, peer.WhichLive, "rping[1000]", rdma.FateAlive, 2, ""},
	{"a QP seen alive by two runs of the node's rdmatrace is one lifetime", "10.98.1.2", 40, time.Time{}, peer.WhichLive, "train.py[77]", rdma.FateAlive, 1, ""},
	{"before any lifetime", "10.98.1.2", 17, ms(-100), peer.WhichNone, "", rdma.FateAlive, 0, "no QP 17 created by"},
	{"a QPN never used there", "10.98.1.2", 99, time.Time{}, peer.WhichNone, "", rdma.FateAlive, 0, "no QP 99 was recorded there"},
	{"a GID no node reported", "10.98.9.9", 17, time.Time{}, peer.WhichNone, "", rdma.FateAlive, 0, "no node reported GID ::ffff:10.98.9.9"},
}

// recorded is the fixture: each question's (query, limit) and the answer.
type recorded struct {
	Answers map[string]string `json:"answers"` // "limit query" -> JSON lines
}

func keyOf(q url.Values) string { return q.Get("limit") + " " + q.Get("query") }

// replay serves the recorded answers; a question not recorded is a 400
// naming it (the recording is stale: record again).
func replay(t *testing.T, rec *recorded) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		ans, ok := rec.Answers[keyOf(r.Form)]
		if !ok || r.URL.Path != "/select/logsql/query" {
			t.Errorf("no recorded answer to %s %q (record again: -record-vlogs)", r.URL.Path, keyOf(r.Form))
			http.Error(w, "not recorded", http.StatusBadRequest)
			return
		}
		_, _ = io.WriteString(w, ans)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestAnswers(t *testing.T) {
	var base string
	var rec recorded
	var mu sync.Mutex
	if *recordVLogs != "" {
		real := startVictoriaLogs(t, *recordVLogs)
		send(t, real)
		rec.Answers = map[string]string{}
		// A proxy that records what the real store answers.
		target, _ := url.Parse(real)
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_ = r.ParseForm()
			u := *target
			u.Path = r.URL.Path
			resp, err := http.PostForm(u.String(), r.Form)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("the real store answered %s to %q: %s", resp.Status, keyOf(r.Form), b)
			}
			mu.Lock()
			rec.Answers[keyOf(r.Form)] = string(b)
			mu.Unlock()
			w.WriteHeader(resp.StatusCode)
			_, _ = w.Write(b)
		}))
		defer proxy.Close()
		base = proxy.URL
	} else {
		b, err := os.ReadFile(fixture)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			t.Fatalf("%s: %v", fixture, err)
		}
		base = replay(t, &rec).URL
	}
	s, err := store.Open(base, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range questions {
		t.Run(q.name, func(t *testing.T) {
			addr, err := peer.ParseAddr(q.addr)
			if err != nil {
				t.Fatal(err)
			}
			a, err := peer.Find(context.Background(), s, peer.Query{Addr: addr, QPN: q.qpn, At: q.at})
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if a.QP != nil {
				got = fmt.Sprintf("%s[%d]", a.QP.Owner.Comm, a.QP.Owner.PID)
			}
			if a.Which != q.which || got != q.owner || a.Lifetimes != q.lives || (a.QP != nil && a.QP.Fate != q.fate) ||
				!strings.Contains(a.Missing, q.missing) || (q.missing == "") != (a.Missing == "") {
				t.Errorf("answer: which %s, owner %q, %d lifetimes, missing %q; want %s, %q, %d, %q", a.Which, got, a.Lifetimes, a.Missing, q.which, q.owner, q.lives, q.missing)
			}
			if a.QP != nil && (a.Node != "node-b" || a.Dev != "rxe0" || a.Place == nil || a.Place.Node != "node-b") {
				t.Errorf("placed on %s %s (%+v), want node-b's rxe0 (its GID record is the newest; node-c's is older)", a.Node, a.Dev, a.Place)
			}
		})
	}
	if *recordVLogs != "" {
		b, err := json.MarshalIndent(&rec, "", "\t")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fixture, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		keys := make([]string, 0, len(rec.Answers))
		for k := range rec.Answers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.Logf("recorded %d answers into %s", len(keys), fixture)
	}
}

// startVictoriaLogs runs bin on a scratch directory and a free port until
// the test ends, and returns its base URL.
func startVictoriaLogs(t *testing.T, bin string) string { return startVictoriaLogsB(t, bin) }

func startVictoriaLogsB(t testing.TB, bin string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "-storageDataPath", filepath.Join(t.TempDir(), "vl"), "-httpListenAddr", addr,
		"-retentionPeriod", "100y", "-loggerLevel", "WARN")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("VictoriaLogs at %s did not answer /health in 30 s: %v", base, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// send sends the scenario through the OTLP sink, as the nodes would (one
// sink per node: the node is the resource's), and makes it searchable.
func send(t *testing.T, base string) {
	t.Helper()
	gids, qps := scenario()
	sinks := map[string]*otlp.Sink{}
	sink := func(node string) *otlp.Sink {
		if s := sinks[node]; s != nil {
			return s
		}
		s, err := otlp.New(context.Background(), base+"/insert/opentelemetry/v1/logs", otlp.Options{Node: node, NoRetry: true})
		if err != nil {
			t.Fatal(err)
		}
		sinks[node] = s
		return s
	}
	for i := range gids {
		sink(gids[i].Node).WriteGID(&gids[i].GIDEntry, gids[i].Time)
	}
	for i := range qps {
		sink(qps[i].Node).WriteQP(&qps[i])
	}
	for node, s := range sinks {
		if st := s.Close(context.Background()); st.Sent != st.Emitted {
			t.Fatalf("%s: %+v", node, st)
		}
	}
	forceFlush(t, base)
}

// forceFlush makes what the store took searchable at once.
func forceFlush(t testing.TB, base string) {
	resp, err := http.Get(base + "/internal/force_flush")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}
