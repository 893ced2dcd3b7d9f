package tenant

import (
	"context"
	"fmt"
	"log/slog"
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
// the newest active key signs; every key verifies (API secrets live long and
// are also checked against their database row); active and not-yet-expired
// retired keys are published. A failure is logged here, where the database
// is known, and returned.
func KeySource(db *store.DB, sealer *token.Sealer, now func() time.Time, log *slog.Logger) token.KeySource {
	return func(ctx context.Context) (token.KeySet, error) {
		set, err := loadKeys(ctx, db, sealer, now().UTC())
		if err != nil {
			log.ErrorContext(ctx, "load signing keys", "err", err)
		}
		return set, err
	}
}

func loadKeys(ctx context.Context, db *store.DB, sealer *token.Sealer, now time.Time) (token.KeySet, error) {
	keys, err := db.ListSigningKeys(ctx)
	if err != nil {
		return token.KeySet{}, err
	}
	var set token.KeySet
	for _, rec := range keys {
		der, err := sealer.Open(rec.PrivateSealed, keyAD(rec.ID))
		if err != nil {
			return token.KeySet{}, fmt.Errorf("signing key %s cannot be opened with this master key: %w", rec.ID, err)
		}
		k, err := token.KeyFromPrivateDER(der)
		if err != nil {
			return token.KeySet{}, fmt.Errorf("signing key %s: %w", rec.ID, err)
		}
		if rec.Status == store.KeyActive && set.Signer == nil {
			set.Signer = k
		}
		set.Verify = append(set.Verify, k)
		if published(rec, now) {
			set.Published = append(set.Published, k)
		}
	}
	return set, nil
}

// EnsureSigningKey creates the first signing key when there is none, and
// loads the keys into the keyring. The server runs it at start-up.
func (s *Service) EnsureSigningKey(ctx context.Context) (err error) {
	defer errs.Wrap(&err, "ensure signing key")
	keys, err := s.db.ListSigningKeys(ctx)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.Status == store.KeyActive {
			return s.keys.Reload(ctx)
		}
	}
	k, err := s.rotate(ctx)
	if err == nil {
		s.log.InfoContext(ctx, "first signing key created", "kid", k.ID)
	}
	return err
}

// RotateSigningKey creates a new active key and retires the others; only the
// operator may. A retired key stays published in the JWKS until every token
// it can have signed has expired (the longest access or refresh lifetime of
// any app). Other replicas load the new key on their next periodic reload, or
// at once when a token signed with it reaches them.
func (s *Service) RotateSigningKey(ctx context.Context, p access.Principal) (_ SigningKey, err error) {
	defer errs.Wrap(&err, "rotate signing key")
	if err := access.OperatorOnly(p); err != nil {
		return SigningKey{}, err
	}
	k, err := s.rotate(ctx)
	if err == nil {
		s.log.InfoContext(ctx, "signing key rotated", "kid", k.ID)
	}
	return k, err
}

func (s *Service) rotate(ctx context.Context) (SigningKey, error) {
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
	return SigningKey{ID: k.ID, Alg: rec.Alg, Status: rec.Status, Published: true, CreatedAt: now}, s.keys.Reload(ctx)
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
