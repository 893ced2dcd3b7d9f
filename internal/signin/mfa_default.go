package signin

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// A user's default second factor (server-sdk-compat §5: is_default): the
// one they chose, or else their first verified one. The MFA challenge of a
// sign-in asks for the default's kind first.

// factorCandidate is a verified second factor as the default is chosen
// among them.
type factorCandidate struct {
	ID, Method string
	Since      time.Time // when it became a second factor
}

// verifiedFactors lists the user's verified authenticator apps and, when
// the app allows passkeys as a second factor, their usable passkeys.
func (s *Service) verifiedFactors(ctx context.Context, q store.Queries, app store.App, userID string) ([]factorCandidate, error) {
	list, err := q.ListTOTP(ctx, userID)
	if err != nil {
		return nil, err
	}
	var out []factorCandidate
	for _, e := range list {
		if !e.Verified {
			continue
		}
		since := e.CreatedAt
		if e.VerifiedAt != nil {
			since = *e.VerifiedAt
		}
		out = append(out, factorCandidate{ID: e.ID, Method: MethodTOTP, Since: since})
	}
	if slices.Contains(app.MFAMethodsAllowed, MethodPasskey) {
		pks, err := q.ListPasskeys(ctx, app.ID, userID)
		if err != nil {
			return nil, err
		}
		for _, p := range pks {
			if p.SuspendedAt == nil {
				out = append(out, factorCandidate{ID: p.ID, Method: MethodPasskey, Since: p.CreatedAt})
			}
		}
	}
	return out, nil
}

// defaultFactor is the user's default second factor: the chosen one while
// it is still among theirs, else the first verified; ok false with none.
func (s *Service) defaultFactor(ctx context.Context, q store.Queries, app store.App, userID string) (_ factorCandidate, ok bool, err error) {
	list, err := s.verifiedFactors(ctx, q, app, userID)
	if err != nil || len(list) == 0 {
		return factorCandidate{}, false, err
	}
	chosen, err := q.MFADefault(ctx, userID)
	if err != nil {
		return factorCandidate{}, false, err
	}
	if i := slices.IndexFunc(list, func(f factorCandidate) bool { return f.ID == chosen }); i >= 0 {
		return list[i], true, nil
	}
	return slices.MinFunc(list, func(a, b factorCandidate) int {
		if c := a.Since.Compare(b.Since); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	}), true, nil
}

// SetDefaultMFAMethod makes one of the signed-in user's verified second
// factors (an authenticator app, or a passkey when the app allows them as
// one) their default, and returns it.
func (s *Service) SetDefaultMFAMethod(ctx context.Context, app store.App, caller Caller, id string) (_ MFAMethod, err error) {
	defer errs.Wrap(&err, "set default mfa method")
	id = strings.TrimSpace(id)
	var out MFAMethod
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		list, err := s.verifiedFactors(ctx, tx.Queries, app, caller.User.ID)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(list, func(f factorCandidate) bool { return f.ID == id }) {
			return ErrMFAMethodNotFound
		}
		if err := tx.SetMFADefault(ctx, caller.User.ID, id, s.clock()); err != nil {
			return err
		}
		o, err := s.overview(ctx, tx.Queries, app, caller.User.ID)
		if err != nil {
			return err
		}
		for _, m := range o.Methods {
			if m.ID == id {
				out = m
			}
		}
		return nil
	})
	return out, err
}
