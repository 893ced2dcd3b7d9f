package store

import (
	"encoding/json"
	"time"
)

// collect scans every row with scan and closes rs.
func collect[T any](rs rows, scan func(row) (T, error)) ([]T, error) {
	defer rs.Close()
	out := []T{}
	for rs.Next() {
		v, err := scan(rs)
		if err != nil {
			return nil, mapErr(err)
		}
		out = append(out, v)
	}
	return out, rs.Err()
}

// affected turns "no row changed" into ErrNotFound.
func affected(n int64, err error) error {
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

func jsonOr(b []byte, def string) []byte {
	if len(b) == 0 {
		return []byte(def)
	}
	return b
}

func jsonStrings(v []string) string {
	if v == nil {
		v = []string{}
	}
	b, _ := json.Marshal(v) // a []string always marshals
	return string(b)
}

func parseStrings(b []byte) []string {
	out := []string{}
	_ = json.Unmarshal(b, &out) // written by jsonStrings only
	return out
}

// nullString stores "" as NULL, so optional unique columns stay unique only when set.
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func nullTime(t *time.Time) any {
	if t == nil {
		return nil
	}
	return ts(*t)
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
