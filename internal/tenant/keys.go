package tenant

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// SigningKey is a signing key as listed to operators (never the private part).
type SigningKey struct {
	ID           string     `json:"kid"`
	Alg          string     `json:"alg"`
	Status       string     `json:"status"`
	Published    bool       `json:"published"`
	CreatedAt    time.Time  `json:"created_at"`
	RetiredAt    *time.Time `json:"retired_at,omitempty"`
	PublishUntil *time.Time `json:"publish_until,omitempty"`
}

// keyAD binds a sealed private key to its kid, so rows cannot be swapped.
func keyAD(kid string) []byte { return []byte("signing-key:" + kid) }

// EnsureSigningKey creates the first signing key when there is none.
func (s *Service) EnsureSigningKey(ctx context.Context) error {
	keys, err := s.db.ListSigningKeys(ctx)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.Status == store.KeyActive {
			return nil
		}
	}
	_, err = s.RotateSigningKey(ctx)
	return err
}

// RotateSigningKey creates a new active key and retires the others. A retired
// key stays published in the JWKS until every token it can have signed has
// expired (the longest access or refresh lifetime of any app).
func (s *Service) RotateSigningKey(ctx context.Context) (SigningKey, error) {
	k, err := token.GenerateKey()
	if err != nil {
		return SigningKey{}, err
	}
	der, err := k.PrivateDER()
	if err != nil {
		return SigningKey{}, err
	}
	sealed, err := s.sealer.Seal(der, keyAD(k.ID))
	if err != nil {
		return SigningKey{}, err
	}
	now := s.clock()
	rec := store.SigningKey{ID: k.ID, Alg: token.Algorithm, PrivateSealed: sealed, Status: store.KeyActive, CreatedAt: now}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		longest, err := tx.MaxTokenLifetime(ctx)
		if err != nil {
			return err
		}
		longest = max(longest, int64(appuser.InvitationTTL/time.Second))
		if err := tx.InsertSigningKey(ctx, rec); err != nil {
			return err
		}
		// Tokens are accepted up to 30 s past exp, so keep a margin.
		return tx.RetireSigningKeys(ctx, k.ID, now, now.Add(time.Duration(longest)*time.Second+time.Minute))
	})
	if err != nil {
		return SigningKey{}, err
	}
	return SigningKey{ID: k.ID, Alg: rec.Alg, Status: rec.Status, Published: true, CreatedAt: now}, s.LoadKeys(ctx)
}

// ListSigningKeys lists the keys, newest first.
func (s *Service) ListSigningKeys(ctx context.Context) ([]SigningKey, error) {
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

// LoadKeys reads every key into the in-memory keyring: the newest active key
// signs; every key verifies (API secrets live long and are also checked against
// their database row); active and not-yet-expired retired keys are published.
func (s *Service) LoadKeys(ctx context.Context) error {
	keys, err := s.db.ListSigningKeys(ctx)
	if err != nil {
		return err
	}
	now := s.clock()
	var signer *token.Key
	var verify, pub []*token.Key
	for _, rec := range keys {
		der, err := s.sealer.Open(rec.PrivateSealed, keyAD(rec.ID))
		if err != nil {
			return fmt.Errorf("tenant: signing key %s cannot be opened with this master key: %w", rec.ID, err)
		}
		k, err := token.KeyFromPrivateDER(der)
		if err != nil {
			return fmt.Errorf("tenant: signing key %s: %w", rec.ID, err)
		}
		if rec.Status == store.KeyActive && signer == nil {
			signer = k
		}
		verify = append(verify, k)
		if published(rec, now) {
			pub = append(pub, k)
		}
	}
	s.keys.Replace(signer, verify, pub)
	return nil
}

// KeyReloader reloads the keyring periodically and on demand (an unknown kid
// may be a key another replica or the CLI just made), at most once a second.
type KeyReloader struct {
	s    *Service
	mu   sync.Mutex
	last time.Time
}

// NewKeyReloader returns a reloader for s.
func NewKeyReloader(s *Service) *KeyReloader { return &KeyReloader{s: s} }

// ReloadSoon reloads now unless a reload happened in the last second.
func (r *KeyReloader) ReloadSoon(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.last) < time.Second {
		return
	}
	r.last = time.Now()
	if err := r.s.LoadKeys(ctx); err != nil {
		r.s.log.Error("reload signing keys", "err", err)
	}
}
