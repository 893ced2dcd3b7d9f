package httpapi

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// UserBody creates or invites a user: an identifier (e-mail or phone), or
// the email and phone fields, and optional metadata checked against the
// app's schema.
type UserBody struct {
	Identifier string         `json:"identifier,omitempty" maxLength:"320" doc:"An e-mail address or an international phone number (+14155552671)."`
	Email      string         `json:"email,omitempty" maxLength:"320" doc:"The e-mail address (instead of identifier)."`
	Phone      string         `json:"phone,omitempty" maxLength:"40" doc:"The phone number in international format (instead of identifier)."`
	UserMeta   map[string]any `json:"user_meta,omitempty" doc:"Keys the app's schema does not declare, or of the wrong type, are dropped and reported in user_meta_errors."`
	_          struct{}       `json:"-" additionalProperties:"true"`
}

func (b UserBody) input() appuser.CreateInput {
	return appuser.CreateInput{Identifier: b.Identifier, Email: b.Email, Phone: b.Phone, Meta: b.UserMeta}
}

type createUserInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	Body  UserBody
}

type userWithErrorsOutput struct {
	Body struct {
		User           User               `json:"user" doc:"The user."`
		UserMetaErrors appuser.MetaErrors `json:"user_meta_errors" nullable:"true" doc:"Why metadata keys were dropped; null when none were."`
	}
}

var createUserOp = operation{id: "createUser", method: "POST", path: "/v1/{app_id}/users", summary: "Create a user", tag: "Users",
	auth: authApp, errors: []string{"invalid_identifier", "user_exists"},
	desc: "Creates an active user of the app from an `identifier` (or `email` and `phone`), with optional metadata checked against the app's schema: unknown keys or wrong types are dropped and reported in `user_meta_errors`. Nothing is sent to the user. 400 user_exists when the identifier is taken, invalid_identifier when it is not a valid address or number or not one the app allows. With the app's API secret, an API key or a workspace secret. Emits `user.created`.",
	req:  `{"identifier":"ada@example.com","user_meta":{"first_name":"Ada"}}`,
	resp: body(func(o *userWithErrorsOutput) { o.Body.User = exUser })}

var createUserAuthOp = operation{id: "createUserAuth", method: "POST", path: "/v1/auth/{app_id}/users", summary: "Create a user (client SDK path)", tag: "Users",
	auth: authApp, errors: []string{"invalid_identifier", "user_exists"},
	desc: "The same as POST /v1/{app_id}/users, at the path the client SDK's createUser uses.",
	req:  `{"email":"ada@example.com"}`,
	resp: body(func(o *userWithErrorsOutput) { o.Body.User = exUser })}

func (s *Server) createUser(ctx context.Context, in *createUserInput) (*userWithErrorsOutput, error) {
	app := appFrom(ctx)
	u, metaErrs, err := s.Users.Create(ctx, principalFrom(ctx), app, in.Body.input())
	if err != nil {
		return nil, err
	}
	out := &userWithErrorsOutput{}
	out.Body.User, out.Body.UserMetaErrors = userOut(app, u), metaErrs
	return out, nil
}

var inviteUserOp = operation{id: "inviteUser", method: "POST", path: "/v1/{app_id}/users/invite", summary: "Invite a user", tag: "Users",
	auth: authApp, sendsSMS: true, errors: with(sendErrors, "user_exists"),
	desc: "Creates a pending user and sends an invitation (e-mail, or SMS with a short link) that signs them in when opened and accepted (POST /magic_links/confirm_invite). Inviting a still-pending user again sends a new invitation and ends the old one; anyone else who exists is 400 user_exists. With the app's API secret, an API key or a workspace secret. Emits `user.created`.",
	req:  `{"identifier":"ada@example.com","user_meta":{"first_name":"Ada"}}`,
	resp: body(func(o *userWithErrorsOutput) {
		u := exUser
		u.Status, u.EmailVerified, u.LastUsedAt = "pending", false, nil
		o.Body.User = u
	})}

func (s *Server) inviteUser(ctx context.Context, in *createUserInput) (*userWithErrorsOutput, error) {
	app := appFrom(ctx)
	u, metaErrs, err := s.Users.Invite(ctx, principalFrom(ctx), app, in.Body.input())
	if err != nil {
		return nil, err
	}
	out := &userWithErrorsOutput{}
	out.Body.User, out.Body.UserMetaErrors = userOut(app, u), metaErrs
	return out, nil
}

const listUsersDoc = "An app's users, newest first, one page at a time (`page`, and `limit` or its alias `per_page`: " +
	"default 25, at most 100), with `total_count`, `total_pages`, `current_page`, `next_page`, `prev_page` and `per_page`. " +
	"Filters combine. `q` (or its alias `search`) is a **prefix** search on e-mail addresses and phone numbers, served by " +
	"an index: `q=ann` finds ann@example.com and anna@example.org, `q=ANN@Example.com` finds exactly ann@example.com " +
	"(e-mail ignores ASCII case), `q=%2B1 415` or `q=1415` finds +14155552671; it never matches inside an address " +
	"(`q=example` finds no one) and takes `%`, `_` and `+` literally. `email` and `phone` match text anywhere in the " +
	"address (a scan of the app's users)."

const getUserDoc = "A user with `sessions`, the user's live sessions (not expired, not revoked), newest first, in the shape " +
	"GET /v1/{app_id}/users/{id}/sessions lists them; their ids end a session with " +
	"DELETE /v1/{app_id}/users/{id}/sessions/{session_id} (the server SDKs' users.get and sessions.revoke)."

// Query values are strings so that the client SDK's literal "undefined"
// (URLSearchParams of an unset field) can be treated as absent.
type listUsersInput struct {
	AppID         string `path:"app_id" doc:"The app id."`
	ID            string `query:"id" doc:"Only this user id."`
	Email         string `query:"email" doc:"E-mail contains this text (case-insensitive)."`
	Phone         string `query:"phone" doc:"Phone contains this text."`
	Status        string `query:"status" doc:"active, pending, inactive or imported."`
	CreatedBefore string `query:"created_before" doc:"RFC 3339 time."`
	Q             string `query:"q" doc:"Search: users whose e-mail address or phone number starts with this text. A + or a digit followed only by digits, spaces, dots, dashes and parentheses searches phone numbers (+ added when missing, separators dropped, a leading 00 read as +); anything else searches e-mail addresses, ignoring ASCII case. A whole address or number finds that user. Empty: no search." example:"ann@ex"`
	Search        string `query:"search" doc:"Same as q (the Ruby server SDK's name). Sending both with different values is refused (400)."`
	Page          string `query:"page" doc:"1-based page number (default 1)."`
	Limit         string `query:"limit" doc:"Users per page (default 25, at most 100)."`
	PerPage       string `query:"per_page" doc:"Same as limit (the Ruby server SDK's name). Sending both with different values is refused (400)."`
}

func present(v string) string {
	v = strings.TrimSpace(v)
	if v == "undefined" || v == "null" {
		return ""
	}
	return v
}

// maxQueryInt bounds page and limit: a larger page made the row offset
// overflow into a negative OFFSET, which PostgreSQL refuses (a 500).
const maxQueryInt = 1_000_000

func intParam(name, v string) (int, error) {
	if v = present(v); v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > maxQueryInt {
		return 0, errs.Invalidf(name, "must be a whole number up to %d", maxQueryInt)
	}
	return n, nil
}

type listUsersOutput struct {
	Body struct {
		Users       []User `json:"users" doc:"The users of this page, newest first."`
		TotalCount  int    `json:"total_count" doc:"Matches over all pages."`
		TotalPages  int    `json:"total_pages" doc:"Pages of per_page items."`
		CurrentPage int    `json:"current_page" doc:"This page (1-based)."`
		NextPage    *int   `json:"next_page" doc:"The next page; null on the last."`
		PrevPage    *int   `json:"prev_page" doc:"The previous page; null on the first."`
		PerPage     int    `json:"per_page" doc:"Items per page."`
	}
}

var listUsersOp = operation{id: "listUsers", method: "GET", path: "/v1/{app_id}/users", summary: "List users", tag: "Users",
	auth: authApp,
	desc: listUsersDoc,
	resp: body(func(o *listUsersOutput) {
		o.Body.Users, o.Body.TotalCount, o.Body.TotalPages, o.Body.CurrentPage, o.Body.PerPage = []User{exUser}, 1, 1, 1, 25
	})}

func (s *Server) listUsers(ctx context.Context, in *listUsersInput) (*listUsersOutput, error) {
	app := appFrom(ctx)
	page, err := intParam("page", in.Page)
	if err != nil {
		return nil, err
	}
	limit, err := intParam("limit", in.Limit)
	if err != nil {
		return nil, err
	}
	perPage, err := intParam("per_page", in.PerPage)
	if err != nil {
		return nil, err
	}
	// The Ruby SDK's spellings: two that disagree are refused rather than
	// one silently chosen.
	if present(in.Limit) == "" {
		limit = perPage
	} else if present(in.PerPage) != "" && perPage != limit {
		return nil, errs.Invalidf("per_page", "must equal limit when both are sent")
	}
	q, search := present(in.Q), present(in.Search)
	if q == "" {
		q = search
	} else if search != "" && search != q {
		return nil, errs.Invalidf("search", "must equal q when both are sent")
	}
	f := appuser.Filter{ID: present(in.ID), Email: present(in.Email), Phone: present(in.Phone), Status: present(in.Status)}
	f = appuser.Search(f, q)
	if v := present(in.CreatedBefore); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return nil, errs.Invalidf("created_before", "must be an RFC 3339 time")
		}
		f.CreatedBefore = &t
	}
	p, err := s.Users.List(ctx, principalFrom(ctx), app, f, page, limit)
	if err != nil {
		return nil, err
	}
	out := &listUsersOutput{}
	b := &out.Body
	b.Users = make([]User, 0, len(p.Users))
	for _, u := range p.Users {
		b.Users = append(b.Users, userOut(app, u))
	}
	b.TotalCount, b.TotalPages, b.CurrentPage, b.PerPage = p.Total, p.TotalPages, p.Page, p.PerPage
	if p.Page < p.TotalPages {
		n := p.Page + 1
		b.NextPage = &n
	}
	if p.Page > 1 {
		n := min(p.Page-1, max(p.TotalPages, 1))
		b.PrevPage = &n
	}
	return out, nil
}

type userIDInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	ID    string `path:"id" doc:"The user id."`
}

type userOutput struct {
	Body struct {
		User User `json:"user" doc:"The user."`
	}
}

func userResult(app tenant.App, u appuser.User) *userOutput {
	out := &userOutput{}
	out.Body.User = userOut(app, u)
	return out
}

var getUserOp = operation{id: "getUser", method: "GET", path: "/v1/{app_id}/users/{id}", summary: "Get a user", tag: "Users",
	auth: authApp, errors: []string{"user_not_found"},
	desc: getUserDoc,
	resp: body(func(o *userOutput) {
		u := exUser
		s := exSession
		s.Current = false
		u.Sessions = []Session{s}
		o.Body.User = u
	})}

// getUser answers the user with the user's live sessions, whose ids
// DELETE …/sessions/{session_id} takes: the server SDKs' users.get reads
// them there (server-sdk-compat §3).
func (s *Server) getUser(ctx context.Context, in *userIDInput) (*userOutput, error) {
	app := appFrom(ctx)
	u, sessions, err := s.SignIn.UserWithSessions(ctx, principalFrom(ctx), app, in.ID)
	if err != nil {
		return nil, err
	}
	ids, err := s.SignIn.UserIdentities(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	out := userResult(app, u)
	out.Body.User.Sessions = sessionList(sessions, "")
	out.Body.User.Identities = identitiesOut(ids)
	return out, nil
}

type updateUserInput struct {
	AppID string `path:"app_id" doc:"The app id."`
	ID    string `path:"id" doc:"The user id."`
	Body  struct {
		UserMeta map[string]any `json:"user_meta,omitempty" doc:"Merged into the user's metadata; a key set to null is removed. Keys outside the app's schema are refused (422)."`
		Email    *string        `json:"email,omitempty" doc:"A new e-mail address (\"\" removes it)."`
		Phone    *string        `json:"phone,omitempty" doc:"A new phone number (\"\" removes it)."`
		_        struct{}       `json:"-" additionalProperties:"true"`
	}
}

var updateUserOp = operation{id: "updateUser", method: "PATCH", path: "/v1/{app_id}/users/{id}", summary: "Update a user", tag: "Users",
	auth: authApp, errors: []string{"user_not_found", "invalid_identifier", "user_exists", "invalid_user_meta"},
	desc: "Changes a user's metadata (merged; null removes a key; keys outside the app's schema are refused with 422), e-mail address or phone number (\"\" removes one, but a user keeps at least one of them: else 400 invalid_identifier; a new one is unverified; 400 user_exists when another user has it). With the app's API secret, an API key or a workspace secret. Emits `user.updated`, and `user.identifier_changed` when the e-mail or phone changed.",
	req:  `{"user_meta":{"first_name":"Ada"},"phone":"+14155550123"}`,
	resp: body(func(o *userOutput) { u := exUser; u.Phone = &exPhone; o.Body.User = u })}

func (s *Server) updateUser(ctx context.Context, in *updateUserInput) (*userOutput, error) {
	app := appFrom(ctx)
	u, err := s.Users.Update(ctx, principalFrom(ctx), app, in.ID, appuser.UpdateInput{Meta: in.Body.UserMeta, Email: in.Body.Email, Phone: in.Body.Phone})
	if err != nil {
		return nil, err
	}
	return userResult(app, u), nil
}

var activateUserOp = operation{id: "activateUser", method: "POST", path: "/v1/{app_id}/users/{id}/activate", summary: "Activate a user", tag: "Users",
	auth: authApp, errors: []string{"user_not_found"},
	desc: "Sets a user's status to active, so the user can sign in. Open invitations end with the change. Emits `user.updated`.",
	resp: body(func(o *userOutput) { o.Body.User = exUser })}

func (s *Server) activateUser(ctx context.Context, in *userIDInput) (*userOutput, error) {
	app := appFrom(ctx)
	u, err := s.Users.SetStatus(ctx, principalFrom(ctx), app, in.ID, appuser.StatusActive)
	if err != nil {
		return nil, err
	}
	return userResult(app, u), nil
}

var deactivateUserOp = operation{id: "deactivateUser", method: "POST", path: "/v1/{app_id}/users/{id}/deactivate", summary: "Deactivate a user", tag: "Users",
	auth: authApp, errors: []string{"user_not_found"},
	desc: "Sets a user's status to inactive: every session of the user ends at once and the user cannot sign in until activated again (which does not revive the sessions). Open invitations end too. Emits `user.updated`.",
	resp: body(func(o *userOutput) { u := exUser; u.Status = "inactive"; o.Body.User = u })}

func (s *Server) deactivateUser(ctx context.Context, in *userIDInput) (*userOutput, error) {
	app := appFrom(ctx)
	u, err := s.Users.SetStatus(ctx, principalFrom(ctx), app, in.ID, appuser.StatusInactive)
	if err != nil {
		return nil, err
	}
	return userResult(app, u), nil
}

var deleteUserOp = operation{id: "deleteUser", method: "DELETE", path: "/v1/{app_id}/users/{id}", summary: "Delete a user", tag: "Users",
	auth: authApp, errors: []string{"user_not_found"},
	desc: "Deletes a user with the user's sessions, passkeys, second factors and pending challenges; the user's tokens stop working. With the app's API secret, an API key or a workspace secret. Cannot be undone.",
	resp: okBody}

func (s *Server) deleteUser(ctx context.Context, in *userIDInput) (*okOutput, error) {
	if err := s.Users.Delete(ctx, principalFrom(ctx), appFrom(ctx), in.ID); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}

var resetUserMfaOp = operation{id: "resetUserMfa", method: "DELETE", path: "/v1/{app_id}/users/{id}/mfa", summary: "Reset a user's second factors", tag: "MFA",
	auth: authApp, errors: []string{"user_not_found"},
	desc: "Removes every authenticator app (TOTP) and backup code of a user, for support when a user has lost them; passkeys stay (`DELETE /v1/{app_id}/users/{id}/devices/{device_id}` removes one). " +
		"The user's failed-code lockouts end, a sign-in waiting for its second factor ends (its challenge is cancelled), the user gets a security notice, webhooks get `user.updated` (`change: mfa_method_removed`) per authenticator app removed and one for the backup codes, and the audit log `user.mfa_reset`. " +
		"If the app requires a second factor, the user enrols a new one at the next sign-in. A user with none answers 200 as well, and nothing is recorded. With the app's API secret, an API key or a workspace secret.",
	resp: okBody}

func (s *Server) resetUserMFA(ctx context.Context, in *userIDInput) (*okOutput, error) {
	if err := s.SignIn.ResetUserMFA(ctx, principalFrom(ctx), appFrom(ctx), in.ID); err != nil {
		return nil, err
	}
	return &okOutput{Body: okBody}, nil
}

const lookupUserDoc = "The client SDK's existence check (`?identifier=`) and its lookup after a magic link (`?user_id=`). " +
	"Unknown users give `200 {\"user\": null}`. **Without credentials** the answer is limited to what the SDK reads " +
	"and tells nothing about a contact the caller did not supply: looked up by e-mail, `phone` is null and " +
	"`phone_verified` false (and the other way round); looked up by id, both contacts are masked " +
	"(`a•••@example.com`, `•••• 4567`). Anonymous lookups (and `/users/metafields`) share one budget per client IP " +
	"(`ratelimit.lookup_per_ip`, default 120 per 10 minutes; then 429 with `Retry-After`). **With an API secret** " +
	"(or API key, or workspace secret) in `Authorization`, the user's contacts are shown in full, without that limit."

type lookupUserInput struct {
	AppID      string `path:"app_id" doc:"The app id."`
	Identifier string `query:"identifier" doc:"An e-mail address or phone number."`
	UserID     string `query:"user_id" doc:"A user id."`
}

type lookupUserOutput struct {
	Body struct {
		User *LookupUser `json:"user" doc:"null when no user matches."`
	}
}

var lookupUserOp = operation{id: "lookupUser", method: "GET", path: "/v1/auth/{app_id}/users", summary: "Look a user up by identifier or id", tag: "Users",
	auth: authOptionalApp, errors: []string{"user_not_found", "invalid_identifier", "rate_limited"},
	desc: lookupUserDoc,
	resp: body(func(o *lookupUserOutput) {
		o.Body.User = &LookupUser{ID: exUserID, Status: "active", Email: &exEmail, EmailVerified: true, RequiredFields: []RequiredField{}}
	})}

// lookupUser answers 200 {user: null} for unknown users: the client SDK
// branches on that, not on a 404. Without credentials the answer is
// redacted and rate-limited (signin.LookupUser).
func (s *Server) lookupUser(ctx context.Context, in *lookupUserInput) (*lookupUserOutput, error) {
	app := appFrom(ctx)
	q := signin.LookupQuery{Identifier: present(in.Identifier), UserID: present(in.UserID)}
	if q.Identifier == "" && q.UserID == "" {
		return nil, errs.Invalidf("identifier", "or user_id is required")
	}
	u, err := s.SignIn.LookupUser(ctx, optionalPrincipal(ctx), app, q, client(ctx, ""))
	if err != nil {
		return nil, err
	}
	out := &lookupUserOutput{}
	out.Body.User = lookupOut(app, u)
	return out, nil
}

type metafieldsInput struct {
	AppID  string `path:"app_id" doc:"The app id."`
	UserID string `query:"user_id" required:"true" doc:"The user id."`
}

type metafieldsOutput struct {
	Body struct {
		Meta bool `json:"meta" doc:"Whether the user has filled in every required metadata field."`
	}
}

var userMetafieldsOp = operation{id: "userMetafields", method: "GET", path: "/v1/auth/{app_id}/users/metafields", summary: "Check whether a user has filled in the required metadata", tag: "Users",
	auth: authPublicApp, errors: []string{"user_not_found", "invalid_identifier", "rate_limited"},
	desc: "Whether a user has filled in every metadata field the app requires (the client SDK asks while signing in, to show a form for the rest). No credentials; shares the anonymous lookup budget per IP with GET /users (429 with Retry-After).",
	resp: `{"meta":true}`}

func (s *Server) userMetafields(ctx context.Context, in *metafieldsInput) (*metafieldsOutput, error) {
	complete, err := s.SignIn.MetaComplete(ctx, appFrom(ctx), in.UserID, client(ctx, ""))
	if err != nil {
		return nil, err
	}
	out := &metafieldsOutput{}
	out.Body.Meta = complete
	return out, nil
}
