package store

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
)

// ErrSecondConnection is a statement (or a transaction) asked of the pool by
// a goroutine that holds a transaction open: it needs a second connection
// while the first one waits, which under load lets a burst of such requests
// take the whole pool and wait for each other for ever (issue 22). Whatever
// a transaction needs must run on it, or after it commits.
var ErrSecondConnection = errors.New("store: a second connection was asked for while this goroutine holds a transaction")

// txHolders records the goroutines that hold a transaction, in strict mode
// (Options.StrictTx: the tests), so that a second acquisition fails at
// once, on every engine and at any pool size, instead of deadlocking only
// under a load that the tests may never produce.
type txHolders struct {
	mu   sync.Mutex
	held map[uint64]bool
}

// enter marks the calling goroutine as holding a transaction; it fails when
// it holds one already (a nested transaction is a second connection too).
func (h *txHolders) enter(what string) (leave func(), err error) {
	if h == nil {
		return func() {}, nil
	}
	id := goroutineID()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.held[id] {
		return nil, fmt.Errorf("%w: %s", ErrSecondConnection, what)
	}
	h.held[id] = true
	return func() {
		h.mu.Lock()
		delete(h.held, id)
		h.mu.Unlock()
	}, nil
}

// check fails when the calling goroutine holds a transaction.
func (h *txHolders) check(query string) error {
	if h == nil {
		return nil
	}
	id := goroutineID()
	h.mu.Lock()
	held := h.held[id]
	h.mu.Unlock()
	if held {
		return fmt.Errorf("%w: %s", ErrSecondConnection, firstLine(query))
	}
	return nil
}

func firstLine(q string) string {
	q = strings.TrimSpace(q)
	if i := strings.IndexByte(q, '\n'); i > 0 {
		q = q[:i]
	}
	return q
}

// goroutineID reads the calling goroutine's id from its stack header
// ("goroutine 42 [running]:"): test-only bookkeeping, never a request path
// in production.
func goroutineID() uint64 {
	var buf [40]byte
	n := runtime.Stack(buf[:], false)
	s := strings.TrimPrefix(string(buf[:n]), "goroutine ")
	if i := strings.IndexByte(s, ' '); i > 0 {
		s = s[:i]
	}
	id, _ := strconv.ParseUint(s, 10, 64)
	return id
}

// strictQuerier is the pool's querier in strict mode.
type strictQuerier struct {
	q querier
	h *txHolders
}

func (s strictQuerier) exec(ctx context.Context, query string, args ...any) (int64, error) {
	if err := s.h.check(query); err != nil {
		return 0, err
	}
	return s.q.exec(ctx, query, args...)
}

func (s strictQuerier) query(ctx context.Context, query string, args ...any) (rows, error) {
	if err := s.h.check(query); err != nil {
		return nil, err
	}
	return s.q.query(ctx, query, args...)
}

func (s strictQuerier) queryRow(ctx context.Context, query string, args ...any) row {
	if err := s.h.check(query); err != nil {
		return errRow{err}
	}
	return s.q.queryRow(ctx, query, args...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
