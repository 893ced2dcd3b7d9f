package tenant

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// SigningKey is a signing key as listed to operators (never the private part).
type SigningKey struct {
	ID           string
	Alg          string
	Status       string
	Published    bool
	CreatedAt    time.Time
	RetiredAt    *time.Time
	PublishUntil *time.Time
}

// keyAD binds a sealed private key to its kid, so rows cannot be swapped.
func keyAD(kid string) []byte { return []byte("signing-key:" + kid) }

// KeySource reads the signing keys from the database for a token.Keyring:
// the newest active key of each algorithm signs; every key verifies (API secrets live long and
// are also checked against their database row); active and not-yet-expired
// retired keys are published. A failure is logged here, where the database
// is known, and returned.
//
// A key already loaded is not opened and parsed again: the keyring reloads
// every 10 s (and at most once a second for the JWKS or an unknown kid), and
// parsing an RSA key costs several times an EC one (0.14 ms of CPU). A row is reused only
// when its sealed bytes are the very ones parsed before.
func KeySource(db *store.DB, sealer *token.Sealer, now func() time.Time, log *slog.Logger) token.KeySource {
	loaded := &parsedKeys{}
	return func(ctx context.Context) (token.KeySet, error) {
		set, err := loaded.load(ctx, db, sealer, now().UTC())
		if err != nil {
			log.ErrorContext(ctx, "load signing keys", "err", err)
		}
		return set, err
	}
}

// parsedKeys remembers the keys of the last successful load, by kid, with
// the sealed bytes they were opened from.
type parsedKeys struct {
	mu   sync.Mutex
	byID map[string]parsedKey
}

type parsedKey struct {
	sealed []byte
	key    *token.Key
}

// open returns the key of rec, parsed now or at an earlier load.
func (p *parsedKeys) open(sealer *token.Sealer, rec store.SigningKey) (*token.Key, error) {
	if k, ok := p.byID[rec.ID]; ok && bytes.Equal(k.sealed, rec.PrivateSealed) {
		return k.key, nil
	}
	der, err := sealer.Open(rec.PrivateSealed, keyAD(rec.ID))
	if err != nil {
		return nil, fmt.Errorf("signing key %s cannot be opened with this master key: %w", rec.ID, err)
	}
	k, err := token.KeyFromPrivateDER(der)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", rec.ID, err)
	}
	return k, nil
}

func (p *parsedKeys) load(ctx context.Context, db *store.DB, sealer *token.Sealer, now time.Time) (token.KeySet, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys, err := db.ListSigningKeys(ctx)
	if err != nil {
		return token.KeySet{}, err
	}
	var set token.KeySet
	signs := map[string]bool{}
	next := make(map[string]parsedKey, len(keys))
	for _, rec := range keys {
		k, err := p.open(sealer, rec)
		if err != nil {
			return token.KeySet{}, err
		}
		if k.Alg != rec.Alg {
			return token.KeySet{}, fmt.Errorf("signing key %s is an %s key, recorded as %s", rec.ID, k.Alg, rec.Alg)
		}
		next[rec.ID] = parsedKey{sealed: rec.PrivateSealed, key: k}
		if rec.Status == store.KeyActive && !signs[k.Alg] {
			signs[k.Alg] = true
			set.Signers = append(set.Signers, k)
		}
		set.Verify = append(set.Verify, k)
		if published(rec, now) {
			set.Published = append(set.Published, k)
		}
	}
	p.byID = next
	return set, nil
}

// EnsureSigningKey makes sure there is an active signing key for every
// algorithm in use (the default ES256 that signs internal tokens, the
// server's default for access tokens, and each algorithm an app chose), and
// loads the keys into the keyring. The server runs it at start-up.
func (s *Service) EnsureSigningKey(ctx context.Context) (err error) {
	defer errs.Wrap(&err, "ensure signing key")
	algs, err := s.db.AccessTokenAlgs(ctx)
	if err != nil {
		return err
	}
	for _, alg := range append([]string{token.Algorithm, s.accessAlg}, algs...) {
		if err := s.ensureAlg(ctx, alg); err != nil {
			return err
		}
	}
	return s.keys.Reload(ctx)
}

// ensureAlg creates the first key of alg when no active one exists. Two
// replicas doing so at once each make one: both are active and published,
// the newer signs, and the next rotation retires both.
func (s *Service) ensureAlg(ctx context.Context, alg string) error {
	if !token.ValidAlgorithm(alg) {
		return fmt.Errorf("unknown signing algorithm %q", alg)
	}
	keys, err := s.db.ListSigningKeys(ctx)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.Status == store.KeyActive && k.Alg == alg {
			return nil
		}
	}
	k, err := s.rotate(ctx, alg)
	if err == nil {
		s.log.InfoContext(ctx, "first signing key created", "kid", k.ID, "alg", alg)
	}
	return err
}

// RotateSigningKeys creates a new active key of alg and retires the others
// of that algorithm ("" rotates every algorithm that has an active key);
// only the operator may. A retired key stays published in the JWKS until
// every token it can have signed has expired (the longest access or refresh
// lifetime of any app). Other replicas load the new key on their next
// periodic reload, or at once when a token signed with it reaches them.
func (s *Service) RotateSigningKeys(ctx context.Context, p access.Principal, alg string) (_ []SigningKey, err error) {
	defer errs.Wrap(&err, "rotate signing keys")
	if err := access.OperatorOnly(p); err != nil {
		return nil, err
	}
	algs := []string{alg}
	if alg == "" {
		algs = nil
		keys, err := s.db.ListSigningKeys(ctx)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			if k.Status == store.KeyActive && !slices.Contains(algs, k.Alg) {
				algs = append(algs, k.Alg)
			}
		}
		slices.Sort(algs)
	} else if !token.ValidAlgorithm(alg) {
		return nil, errs.Invalidf("alg", "must be one of %s", strings.Join(token.Algorithms, ", "))
	}
	var out []SigningKey
	for _, a := range algs {
		k, err := s.rotate(ctx, a)
		if err != nil {
			return out, err
		}
		s.log.InfoContext(ctx, "signing key rotated", "kid", k.ID, "alg", a)
		out = append(out, k)
	}
	return out, nil
}

func (s *Service) rotate(ctx context.Context, alg string) (SigningKey, error) {
	rec, err := s.newKeyRecord(alg)
	if err != nil {
		return SigningKey{}, err
	}
	if err := s.db.Tx(ctx, func(tx *store.Tx) error { return s.installKey(ctx, tx, rec) }); err != nil {
		return SigningKey{}, err
	}
	return SigningKey{ID: rec.ID, Alg: rec.Alg, Status: rec.Status, Published: true, CreatedAt: rec.CreatedAt}, s.keys.Reload(ctx)
}

// newKeyRecord makes a key of alg and seals its private part for storage.
func (s *Service) newKeyRecord(alg string) (store.SigningKey, error) {
	k, err := token.GenerateKeyFor(alg)
	if err != nil {
		return store.SigningKey{}, err
	}
	der, err := k.PrivateDER()
	if err != nil {
		return store.SigningKey{}, err
	}
	sealed, err := s.sealer.Seal(der, keyAD(k.ID))
	if err != nil {
		return store.SigningKey{}, err
	}
	return store.SigningKey{ID: k.ID, Alg: k.Alg, PrivateSealed: sealed, Status: store.KeyActive, CreatedAt: s.clock()}, nil
}

// installKey stores rec as the active key of its algorithm, in tx, and
// retires the others of that algorithm.
func (s *Service) installKey(ctx context.Context, tx *store.Tx, rec store.SigningKey) error {
	longest, err := tx.MaxTokenLifetime(ctx)
	if err != nil {
		return err
	}
	longest = max(longest, int64(appuser.InvitationTTL/time.Second))
	if err := tx.InsertSigningKey(ctx, rec); err != nil {
		return err
	}
	// Tokens are accepted up to 30 s past exp, so keep a margin.
	return tx.RetireSigningKeys(ctx, rec.ID, rec.Alg, rec.CreatedAt, rec.CreatedAt.Add(time.Duration(longest)*time.Second+time.Minute))
}

// keyForApp makes, in tx, the first key of the algorithm a changed app now
// signs with when there is none yet, so the app's setting and its key are
// stored together. It reports whether it made one (the keyring must then be
// reloaded after the commit). pre, when it is of the right algorithm, is the
// key to store (made by preparedKey before the transaction).
func (s *Service) keyForApp(ctx context.Context, tx *store.Tx, a App, pre *store.SigningKey) (bool, error) {
	alg := s.AccessTokenAlg(a)
	if alg == token.Algorithm {
		return false, nil
	}
	keys, err := tx.ListSigningKeys(ctx)
	if err != nil {
		return false, err
	}
	for _, k := range keys {
		if k.Status == store.KeyActive && k.Alg == alg {
			return false, nil
		}
	}
	var rec store.SigningKey
	if pre != nil && pre.Alg == alg {
		rec = *pre
		rec.CreatedAt = s.clock()
	} else if rec, err = s.newKeyRecord(alg); err != nil {
		return false, err
	}
	if err := s.installKey(ctx, tx, rec); err != nil {
		return false, err
	}
	s.log.InfoContext(ctx, "first signing key created", "kid", rec.ID, "alg", alg, "app_id", a.ID)
	return true, nil
}

// preparedKey makes, outside any transaction, the key an app change choosing
// an algorithm this server holds no key of will need: an RSA key takes up to
// a second to make, too long to hold SQLite's write lock (or an app's row
// lock) for. The change is authorised only inside its transaction, so the
// key is kept as a spare until one is stored: refused changes cannot make
// the server generate key after key.
func (s *Service) preparedKey(in AppSettings) (*store.SigningKey, error) {
	if in.AccessTokenAlg == nil || !token.ValidAlgorithm(*in.AccessTokenAlg) || s.keys.Signs(*in.AccessTokenAlg) {
		return nil, nil
	}
	alg := *in.AccessTokenAlg
	s.spareMu.Lock()
	rec, ok := s.spare[alg]
	s.spareMu.Unlock()
	if ok {
		return &rec, nil
	}
	rec, err := s.newKeyRecord(alg)
	if err != nil {
		return nil, err
	}
	s.spareMu.Lock()
	defer s.spareMu.Unlock()
	if kept, ok := s.spare[alg]; ok {
		return &kept, nil
	}
	s.spare[alg] = rec
	return &rec, nil
}

// spent forgets the spare key of alg once a key of alg is stored.
func (s *Service) spent(alg string) {
	s.spareMu.Lock()
	delete(s.spare, alg)
	s.spareMu.Unlock()
}

// AccessTokenAlg is the algorithm that signs a's access tokens: its own
// choice, or the server default.
func (s *Service) AccessTokenAlg(a App) string {
	if a.AccessTokenAlg != "" {
		return a.AccessTokenAlg
	}
	return s.accessAlg
}

// ListSigningKeys lists the keys, newest first; only the operator may.
func (s *Service) ListSigningKeys(ctx context.Context, p access.Principal) (_ []SigningKey, err error) {
	defer errs.Wrap(&err, "list signing keys")
	if err := access.OperatorOnly(p); err != nil {
		return nil, err
	}
	keys, err := s.db.ListSigningKeys(ctx)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	out := make([]SigningKey, 0, len(keys))
	for _, k := range keys {
		out = append(out, SigningKey{ID: k.ID, Alg: k.Alg, Status: k.Status, Published: published(k, now),
			CreatedAt: k.CreatedAt, RetiredAt: k.RetiredAt, PublishUntil: k.PublishUntil})
	}
	return out, nil
}

func published(k store.SigningKey, now time.Time) bool {
	return k.Status == store.KeyActive || (k.PublishUntil != nil && now.Before(*k.PublishUntil))
}
