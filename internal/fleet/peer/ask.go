package peer

import (
	"context"
	"log/slog"
	"time"

	"github.com/rdmatrace/rdmatrace/internal/base/termsafe"
	"github.com/rdmatrace/rdmatrace/internal/fleet/store"
)

// AskOptions are `rdmatrace peer`'s: the query, the log store's base URL,
// and how long the store may take to answer.
type AskOptions struct {
	Query   Query
	Store   string
	Timeout time.Duration
}

// StoreURLError is a store URL Ask cannot use: the command's usage error.
type StoreURLError struct{ Err error }

func (e *StoreURLError) Error() string { return e.Err.Error() }
func (e *StoreURLError) Unwrap() error { return e.Err }

// Ask is `rdmatrace peer`: the store's answer to o.Query, handed to write;
// found says whether the store had the QP. A search that failed and found
// nothing is the error; records that could not be read beside an answer
// are said on slog, and the answer stands on the rest.
func Ask(o AskOptions, write func(Answer) error) (found bool, err error) {
	s, err := store.Open(o.Store, store.Options{Timeout: o.Timeout})
	if err != nil {
		return false, &StoreURLError{Err: err}
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout+5*time.Second)
	defer cancel()
	return ask(ctx, s, o.Query, write)
}

func ask(ctx context.Context, s store.Store, q Query, write func(Answer) error) (bool, error) {
	a, err := Find(ctx, s, q)
	if err != nil && a.QP == nil && a.Missing == "" {
		return false, err
	}
	if err != nil {
		slog.Info("peer: " + termsafe.Sanitize(err.Error()))
	}
	if err := write(a); err != nil {
		return false, err
	}
	return a.QP != nil, nil
}
