package httpapi

import (
	"context"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
)

// Sign-in routes take no credentials (the client SDK sends none): the
// identifier or the token in the body is the credential, and rate limits
// apply per IP and per identifier.

type signinBody struct {
	Identifier      string         `json:"identifier" maxLength:"320" doc:"An e-mail address or an international phone number."`
	UserMeta        map[string]any `json:"user_meta,omitempty" doc:"Metadata for a user created by this request: only fields with visible_registration; other keys are dropped and reported in user_meta_errors, which depends on this body alone (the same for a known or a new identifier). Ignored for a known user."`
	WebauthnEnabled bool           `json:"webauthn_enabled,omitempty" doc:"Whether the device supports passkeys; carried in the magic-link token."`
	_               struct{}       `json:"-" additionalProperties:"true"`
}

type sendOTPInput struct {
	AppID     string `path:"app_id" doc:"The app id."`
	UserAgent string `header:"User-Agent" doc:"The caller's user agent: recorded with the session or challenge and shown to the user (sessions list, consent page, push approval)."`
	Body      signinBody
}

type otpSent struct {
	Success bool      `json:"success" doc:"True when the code was accepted for delivery (queued with its challenge; a worker hands it to the provider right after, and verification.{channel}.delivery_failed fires if it never goes out). Also true, with nothing sent, for an identifier that gets no code, so the answer does not tell."`
	SentAt  time.Time `json:"sent_at" doc:"When the code was accepted for delivery (RFC 3339)."`
	ID      string    `json:"id" doc:"The challenge id of the code."`
}

type sendOTPOutput struct {
	Body struct {
		OTP            otpSent            `json:"otp" doc:"The code sent."`
		UserID         string             `json:"user_id" doc:"The user's id: pass it with the code to POST /otps/verify."`
		UserMetaErrors appuser.MetaErrors `json:"user_meta_errors" nullable:"true" doc:"Why metadata keys were dropped, by key; null when none were."`
	}
}

var sendOtpOp = operation{id: "sendOtp", method: "POST", path: "/v1/auth/{app_id}/otps/login", summary: "Send a one-time code", tag: "Sign-in",
	auth: authPublicApp, sendsSMS: true, errors: with(sendErrors, "code_entry_locked", "too_many_attempts"),
	desc: "Sends a one-time code to an e-mail address or phone number; answer it with POST /otps/verify and the returned `user_id`. An unknown identifier signs up a new user when the app has public_signup (with `user_meta`: visible_registration fields only; emits `user.created`); otherwise nothing is sent, and the answer looks the same. A new code ends the user's previous one. Rate limited per identifier and per IP. Emits `challenge.created` and `verification.{channel}.requested`. No credentials.",
	req:  `{"identifier":"ada@example.com"}`,
	resp: body(func(o *sendOTPOutput) {
		o.Body.OTP = otpSent{Success: true, SentAt: exT0, ID: exChallenge.ID}
		o.Body.UserID = exUserID
	})}

func (s *Server) sendOTP(ctx context.Context, in *sendOTPInput) (*sendOTPOutput, error) {
	defer s.sendFloor(ctx, time.Now())
	res, err := s.SignIn.SendOTP(ctx, appFrom(ctx), in.Body.Identifier, in.Body.UserMeta, client(ctx, in.UserAgent))
	if err != nil {
		return nil, err
	}
	out := &sendOTPOutput{}
	out.Body.OTP = otpSent{Success: res.Sent, SentAt: res.SentAt, ID: res.ChallengeID}
	out.Body.UserID, out.Body.UserMetaErrors = res.UserID, res.MetaErrors
	return out, nil
}

type verifyOTPInput struct {
	AppID     string `path:"app_id" doc:"The app id."`
	UserAgent string `header:"User-Agent" doc:"The caller's user agent: recorded with the session or challenge and shown to the user (sessions list, consent page, push approval)."`
	Body      struct {
		OTP    string   `json:"otp" maxLength:"16" doc:"The code the user received."`
		UserID string   `json:"user_id" maxLength:"64" doc:"The user's id, as the identifier lookup returns it."`
		_      struct{} `json:"-" additionalProperties:"true"`
	}
}

// TokenSet is what a successful sign-in or refresh returns (interface §2.8).
type TokenSet struct {
	Access           string     `json:"access,omitempty" doc:"The access token (JWT, ES256): send it as X-Authorization. Absent, with every other token field, when mfa_required is true."`
	Refresh          string     `json:"refresh,omitempty" doc:"The refresh token (JWT): send it as X-Refresh-Token to rotate the set. Spent on use. Absent from rotate_access without the API secret (keep the one you have)."`
	CSRF             string     `json:"csrf,omitempty" doc:"A CSRF token for browser clients that keep the tokens in cookies."`
	AccessExpiresAt  *time.Time `json:"access_expires_at,omitempty" doc:"When the access token expires (RFC 3339)."`
	RefreshExpiresAt *time.Time `json:"refresh_expires_at,omitempty" doc:"Absent when refresh is."`
	UserID           string     `json:"user_id" doc:"The user's id."`
	KeyID            string     `json:"key_id,omitempty" doc:"The kid of the key that signed the access token."`
	Message          string     `json:"message" example:"ok" doc:"ok, or mfa_required when a second factor is due (then no tokens)."`
	// A first factor whose user needs a second one answers these instead
	// of tokens (client-compat §3.2).
	MFARequiredFields
}

type tokenSetOutput struct {
	Body TokenSet
}

// tokens answers a token set, or the error that stopped it.
func tokens(set signin.TokenSet, err error) (*tokenSetOutput, error) {
	if err != nil {
		return nil, err
	}
	if set.MFA != nil {
		return &tokenSetOutput{Body: TokenSet{UserID: set.MFA.AppUserID, Message: "mfa_required", MFARequiredFields: mfaFields(set.MFA)}}, nil
	}
	out := &tokenSetOutput{Body: TokenSet{Access: set.Access, Refresh: set.Refresh, CSRF: set.CSRF,
		AccessExpiresAt: &set.AccessExpiresAt, UserID: set.UserID, KeyID: set.KeyID, Message: "ok"}}
	out.Body.MFAEnrollmentRequired = set.MFAEnrollmentRequired
	if set.Refresh != "" {
		out.Body.RefreshExpiresAt = &set.RefreshExpiresAt
	}
	return out, nil
}

var verifyOtpOp = operation{id: "verifyOtp", method: "POST", path: "/v1/auth/{app_id}/otps/verify", summary: "Verify a one-time code", tag: "Sign-in",
	auth: authPublicApp, errors: []string{"invalid_identifier", "invalid_code", "too_many_attempts", "code_entry_locked", "rate_limited"},
	desc: "Checks a one-time code and signs the user in: a token set, or `mfa_required` with a second-factor challenge when the app's policy asks for one. Each code takes one of the challenge's 5 attempts (and of the user's hourly budget per source) before it is compared, also under parallel requests: a code compared and wrong, or expired, is 422 invalid_code; a code refused uncompared because a budget is spent is 429 too_many_attempts (the right one too), and 100 consecutive wrong codes lock sign-in by code (429 code_entry_locked) until the user signs in another way. Emits `verification.{channel}.verified` and `challenge.completed` (or `verification.{channel}.failed`). No credentials.",
	req:  `{"otp":"123456","user_id":"` + exUserID + `"}`,
	resp: exTokens}

func (s *Server) verifyOTP(ctx context.Context, in *verifyOTPInput) (*tokenSetOutput, error) {
	return tokens(s.SignIn.VerifyOTP(ctx, appFrom(ctx), strings.TrimSpace(in.Body.UserID), strings.TrimSpace(in.Body.OTP), client(ctx, in.UserAgent)))
}

type magicLinkOutput struct {
	Body struct {
		MagicLink struct {
			ID string `json:"id" doc:"The polling handle for POST /magic_links/status. It is not the e-mailed token."`
			// Shown by the requesting device; the consent page asks for it.
			MatchNumber int `json:"match_number" minimum:"10" maximum:"99" doc:"A two-digit number to show on the requesting device. If the link is opened on another device, the consent page asks the user to pick this number among three before approving; a wrong pick denies the request."`
		} `json:"magic_link" doc:"The link sent: poll its id with POST /magic_links/status."`
		UserID         string             `json:"user_id" doc:"The user's id."`
		UserMetaErrors appuser.MetaErrors `json:"user_meta_errors" nullable:"true" doc:"Why metadata keys were dropped, by key; null when none were."`
	}
}

var sendLoginMagicLinkOp = operation{id: "sendLoginMagicLink", method: "POST", path: "/v1/auth/{app_id}/magic_links/login", summary: "Send a sign-in magic link", tag: "Sign-in",
	auth: authPublicApp, sendsSMS: true, errors: sendErrors,
	desc: "Sends a sign-in link to an e-mail address (or an SMS short link to a phone number). The requesting device polls POST /magic_links/status with `magic_link.id` until the link is opened and approved; the device that opens it signs in with PATCH /magic_links/authenticate. Show `match_number` on the requesting device: the consent page shows the same. Unknown identifiers are treated as by POST /otps/login. Rate limited. Emits `challenge.created` and `verification.{channel}.requested`. No credentials.",
	req:  `{"identifier":"ada@example.com","webauthn_enabled":true}`,
	resp: body(func(o *magicLinkOutput) {
		o.Body.MagicLink.ID, o.Body.MagicLink.MatchNumber, o.Body.UserID = exChallenge.ID, 42, exUserID
	})}

var sendRegisterMagicLinkOp = operation{id: "sendRegisterMagicLink", method: "POST", path: "/v1/auth/{app_id}/magic_links/register", summary: "Send a sign-up magic link", tag: "Sign-in",
	auth: authPublicApp, sendsSMS: true, errors: sendErrors,
	desc: "The sign-up flavour of POST /magic_links/login (the client SDK's register path): the same request, answer and limits, with `user_meta` for a user it creates.",
	req:  `{"identifier":"ada@example.com","user_meta":{"first_name":"Ada"}}`,
	resp: body(func(o *magicLinkOutput) {
		o.Body.MagicLink.ID, o.Body.MagicLink.MatchNumber, o.Body.UserID = exChallenge.ID, 42, exUserID
	})}

func (s *Server) sendMagicLink(ctx context.Context, in *sendOTPInput) (*magicLinkOutput, error) {
	defer s.sendFloor(ctx, time.Now())
	res, err := s.SignIn.SendMagicLink(ctx, appFrom(ctx), in.Body.Identifier, in.Body.UserMeta, in.Body.WebauthnEnabled, client(ctx, in.UserAgent))
	if err != nil {
		return nil, err
	}
	out := &magicLinkOutput{}
	out.Body.MagicLink.ID, out.Body.UserID, out.Body.UserMetaErrors = res.ChallengeID, res.UserID, res.MetaErrors
	out.Body.MagicLink.MatchNumber = res.MatchNumber
	return out, nil
}

type magicTokenInput struct {
	AppID     string `path:"app_id" doc:"The app id."`
	UserAgent string `header:"User-Agent" doc:"The caller's user agent: recorded with the session or challenge and shown to the user (sessions list, consent page, push approval)."`
	Body      struct {
		Token string   `json:"token" maxLength:"4096" doc:"The sct_magic token from the link."`
		_     struct{} `json:"-" additionalProperties:"true"`
	}
}

var authenticateMagicLinkOp = operation{id: "authenticateMagicLink", method: "PATCH", path: "/v1/auth/{app_id}/magic_links/authenticate", summary: "Sign in the device that opened a magic link", tag: "Sign-in",
	auth: authPublicApp, errors: []string{"magic_link_not_found_or_expired"},
	desc: "Signs in the device that opened a magic link, with the `sct_magic` token from its URL. Spends the link (404 magic_link_not_found_or_expired after that, or when it expired). Verifies the e-mail address or phone number; emits `verification.{channel}.verified`. Answers a token set, or `mfa_required`. No credentials.",
	req:  `{"token":"` + exMagicTok + `"}`,
	resp: exTokens}

func (s *Server) authenticateMagicLink(ctx context.Context, in *magicTokenInput) (*tokenSetOutput, error) {
	return tokens(s.SignIn.AuthenticateMagicLink(ctx, appFrom(ctx), strings.TrimSpace(in.Body.Token), client(ctx, in.UserAgent)))
}

type magicStatusInput struct {
	AppID     string `path:"app_id" doc:"The app id."`
	UserAgent string `header:"User-Agent" doc:"The caller's user agent: recorded with the session or challenge and shown to the user (sessions list, consent page, push approval)."`
	Body      struct {
		ID string   `json:"id" maxLength:"128" doc:"The magic_link.id the login request returned."`
		_  struct{} `json:"-" additionalProperties:"true"`
	}
}

var magicLinkStatusOp = operation{id: "magicLinkStatus", method: "POST", path: "/v1/auth/{app_id}/magic_links/status", summary: "Poll a magic link from the device that asked for it", tag: "Sign-in",
	auth: authPublicApp, errors: []string{"magic_link_pending", "magic_link_denied", "magic_link_not_found_or_expired", "slow_down", "rate_limited"},
	desc: "Polled by the device that asked for a magic link, with its `magic_link.id`: 409 magic_link_pending until the link is approved, then a token set (once), or `mfa_required`. 404 when the link was denied (magic_link_denied), used, or expired. Rate limited per IP. No credentials.",
	req:  `{"id":"` + exChallenge.ID + `"}`,
	resp: exTokens}

func (s *Server) magicLinkStatus(ctx context.Context, in *magicStatusInput) (*tokenSetOutput, error) {
	return tokens(s.SignIn.MagicLinkStatus(ctx, appFrom(ctx), strings.TrimSpace(in.Body.ID), client(ctx, in.UserAgent)))
}

type confirmInviteInput struct {
	AppID     string `path:"app_id" doc:"The app id."`
	UserAgent string `header:"User-Agent" doc:"The caller's user agent: recorded with the session or challenge and shown to the user (sessions list, consent page, push approval)."`
	Body      struct {
		Token    string         `json:"token" maxLength:"4096" doc:"The sct_magic token from the invitation link."`
		UserMeta map[string]any `json:"user_meta,omitempty" doc:"Metadata the invitee gives: only fields with visible_registration are kept."`
		_        struct{}       `json:"-" additionalProperties:"true"`
	}
}

var confirmInviteOp = operation{id: "confirmInvite", method: "POST", path: "/v1/auth/{app_id}/magic_links/confirm_invite", summary: "Accept an invitation", tag: "Sign-in",
	auth: authPublicApp, errors: []string{"magic_link_not_found_or_expired"},
	desc: "Accepts an invitation with the `sct_magic` token from the invitation link: the pending user becomes active, the contact verified, and the device signs in (a token set). `user_meta` may fill in visible_registration fields. 404 magic_link_not_found_or_expired when the invitation is unknown, used, replaced or expired. Emits `user.updated`. No credentials.",
	req:  `{"token":"` + exMagicTok + `","user_meta":{"first_name":"Ada"}}`,
	resp: exTokens}

func (s *Server) confirmInvite(ctx context.Context, in *confirmInviteInput) (*tokenSetOutput, error) {
	return tokens(s.SignIn.ConfirmInvite(ctx, appFrom(ctx), strings.TrimSpace(in.Body.Token), in.Body.UserMeta, client(ctx, in.UserAgent)))
}

type refreshInput struct {
	AppID   string `path:"app_id" doc:"The app id."`
	Refresh string `header:"X-Refresh-Token" doc:"The refresh token (raw JWT). Authorization may carry an API secret; it is not read here."`
}

var refreshTokensOp = operation{id: "refreshTokens", method: "POST", path: "/v1/auth/{app_id}/tokens/refresh", summary: "Rotate a refresh token", tag: "Tokens",
	auth: authPublicApp, errors: []string{"401"}, headers: []string{"X-Refresh-Token"},
	desc: "Rotates a refresh token (`X-Refresh-Token`) into a new token set; the old one is spent. A client that retries within the grace window (10 s) gets the same new set; presenting a spent token after that is reuse and ends the session (401). Refresh tokens never outlive the session's absolute lifetime. 401 for an expired, revoked or unknown token. No other credentials.",
	resp: exTokens}

var forceRefreshTokensOp = operation{id: "forceRefreshTokens", method: "POST", path: "/v1/auth/{app_id}/tokens/force_refresh", summary: "Rotate a refresh token (same as refresh)", tag: "Tokens",
	auth: authPublicApp, errors: []string{"401"}, headers: []string{"X-Refresh-Token"},
	desc: "The same as POST /tokens/refresh, at the path the client SDK's forced refresh uses.",
	resp: exTokens}

func (s *Server) refreshTokens(ctx context.Context, in *refreshInput) (*tokenSetOutput, error) {
	return tokens(s.SignIn.Refresh(ctx, appFrom(ctx), strings.TrimSpace(in.Refresh)))
}

const rotateAccessDoc = "Needs a valid access token in `X-Authorization`. What it returns depends on `Authorization`:\n\n" +
	"- **Without credentials** (a browser, or anyone holding only the access token): a token set with a new access " +
	"token that expires **when the presented one does**, and **no** `refresh` or `refresh_expires_at`. It never " +
	"creates a refresh token and never extends a token's life, so a stolen access token stays a short-lived one.\n" +
	"- **With the app's API secret** (`Authorization: Bearer`, server side; also an API key or an admin's workspace " +
	"secret): a full token set, as if the session's current refresh token had been presented to `/tokens/refresh`. " +
	"That token is spent with the new one as its successor, so the session keeps one refresh chain: its previous " +
	"holder gets the same new token within the refresh grace window (10 s), and presenting it after that is reuse, " +
	"which revokes the session. The new refresh token never outlives the session's absolute lifetime.\n\n" +
	"A bad `Authorization` is refused (401), a credential of another app gets 403."

type rotateAccessInput struct {
	AppID  string `path:"app_id" doc:"The app id."`
	Access string `header:"X-Authorization" doc:"A valid access token. Authorization may carry the app's API secret (server side only); see the operation."`
}

var rotateAccessOp = operation{id: "rotateAccess", method: "POST", path: "/v1/auth/{app_id}/tokens/rotate_access", summary: "Exchange an access token for a new token set", tag: "Tokens",
	auth: authOptionalApp, headers: []string{"X-Authorization"},
	desc: rotateAccessDoc,
	resp: func() TokenSet { t := exTokens; t.Refresh, t.RefreshExpiresAt = "", nil; return t }()}

func (s *Server) rotateAccess(ctx context.Context, in *rotateAccessInput) (*tokenSetOutput, error) {
	return tokens(s.SignIn.RotateAccess(ctx, optionalPrincipal(ctx), appFrom(ctx), strings.TrimSpace(in.Access)))
}

type verifyRefreshInput struct {
	AppID         string `path:"app_id" doc:"The app id."`
	Authorization string `header:"Authorization" doc:"Bearer and the refresh token."`
}

type verifyRefreshOutput struct {
	Body struct {
		Message  string `json:"message" doc:"ok."`
		Verified bool   `json:"verified" doc:"Always true: a bad token is a 401."`
	}
}

var verifyRefreshOp = operation{id: "verifyRefresh", method: "POST", path: "/v1/auth/{app_id}/tokens/verify/refresh", summary: "Check a refresh token without using it", tag: "Tokens",
	auth: authPublicApp, errors: []string{"401"}, headers: []string{"Authorization"},
	desc: "Checks a refresh token (`Authorization: Bearer <refresh token>`) without spending it: 200 `{message: ok, verified: true}` while it would refresh, 401 otherwise (expired, revoked, spent or unknown).",
	resp: body(func(o *verifyRefreshOutput) { o.Body.Message, o.Body.Verified = "ok", true })}

func (s *Server) verifyRefresh(ctx context.Context, in *verifyRefreshInput) (*verifyRefreshOutput, error) {
	scheme, tok, _ := strings.Cut(strings.TrimSpace(in.Authorization), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return nil, signin.ErrUnauthenticated
	}
	if err := s.SignIn.VerifyRefresh(ctx, appFrom(ctx), strings.TrimSpace(tok)); err != nil {
		return nil, err
	}
	out := &verifyRefreshOutput{}
	out.Body.Message, out.Body.Verified = "ok", true
	return out, nil
}

type currentUserInput struct {
	AppID     string `path:"app_id" doc:"The app id."`
	UserAgent string `header:"User-Agent" doc:"The caller's user agent: recorded with the session or challenge and shown to the user (sessions list, consent page, push approval)."`
}

var currentUserOp = operation{id: "currentUser", method: "GET", path: "/v1/auth/{app_id}/current_user", summary: "Get the signed-in user", tag: "Sessions",
	auth: authUser,
	desc: "The user the access token in `X-Authorization` belongs to. For a browser (a User-Agent with Mozilla/) `sessions` lists the user's live sessions with `current` marking this one; for other callers it is empty. 401 for an expired or revoked token.",
	resp: body(func(o *userOutput) { u := exUser; u.Sessions = []Session{exSession}; o.Body.User = u })}

func (s *Server) currentUser(ctx context.Context, in *currentUserInput) (*userOutput, error) {
	app, caller := appFrom(ctx), callerFrom(ctx)
	out := userResult(app, s.Users.Decode(app, caller.User))
	// Like the hosted service, list sessions (and identities) only for
	// browsers: they cost queries on the hottest route.
	if strings.Contains(in.UserAgent, "Mozilla/") {
		sessions, err := s.SignIn.ListSessions(ctx, app, caller)
		if err != nil {
			return nil, err
		}
		out.Body.User.Sessions = sessionList(sessions, caller.Session.ID)
		ids, err := s.SignIn.UserIdentities(ctx, caller.User.ID)
		if err != nil {
			return nil, err
		}
		out.Body.User.Identities = identitiesOut(ids)
	}
	return out, nil
}

type updateMetaInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	Body  struct {
		UserMeta map[string]any `json:"user_meta" doc:"Merged into the user's metadata; null removes a key. Only fields with visible_profile, and only when the app has profile_management on; any other key refuses the whole update (422 invalid_user_meta, naming it in user_meta_errors)."`
		_        struct{}       `json:"-" additionalProperties:"true"`
	}
}

var updateCurrentUserMetaOp = operation{id: "updateCurrentUserMeta", method: "PATCH", path: "/v1/auth/{app_id}/current_user/meta", summary: "Update the signed-in user's metadata", tag: "Sessions",
	auth: authUser, errors: []string{"invalid_user_meta"},
	desc: "The signed-in user changes their own metadata: only fields with visible_profile, and only when the app has profile_management on; any other key refuses the whole update (422 invalid_user_meta). Merged; null removes a key. Emits `user.updated`.",
	req:  `{"user_meta":{"first_name":"Ada"}}`,
	resp: body(func(o *userOutput) { o.Body.User = exUser })}

func (s *Server) updateCurrentUserMeta(ctx context.Context, in *updateMetaInput) (*userOutput, error) {
	app := appFrom(ctx)
	u, err := s.SignIn.UpdateMeta(ctx, app, callerFrom(ctx), in.Body.UserMeta)
	if err != nil {
		return nil, err
	}
	return userResult(app, u), nil
}

var signOutOp = operation{id: "signOut", method: "DELETE", path: "/v1/auth/{app_id}/current_user", summary: "Sign out (end this session)", tag: "Sessions",
	auth: authUser,
	desc: "Ends the session of the access token in `X-Authorization`: its refresh token is refused from now on and its access tokens fail on the next request on every replica.",
	resp: okBody}

func (s *Server) signOut(ctx context.Context, _ *appIDInput) (*okOutput, error) {
	if err := s.SignIn.SignOut(ctx, appFrom(ctx), callerFrom(ctx)); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}

type sessionsOutput struct {
	Body struct {
		Sessions []Session `json:"sessions" doc:"The user's live sessions, newest first."`
	}
}

var listSessionsOp = operation{id: "listSessions", method: "GET", path: "/v1/auth/{app_id}/sessions", summary: "List the signed-in user's sessions", tag: "Sessions",
	auth: authUser,
	desc: "The signed-in user's live sessions, newest first; `current` marks the caller's.",
	resp: body(func(o *sessionsOutput) { o.Body.Sessions = []Session{exSession} })}

func (s *Server) listSessions(ctx context.Context, _ *appIDInput) (*sessionsOutput, error) {
	caller := callerFrom(ctx)
	list, err := s.SignIn.ListSessions(ctx, appFrom(ctx), caller)
	if err != nil {
		return nil, err
	}
	out := &sessionsOutput{}
	out.Body.Sessions = sessionList(list, caller.Session.ID)
	return out, nil
}

type sessionIDInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	ID    string `path:"id" doc:"The session id, as GET /sessions lists it."`
}

var revokeSessionOp = operation{id: "revokeSession", method: "DELETE", path: "/v1/auth/{app_id}/sessions/{id}", summary: "End one of the signed-in user's sessions", tag: "Sessions",
	auth: authUser, errors: []string{"session_not_found"},
	desc: "Ends one of the signed-in user's sessions (\"sign out that device\"); ending the current one is the same as signing out. 404 session_not_found for an unknown id or another user's session.",
	resp: okBody}

func (s *Server) revokeSession(ctx context.Context, in *sessionIDInput) (*okOutput, error) {
	if err := s.SignIn.RevokeSession(ctx, appFrom(ctx), callerFrom(ctx), in.ID); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}

type bareSessionsOutput struct {
	Body []Session
}

var listUserSessionsOp = operation{id: "listUserSessions", method: "GET", path: "/v1/apps/{app_id}/users/{id}/sessions", summary: "List a user's sessions", tag: "Sessions",
	auth: authApp, errors: []string{"user_not_found"},
	desc: "A user's live sessions (not expired, not revoked), newest first, as a bare array (the server SDKs' shape). With the app's API secret, an API key or a workspace secret.",
	resp: []Session{exSession}}

var listUserSessionsAppOp = operation{id: "listUserSessionsApp", method: "GET", path: "/v1/{app_id}/users/{id}/sessions", summary: "List a user's sessions (alternate path)", tag: "Sessions",
	auth: authApp, errors: []string{"user_not_found"},
	desc: "The same list as GET /v1/apps/{app_id}/users/{id}/sessions, at the path the Ruby server SDK uses.",
	resp: []Session{exSession}}

func (s *Server) userSessions(ctx context.Context, in *userIDInput) (*bareSessionsOutput, error) {
	list, err := s.SignIn.UserSessions(ctx, principalFrom(ctx), appFrom(ctx), in.ID)
	if err != nil {
		return nil, err
	}
	return &bareSessionsOutput{Body: sessionList(list, "")}, nil
}

type userSessionInput struct {
	AppID     string `path:"app_id" doc:"The app id."`
	ID        string `path:"id" doc:"The user id."`
	SessionID string `path:"session_id" doc:"The session id, as the sessions list gives it."`
}

var revokeUserSessionOp = operation{id: "revokeUserSession", method: "DELETE", path: "/v1/{app_id}/users/{id}/sessions/{session_id}", summary: "End a user's session", tag: "Sessions",
	auth: authApp, errors: []string{"user_not_found", "session_not_found"},
	desc: "Ends one of a user's sessions for an administrator: its refresh token is refused from now on and its access tokens fail on the next request on every replica. 404 session_not_found for another user's or an unknown session.",
	resp: okBody}

func (s *Server) revokeUserSession(ctx context.Context, in *userSessionInput) (*okOutput, error) {
	if err := s.SignIn.RevokeUserSession(ctx, principalFrom(ctx), appFrom(ctx), in.ID, in.SessionID); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}

type errorReportInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	Body  struct {
		Payload map[string]any `json:"payload,omitempty" doc:"What the client SDK reports; only its arrival is logged, not its content."`
		_       struct{}       `json:"-" additionalProperties:"true"`
	} `required:"false"`
}

type emptyOutput struct {
	Body struct{}
}

var reportErrorOp = operation{id: "reportError", method: "POST", path: "/v1/auth/{app_id}/errors", summary: "Accept a client error report", tag: "Sign-in",
	auth: authPublicApp,
	desc: "Accepts an error report from the client SDK and answers `{}`. Only its arrival is logged (app and request id), never its content. No credentials.",
	req:  `{"payload":{"message":"Network request failed","where":"refreshTokens"}}`,
	resp: `{}`}

// reportError accepts the client SDK's error reports. Their content is the
// app's business and may hold personal data, so only the fact is logged.
func (s *Server) reportError(ctx context.Context, _ *errorReportInput) (*emptyOutput, error) {
	s.Log.InfoContext(ctx, "client error reported", "app_id", appFrom(ctx).ID, "request_id", requestID(ctx))
	return &emptyOutput{}, nil
}

// Session is a signed-in device (interface §2.9 with the client SDK's names, client-compat §3.6).
type Session struct {
	ID                 string    `json:"id" doc:"The session id: ends it with DELETE."`
	DisplayName        string    `json:"display_name" doc:"Browser on platform, for showing the session to the user."`
	Nickname           string    `json:"nickname" doc:"Same as display_name (client SDK name)."`
	Type               string    `json:"type" doc:"How the session started: magic, otp, invite or webauthn."`
	CredentialID       *string   `json:"credential_id" doc:"The passkey behind the session, if any."`
	UserAgent          string    `json:"user_agent" doc:"The User-Agent the session started with."`
	UserAgentShortname string    `json:"user_agent_shortname" doc:"The browser, as the user agent says."`
	Platform           string    `json:"platform" doc:"The operating system, as the user agent says."`
	Browser            string    `json:"browser" doc:"The browser, as the user agent says."`
	IPAddress          string    `json:"ip_address" doc:"The IP address the session started from."`
	LastUsedAtIP       string    `json:"last_used_at_ip" doc:"The IP address of the session (as ip_address)."`
	Current            bool      `json:"current" doc:"Whether this is the session of the calling token."`
	CreatedAt          time.Time `json:"created_at" doc:"When the session started (RFC 3339)."`
	UpdatedAt          time.Time `json:"updated_at" doc:"When its tokens were last refreshed (RFC 3339)."`
	LastActiveAt       time.Time `json:"last_active_at" doc:"When its tokens were last refreshed (RFC 3339)."`
	LastUsedAt         time.Time `json:"last_used_at" doc:"Same as last_active_at."`
}

func sessionList(list []signin.Session, current string) []Session {
	out := make([]Session, 0, len(list))
	for _, ss := range list {
		browser, platform := signin.DescribeUserAgent(ss.UserAgent)
		name := browser
		if platform != "" {
			name = browser + " on " + platform
		}
		out = append(out, Session{ID: ss.ID, DisplayName: name, Nickname: name, Type: ss.Method, CredentialID: optional(ss.CredentialID), UserAgent: ss.UserAgent,
			UserAgentShortname: browser, Platform: platform, Browser: browser, IPAddress: ss.IP, LastUsedAtIP: ss.IP,
			Current: ss.ID == current, CreatedAt: ss.CreatedAt, UpdatedAt: ss.LastActiveAt, LastActiveAt: ss.LastActiveAt,
			LastUsedAt: ss.LastActiveAt})
	}
	return out
}

// sendFloor holds the answer to a send of a code or magic link until
// SendMinTime has passed since start. Sending to a new address signs it up,
// which costs a few more statements than sending to a known one; below
// the floor both answer alike, so the timing does not tell whether an
// address has an account (security R-RL-4). Only the wait is added: no CPU.
func (s *Server) sendFloor(ctx context.Context, start time.Time) {
	wait := s.SendMinTime - time.Since(start)
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
