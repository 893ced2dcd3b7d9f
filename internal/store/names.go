package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// The console's name search reads app_user_names (00024_user_names): one
// row per word of a user's names, so that a word's start is a range of an
// index however many users the app has. A user's names are the string
// values of the user_meta keys that contain "name" (first_name,
// last_name, display_name, username…): the store keeps the rows as it
// writes user_meta, without needing the app's schema, and changing a
// schema needs no rebuild.

const (
	// maxNameWords bounds the rows one user adds.
	maxNameWords = 32
	// maxNameWordBytes bounds a word (longer ones are cut at a rune).
	maxNameWordBytes = 64
)

// NameWords returns the words of meta's names, lower-case (Unicode rules,
// applied here so both engines agree), each once, in order.
func NameWords(meta []byte) []string {
	// Most users have no name (a sign-up by code): no decoding for them.
	if !bytes.Contains(bytes.ToLower(meta), []byte("name")) {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(meta, &m) != nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if strings.Contains(strings.ToLower(k), "name") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var words []string
	for _, k := range keys {
		s, _ := m[k].(string)
		for _, w := range strings.Fields(strings.ToLower(s)) {
			w = cutWord(w)
			if !slices.Contains(words, w) && len(words) < maxNameWords {
				words = append(words, w)
			}
		}
	}
	return words
}

// NameQuery is a search's words, as NameWords makes a user's.
func NameQuery(q string) []string {
	var words []string
	for _, w := range strings.Fields(strings.ToLower(strings.ToValidUTF8(q, ""))) {
		if w = cutWord(w); !slices.Contains(words, w) && len(words) < maxNameWords {
			words = append(words, w)
		}
	}
	return words
}

func cutWord(w string) string {
	if len(w) <= maxNameWordBytes {
		return w
	}
	w = w[:maxNameWordBytes]
	for !utf8.ValidString(w) {
		w = w[:len(w)-1]
	}
	return w
}

// commonWord is how many name rows a word's start may match before a
// search counts as broad (see commonNames); a variable for tests.
var commonWord = 500

// commonNames reports whether more than commonWord users of the app match
// every word: then a page of them is found sooner by reading the users in
// order, testing each, than by reading every match and sorting them. One
// statement, whose count stops past commonWord.
func (q Queries) commonNames(ctx context.Context, appID string, words []string) (bool, error) {
	args := []any{appID}
	var sets []string
	for _, w := range words {
		args = append(args, w)
		c := `SELECT app_user_id FROM app_user_names WHERE app_id = $1 AND word` + q.d.byteOrder + ` >= $` + itoa(len(args))
		if end, ok := prefixEnd(w); ok {
			args = append(args, end)
			c += ` AND word` + q.d.byteOrder + ` < $` + itoa(len(args))
		}
		sets = append(sets, c)
	}
	var n int
	err := q.r.queryRow(ctx, `SELECT COUNT(*) FROM (`+strings.Join(sets, ` INTERSECT `)+` LIMIT `+itoa(commonWord+1)+`) AS t`,
		args...).Scan(&n)
	return n > commonWord, err
}

// writeNames replaces the name rows of a user with those of meta (in the
// caller's transaction, or deferred with its other writes).
func (q Queries) writeNames(ctx context.Context, appID, userID string, meta []byte, replace bool) error {
	if replace {
		if _, err := q.w.exec(ctx, `DELETE FROM app_user_names WHERE app_user_id = $1`, userID); err != nil {
			return err
		}
	}
	words := NameWords(meta)
	if len(words) == 0 {
		return nil
	}
	var sb strings.Builder
	args := []any{appID, userID}
	sb.WriteString(`INSERT INTO app_user_names (app_id, word, app_user_id) VALUES `)
	for i, w := range words {
		if i > 0 {
			sb.WriteString(", ")
		}
		args = append(args, w)
		sb.WriteString("($1, $" + itoa(len(args)) + ", $2)")
	}
	// Rows already there (a backfill meeting a write) are the same rows.
	sb.WriteString(` ON CONFLICT DO NOTHING`)
	_, err := q.w.exec(ctx, sb.String(), args...)
	return err
}

// BackfillUserNames writes the name rows of the users written since the
// last backfill began (all of them the first time): those written before
// 00024_user_names, or by an older replica during a rolling upgrade. Run
// after migrating; idempotent.
func (db *DB) BackfillUserNames(ctx context.Context, now time.Time) (int, error) {
	var last *time.Time
	err := db.r.queryRow(ctx, `SELECT done_at FROM backfills WHERE name = 'app_user_names'`).Scan(&last)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return 0, err
	}
	n, after := 0, ""
	for {
		args := []any{after}
		cond := `id > $1 AND LOWER(CAST(user_meta AS TEXT)) LIKE '%name%'`
		if last != nil {
			// A margin for writes that committed late.
			args = append(args, ts(last.Add(-10*time.Minute)))
			cond += ` AND updated_at >= $2`
		}
		rs, err := db.r.query(ctx, `SELECT id FROM app_users WHERE `+cond+` ORDER BY id LIMIT 500`, args...)
		if err != nil {
			return n, err
		}
		batch, err := collect(rs, func(r row) (string, error) {
			var id string
			err := r.Scan(&id)
			return id, err
		})
		if err != nil || len(batch) == 0 {
			if err != nil {
				return n, err
			}
			break
		}
		// Each user's metadata is read again in the transaction, its row
		// locked: an update by another replica meanwhile is not undone.
		err = db.Tx(ctx, func(tx *Tx) error {
			for _, id := range batch {
				var u AppUser
				err := tx.r.queryRow(ctx, `SELECT id, app_id, user_meta FROM app_users WHERE id = $1`+db.dialect.forUpdate, id).
					Scan(&u.ID, &u.AppID, &u.Meta)
				if errors.Is(err, ErrNotFound) {
					continue // deleted since
				}
				if err != nil {
					return err
				}
				if err := tx.writeNames(ctx, u.AppID, u.ID, u.Meta, true); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return n, err
		}
		n += len(batch)
		after = batch[len(batch)-1]
	}
	_, err = db.w.exec(ctx, `INSERT INTO backfills (name, done_at) VALUES ('app_user_names', $1)
		ON CONFLICT (name) DO UPDATE SET done_at = excluded.done_at`, ts(now))
	return n, err
}
