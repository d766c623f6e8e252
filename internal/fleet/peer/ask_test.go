package peer

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/fleet/store"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// fakeStore answers from its records, or with its errors.
type fakeStore struct {
	gids       []rdma.GIDRecord
	qps        []rdma.QPIdentity
	gerr, qerr error
}

func (s fakeStore) GIDs(context.Context, netip.Addr, time.Time, int) ([]rdma.GIDRecord, error) {
	return s.gids, s.gerr
}
func (s fakeStore) QPs(context.Context, store.QPQuery) ([]rdma.QPIdentity, error) {
	return s.qps, s.qerr
}
func (s fakeStore) String() string { return "the fake store" }

// peer's use case without a command line: a store URL it cannot use is
// its own error; a store that cannot be asked is the error and nothing
// is written; an answer is written, a partial read said on slog beside
// it; found says whether the QP was there.
func TestAsk(t *testing.T) {
	var sue *StoreURLError
	if _, err := Ask(AskOptions{Store: "ftp://nowhere", Timeout: time.Second}, nil); !errors.As(err, &sue) {
		t.Errorf("Ask(ftp://) = %v, want a StoreURLError", err)
	}
	var log bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&log, nil)))
	q := Query{Addr: netip.MustParseAddr("10.0.0.2"), QPN: 17}
	var wrote []Answer
	write := func(a Answer) error { wrote = append(wrote, a); return nil }

	down := errors.New("connection refused")
	if found, err := ask(context.Background(), fakeStore{gerr: down, qerr: down}, q, write); !errors.Is(err, down) || found || len(wrote) != 0 {
		t.Errorf("a store down: %v, %v, %d written; want its error, nothing written", found, err, len(wrote))
	}
	gid := rdma.GIDRecord{Node: "node-b", GIDEntry: rdma.GIDEntry{DevName: "rxe0", Port: 1, GID: q.GID()}}
	qp := rdma.QPIdentity{Node: "node-b", Dev: "rxe0", QPN: 17}
	found, err := ask(context.Background(), fakeStore{gids: []rdma.GIDRecord{gid}, qps: []rdma.QPIdentity{qp}}, q, write)
	if err != nil || !found || len(wrote) != 1 || wrote[0].QP == nil {
		t.Errorf("an answer: %v, %v, %+v", found, err, wrote)
	}
	wrote = nil
	found, err = ask(context.Background(), fakeStore{gids: []rdma.GIDRecord{gid}, qerr: errors.New("bad record\x1b[31m")}, q, write)
	if err != nil || found || len(wrote) != 1 {
		t.Errorf("no QP, a read failed: %v, %v, %d written; want the answer written, not found", found, err, len(wrote))
	}
	if got := log.String(); !strings.Contains(got, "peer: bad record") || strings.Contains(got, "\x1b") {
		t.Errorf("the partial read on slog: %q", got)
	}
}
