package console

import (
	"context"
	"errors"
	"net/netip"
	"net/url"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// The console's built-in app: operators sign in with e-mail codes through
// signin, as any app's users do (the same codes, attempts, lockouts and rate
// limits), as users of an app the server keeps for itself in its own
// workspace (store.ConsoleWorkspaceSlug, left out of every list). Its users
// are made on demand for the e-mail addresses of workspace members; being
// one gives no right: what an operator may do is read from its memberships.

// AppName is the built-in app's name, which its messages show.
const AppName = "Gatehouse console"

// The built-in app's second factor: an operator who set up an
// authenticator app is asked for it (totp.go).
var (
	mfaPolicy  = string(store.MFAPolicyOptional)
	mfaMethods = []string{"totp"}
	// A passkey sign-in proves the device and the person (PIN or
	// biometric): it counts as strong (Strong).
	userVerification = "required"
)

// ErrCodeRefused is a code sign-in that signin accepted for an address that
// is no workspace's member any more.
var ErrCodeRefused = errors.New("this address is not a member of any workspace")

// app returns the built-in console app, made on first use; its origin
// follows base_url.
func (s *Service) app(ctx context.Context) (store.App, error) {
	s.appMu.Lock()
	defer s.appMu.Unlock()
	if s.appID != "" {
		return s.tenants.App(ctx, s.appID)
	}
	ws, err := s.db.GetWorkspaceBySlug(ctx, store.ConsoleWorkspaceSlug)
	if errors.Is(err, store.ErrNotFound) {
		now := s.now.Now()
		ws = store.Workspace{ID: uuid.Must(uuid.NewV7()).String(), Name: AppName, Slug: store.ConsoleWorkspaceSlug,
			Settings: []byte("{}"), UserInfoRequirement: "none", CreatedAt: now, UpdatedAt: now}
		if err = s.db.CreateWorkspace(ctx, ws); errors.Is(err, store.ErrConflict) { // another replica made it
			ws, err = s.db.GetWorkspaceBySlug(ctx, store.ConsoleWorkspaceSlug)
		}
	}
	if err != nil {
		return store.App{}, err
	}
	op := access.Operator()
	apps, err := s.tenants.ListApps(ctx, op, ws.ID)
	if err != nil {
		return store.App{}, err
	}
	origin, others := s.origins()
	refresh := int64(AbsoluteTimeout / time.Second) // its sessions end with the console's
	var a store.App
	if len(apps) == 0 {
		name, typ, off, login := AppName, "otp", false, s.baseURL+"/console/signin"
		ids := []string{"email"}
		a, err = s.tenants.CreateApp(ctx, op, ws.ID, tenant.AppSettings{Name: &name, Origin: &origin, AllowedOrigins: &others,
			LoginURL: &login, EmailAuthType: &typ, PublicSignup: &off, AllowedIdentifiers: &ids, RequiredIdentifiers: &ids,
			MFAPolicy: &mfaPolicy, MFAMethodsAllowed: &mfaMethods, RefreshExpiration: &refresh, WebauthnUserVerification: &userVerification})
	} else {
		a = apps[0] // the oldest, should two replicas have raced
		if a.Origin != origin || !slices.Equal(a.AllowedOrigins, others) || string(a.MFAPolicy) != mfaPolicy ||
			!slices.Equal(a.MFAMethodsAllowed, mfaMethods) || a.WebauthnUserVerification != userVerification {
			a, err = s.tenants.UpdateApp(ctx, op, ws.ID, a.ID, tenant.AppSettings{Origin: &origin, AllowedOrigins: &others,
				MFAPolicy: &mfaPolicy, MFAMethodsAllowed: &mfaMethods, WebauthnUserVerification: &userVerification})
		}
	}
	if err != nil {
		return store.App{}, err
	}
	s.appID = a.ID
	return a, nil
}

// origins are the built-in app's origin and other allowed origins:
// base_url's. Passkeys need a domain name for their relying party, so a
// base_url on a loopback address (development) makes the app's origin
// localhost on the same port, with base_url's as another allowed origin:
// open the console at http://localhost:PORT for passkeys.
func (s *Service) origins() (string, []string) {
	u, err := url.Parse(s.baseURL)
	if err != nil || u.Host == "" {
		return "http://localhost", []string{}
	}
	origin := u.Scheme + "://" + u.Host
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && ip.IsLoopback() {
		local := u.Scheme + "://localhost"
		if p := u.Port(); p != "" {
			local += ":" + p
		}
		return local, []string{origin}
	}
	return origin, []string{}
}

// SendCode e-mails a sign-in code to email when it is a workspace member's
// address; otherwise it sends nothing and answers the same, so the form
// does not tell who is an operator. It returns the handle VerifyCode needs.
// signin's limits apply (per address and per client address).
func (s *Service) SendCode(ctx context.Context, email string, c signin.Client) (handle string, err error) {
	defer errs.Wrap(&err, "send console code")
	email = normalise(email)
	if _, err := appuser.ParseIdentifier(email); err != nil || !isEmail(email) {
		return "", errs.Invalidf("email", "must be an e-mail address")
	}
	a, err := s.app(ctx)
	if err != nil {
		return "", err
	}
	ms, err := s.db.ListMemberships(ctx, email)
	if err != nil {
		return "", err
	}
	if len(ms) > 0 {
		u, err := s.users.Lookup(ctx, a, email)
		if err != nil {
			return "", err
		}
		if u == nil {
			_, _, err := s.users.Create(ctx, access.Operator(), a, appuser.CreateInput{Identifier: email})
			if err != nil && !errors.Is(err, appuser.ErrUserExists) {
				return "", err
			}
		}
	}
	res, err := s.signin.SendOTP(ctx, a, email, nil, c)
	if err != nil {
		return "", err
	}
	return res.UserID, nil
}

// VerifyCode checks the code sent for handle (signin.VerifyOTP: one attempt
// taken before it is compared) and starts a console session for its
// address. The built-in app's own session is ended at once: the console
// keeps its own.
func (s *Service) VerifyCode(ctx context.Context, handle, code, ip, userAgent string, c signin.Client) (cookie string, _ Session, err error) {
	defer errs.Wrap(&err, "console code sign-in")
	if _, err := uuid.Parse(handle); err != nil {
		return "", Session{}, errs.Invalidf("handle", "is not one this form gave")
	}
	a, err := s.app(ctx)
	if err != nil {
		return "", Session{}, err
	}
	set, err := s.signin.VerifyOTP(ctx, a, handle, code, c)
	if err != nil {
		return "", Session{}, err
	}
	if set.MFA != nil {
		return "", Session{}, &SecondFactorError{Challenge: set.MFA.Challenge.Token, First: "email_code"}
	}
	return s.signedIn(ctx, a, set, "email_code", ip, userAgent)
}

// signedIn starts a console session for the built-in app's sign-in set,
// which keeps the app's session (not its tokens) for adding passkeys.
func (s *Service) signedIn(ctx context.Context, a store.App, set signin.TokenSet, method, ip, userAgent string) (cookie string, _ Session, err error) {
	caller, err := s.signin.Authenticate(ctx, a, set.Access)
	if err != nil {
		return "", Session{}, err
	}
	u, err := s.users.LookupByID(ctx, a, set.UserID)
	if err != nil {
		return "", Session{}, err
	}
	if u == nil || u.Email == "" {
		return "", Session{}, ErrCodeRefused
	}
	cookie = random(sessionPrefix)
	var sess Session
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		ms, err := tx.ListMemberships(ctx, u.Email)
		if err != nil {
			return err
		}
		if len(ms) == 0 {
			return ErrCodeRefused
		}
		sess, err = s.start(ctx, tx, u.Email, method, caller.Session.ID, ip, userAgent, cookie, ms)
		return err
	})
	if err != nil {
		_ = s.signin.SignOut(ctx, a, caller)
		return "", Session{}, err
	}
	return cookie, sess, nil
}

func isEmail(s string) bool {
	id, err := appuser.ParseIdentifier(s)
	return err == nil && id.Kind == appuser.KindEmail
}
