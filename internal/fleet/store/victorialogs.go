package store

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/fleet/records"
	"github.com/rdmatrace/rdmatrace/internal/rdma"
)

// VictoriaLogs is a VictoriaLogs server (single node, or a cluster's
// vlselect) asked in LogsQL over HTTP (/select/logsql/query). The nodes
// send to it over OTLP (/insert/opentelemetry/v1/logs): the resource's
// attributes (host.name) and the record's event name are its stream
// fields, the record's attributes its fields.
type VictoriaLogs struct {
	base   *url.URL
	client *http.Client
	o      Options
}

// NewVictoriaLogs checks base (http(s)://HOST:PORT, with user:password@
// for basic auth) and makes the client.
func NewVictoriaLogs(base string, o Options) (*VictoriaLogs, error) {
	u, err := url.Parse(base)
	if !strings.Contains(base, "://") {
		err = nil
		u = &url.URL{}
	}
	if err != nil {
		return nil, fmt.Errorf("--store %q: %w", base, errors.Unwrap(err))
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--store %q: expected the store's base URL, http://HOST:9428", base)
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxResponse <= 0 {
		o.MaxResponse = 16 << 20
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	return &VictoriaLogs{base: u, client: &http.Client{Timeout: o.Timeout + 5*time.Second}, o: o}, nil
}

func (v *VictoriaLogs) String() string {
	u := *v.base
	u.User = nil // no password in messages
	return "VictoriaLogs at " + u.String()
}

// Quote is a LogsQL string literal: double quotes, with backslash escapes
// as Go's (LogsQL reads strconv.Unquote's syntax), so that a value from
// the command line can never change the query.
func Quote(s string) string { return strconv.Quote(s) }

// GIDQuery is the LogsQL for GIDs.
func GIDQuery(gid netip.Addr, until time.Time) string {
	q := fmt.Sprintf(`{event_name=%s} %s:=%s`, Quote(records.EventGID), Quote(records.KeyGID), Quote(records.GIDText(gid)))
	if !until.IsZero() {
		q = fmt.Sprintf("_time:<=%s ", until.UTC().Format(time.RFC3339Nano)) + q
	}
	return q
}

// QPQueryText is the LogsQL for QPs. The creation bound is compared as a
// number, which the store may round (a float's 53 bits): it is widened by
// a millisecond here and applied exactly by the caller.
func QPQueryText(q QPQuery) string {
	s := fmt.Sprintf(`{event_name=%s} %s:=%d`, Quote(records.EventQP), Quote(records.KeyQPN), q.QPN)
	if q.Node != "" {
		s += fmt.Sprintf(" %s:=%s", Quote(records.KeyNode), Quote(q.Node))
		if q.Dev != "" {
			s += fmt.Sprintf(" %s:=%s", Quote(records.KeyDevice), Quote(q.Dev))
		}
	} else {
		s += fmt.Sprintf(" %s:=%s", Quote(records.KeyLocalGID), Quote(records.GIDText(q.LocalGID)))
	}
	if !q.CreatedBy.IsZero() {
		s += fmt.Sprintf(" %s:<=%d", Quote(records.KeyCreated), q.CreatedBy.Add(time.Millisecond).UnixNano())
	}
	return s
}

func (v *VictoriaLogs) GIDs(ctx context.Context, gid netip.Addr, until time.Time, limit int) ([]rdma.GIDRecord, error) {
	rows, err := v.query(ctx, GIDQuery(gid, until), limit)
	if err != nil {
		return nil, err
	}
	var out []rdma.GIDRecord
	var errs []error
	for i, f := range rows {
		r, err := records.ParseGID(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: GID record %d of the answer: %w", v, i+1, err))
			continue
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.After(out[j].Time) })
	return out, errors.Join(errs...)
}

func (v *VictoriaLogs) QPs(ctx context.Context, q QPQuery) ([]rdma.QPIdentity, error) {
	if q.Limit <= 0 {
		q.Limit = 256
	}
	rows, err := v.query(ctx, QPQueryText(q), q.Limit)
	if err != nil {
		return nil, err
	}
	var out []rdma.QPIdentity
	var errs []error
	for i, f := range rows {
		r, err := records.ParseQP(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: QP record %d of the answer: %w", v, i+1, err))
			continue
		}
		if !q.CreatedBy.IsZero() && r.Created.After(q.CreatedBy) {
			continue
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.After(out[j].Time) })
	return out, errors.Join(errs...)
}

// query runs a LogsQL query for its limit newest rows (the store returns
// the newest when given a limit), each a JSON object of text values.
func (v *VictoriaLogs) query(ctx context.Context, q string, limit int) ([]records.Fields, error) {
	ctx, cancel := context.WithTimeout(ctx, v.o.Timeout+5*time.Second)
	defer cancel()
	form := url.Values{"query": {q}, "limit": {strconv.Itoa(limit)}, "timeout": {v.o.Timeout.String()}}
	u := *v.base
	u.Path += "/select/logsql/query"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", v, redact(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%s answered %s to %s: %s", v, resp.Status, q, strings.TrimSpace(string(msg)))
	}
	return ReadRows(io.LimitReader(resp.Body, v.o.MaxResponse+1), v.o.MaxResponse, v.String())
}

// ReadRows reads a /select/logsql/query answer: one JSON object a line,
// every value text. A line that is not one is an error naming it; the
// other lines are still read. An answer longer than max is an error.
func ReadRows(r io.Reader, max int64, name string) ([]records.Fields, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var out []records.Fields
	var errs []error
	var n int64
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		n += int64(len(b)) + 1
		if n > max {
			return out, errors.Join(append(errs, fmt.Errorf("%s: the answer is longer than %d bytes: read the first %d lines", name, max, line-1))...)
		}
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		f := records.Fields{}
		if err := json.Unmarshal(b, &f); err != nil {
			errs = append(errs, fmt.Errorf("%s: answer line %d: expected a JSON object of text values: %v", name, line, err))
			continue
		}
		out = append(out, f)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: answer line %d: %w", name, line+1, err))
	}
	return out, errors.Join(errs...)
}

// redact drops a URL's password from a client error.
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.User != nil {
			u.User = nil
			return &url.Error{Op: ue.Op, URL: u.String(), Err: ue.Err}
		}
	}
	return err
}
