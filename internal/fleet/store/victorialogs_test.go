package store

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/fleet/records"
)

// The queries quote every value that comes from the command line: a node
// name with a quote cannot end the string and add a filter.
func TestQueriesQuoteWhatTheyAreGiven(t *testing.T) {
	q := QPQueryText(QPQuery{Node: `b" OR "x":*`, Dev: "rxe0", QPN: 17, CreatedBy: time.Unix(0, 1796101200000000000)})
	want := `{event_name="rdma.qp.identity"} "rdma.qp.num":=17 "host.name":="b\" OR \"x\":*" "rdma.device":="rxe0" "rdma.qp.created":<=1796101200001000000`
	if q != want {
		t.Errorf("query\n got %s\nwant %s", q, want)
	}
	g := GIDQuery(netip.MustParseAddr("::ffff:10.0.0.2"), time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC))
	if want := `_time:<=2026-12-01T05:00:00Z {event_name="rdma.gid.entry"} "rdma.gid":="::ffff:10.0.0.2"`; g != want {
		t.Errorf("query\n got %s\nwant %s", g, want)
	}
	if q := QPQueryText(QPQuery{LocalGID: netip.MustParseAddr("fe80::1"), QPN: 3}); !strings.Contains(q, `"rdma.local.gid":="fe80::1"`) {
		t.Errorf("query by local GID: %s", q)
	}
}

// A bad line of an answer is an error naming it; the others are read.
func TestReadRowsNamesABadLine(t *testing.T) {
	in := "{\"a\":\"1\"}\nnot json\n\n{\"b\":\"2\"}\n{\"c\":3}\n"
	rows, err := ReadRows(strings.NewReader(in), 1<<20, "store")
	if len(rows) != 2 || err == nil || !strings.Contains(err.Error(), "answer line 2") || !strings.Contains(err.Error(), "answer line 5") {
		t.Errorf("rows %v, err %v", rows, err)
	}
	if _, err := ReadRows(strings.NewReader(strings.Repeat("{\"a\":\"1\"}\n", 100)), 50, "store"); err == nil || !strings.Contains(err.Error(), "longer than 50 bytes") {
		t.Errorf("an answer too long: %v", err)
	}
}

// The store's refusal is said with its words and the query; a password
// in the URL is never said.
func TestTheStoresErrorsAreSaid(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "me" || p != "secret" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		http.Error(w, "cannot parse query", http.StatusBadRequest)
	}))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://me:secret@", 1)
	s, err := Open(u, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.QPs(context.Background(), QPQuery{Node: "b", Dev: "rxe0", QPN: 1})
	if err == nil || !strings.Contains(err.Error(), "400 Bad Request") || !strings.Contains(err.Error(), "cannot parse query") || strings.Contains(err.Error(), "secret") {
		t.Errorf("error %v", err)
	}
	if strings.Contains(s.String(), "secret") {
		t.Errorf("the store's name %q shows the password", s)
	}
	srv.Close()
	_, err = s.GIDs(context.Background(), netip.MustParseAddr("::1"), time.Time{}, 1)
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Errorf("a store gone: %v", err)
	}
	for _, bad := range []string{"127.0.0.1:9428", "ftp://x", "http://"} {
		if _, err := Open(bad, Options{}); err == nil || !strings.Contains(err.Error(), "--store") {
			t.Errorf("Open(%q): %v", bad, err)
		}
	}
}

// FuzzReadAnswer: whatever a store answers, reading it and its records
// returns errors, never a panic.
func FuzzReadAnswer(f *testing.F) {
	f.Add([]byte(`{"host.name":"b","rdma.device":"rxe0","rdma.qp.num":"17","rdma.qp.created":"1","rdma.qp.fate":"signal","rdma.owner.signal":"SIGKILL","rdma.qp.transitions":"[\"RTS 2026-12-01T05:00:00Z\"]"}`))
	f.Add([]byte(`{"host.name":"b","rdma.device":"rxe0","rdma.port":"1","rdma.gid":"::ffff:1.2.3.4","rdma.gid.vlan":"5"}` + "\n{}\n"))
	f.Add([]byte("not json\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rows, _ := ReadRows(strings.NewReader(string(b)), 1<<20, "fuzz")
		for _, r := range rows {
			_, _ = records.ParseQP(r)
			_, _ = records.ParseGID(r)
		}
	})
}
