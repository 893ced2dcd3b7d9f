package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
)

// importUsersDoc is the description of POST /v1/{app_id}/users/import.
const importUsersDoc = "Creates users that exist elsewhere already, such as the users of an app moving from Scute " +
	"(docs/migrate-from-scute.md), with status `imported`: up to 1000 users per request (and the 1 MiB body limit), " +
	"in one transaction. Credentials as for POST /v1/{app_id}/users: the app's API secret or API key, or a workspace " +
	"secret of an owner or admin. Each user has an `identifier` (e-mail address or international phone number) or " +
	"`email` and/or `phone`, normalised as sign-in does; optional `user_meta`, checked against the app's schema; and " +
	"optional `email_verified` and `phone_verified`, to keep what the old service had verified. " +
	"**All or nothing**: every user is checked first and nothing is written when any is invalid: 400 invalid_request " +
	"with `details.rows`, one entry per problem `{index, field, error_code, error}` (index is the user's position in " +
	"`users`; error_code is invalid_identifier, duplicate_identifier (a contact twice in the batch), " +
	"identifier_conflict (its e-mail address and phone number belong to two different users), invalid_user_meta " +
	"(a key the schema does not declare or of the wrong type: unlike create, nothing is dropped silently) or " +
	"invalid_request), at most 100, and `details.total`. Missing required metadata fields are allowed. " +
	"**Idempotent**: a user whose e-mail address or phone number the app already has is not changed and answers " +
	"`exists` with that user's id, so a batch can be sent again after a crash or a timeout and creates nothing twice. " +
	"The answer lists every user in request order: `{index, outcome: created|exists, id, user_id, status, email, phone}`, " +
	"with the counts `created` and `existing`. Nothing is sent to the users. Each created user emits `user.created` " +
	"(data.user.status is `imported`), committed with the users. An imported user signs in as any other (code, magic " +
	"link) and becomes `active` at the first sign-in that proves a contact."

type importUsersInput struct {
	AppID string `path:"app_id"`
	Body  struct {
		Users []ImportUserBody `json:"users" minItems:"1" maxItems:"1000" doc:"The users to import, at most 1000."`
	}
}

// ImportUserBody is one user to import. Unknown fields are refused, so a
// misspelt field is not lost unnoticed.
type ImportUserBody struct {
	Identifier    string         `json:"identifier,omitempty" maxLength:"320" doc:"An e-mail address or an international phone number (+14155552671)."`
	Email         string         `json:"email,omitempty" maxLength:"320" doc:"The user's e-mail address, instead of or besides identifier."`
	Phone         string         `json:"phone,omitempty" maxLength:"40" doc:"The user's phone number in international form, instead of or besides identifier."`
	UserMeta      map[string]any `json:"user_meta,omitempty" doc:"Checked against the app's schema: a key it does not declare, or of the wrong type, refuses the import (invalid_user_meta)."`
	EmailVerified bool           `json:"email_verified,omitempty" doc:"The e-mail address was verified by the service the user comes from."`
	PhoneVerified bool           `json:"phone_verified,omitempty" doc:"The phone number was verified by the service the user comes from."`
}

// ImportedUser is what became of one user of an import.
type ImportedUser struct {
	Index   int     `json:"index" doc:"The user's position in the request's users."`
	Outcome string  `json:"outcome" enum:"created,exists" doc:"created: a new user with status imported; exists: the app already had a user with this e-mail address or phone number, left unchanged."`
	ID      string  `json:"id" doc:"App-user id; the uuid claim of the user's access tokens."`
	UserID  string  `json:"user_id" doc:"Base user id: one person across the apps of a workspace."`
	Status  string  `json:"status" enum:"active,pending,inactive,imported" doc:"The user's status now: imported for a new user; whatever it is for an existing one."`
	Email   *string `json:"email" doc:"The user's e-mail address (normalised), or null."`
	Phone   *string `json:"phone" doc:"The user's phone number (E.164), or null."`
}

type importUsersOutput struct {
	Body struct {
		Users    []ImportedUser `json:"users" doc:"One entry per user of the request, in its order."`
		Created  int            `json:"created" doc:"How many users were created."`
		Existing int            `json:"existing" doc:"How many users the app had already."`
	}
}

var importUsersOp = operation{id: "importUsers", method: "POST", path: "/v1/{app_id}/users/import", summary: "Import users (status imported)", tag: "Users",
	auth: authApp,
	desc: importUsersDoc,
	req:  `{"users":[{"email":"ada@example.com","email_verified":true,"user_meta":{"first_name":"Ada"}},{"phone":"+14155552671"}]}`,
	resp: body(func(o *importUsersOutput) {
		ada, phone := exEmail, "+14155552671"
		o.Body.Users = []ImportedUser{
			{Index: 0, Outcome: "created", ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a21", UserID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a22", Status: "imported", Email: &ada},
			{Index: 1, Outcome: "exists", ID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a23", UserID: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a24", Status: "active", Phone: &phone},
		}
		o.Body.Created, o.Body.Existing = 1, 1
	})}

func (s *Server) importUsers(ctx context.Context, in *importUsersInput) (*importUsersOutput, error) {
	app := appFrom(ctx)
	rows := make([]appuser.ImportRow, len(in.Body.Users))
	for i, u := range in.Body.Users {
		rows[i] = appuser.ImportRow{Identifier: u.Identifier, Email: u.Email, Phone: u.Phone, Meta: u.UserMeta,
			EmailVerified: u.EmailVerified, PhoneVerified: u.PhoneVerified}
	}
	results, err := s.Users.Import(ctx, principalFrom(ctx), app, rows)
	if err != nil {
		return nil, err
	}
	out := &importUsersOutput{}
	b := &out.Body
	b.Users = make([]ImportedUser, 0, len(results))
	for _, r := range results {
		b.Users = append(b.Users, ImportedUser{Index: r.Index, Outcome: r.Outcome, ID: r.User.ID, UserID: r.User.UserID,
			Status: r.User.Status, Email: optional(r.User.Email), Phone: optional(r.User.Phone)})
		if r.Outcome == appuser.ImportCreated {
			b.Created++
		} else {
			b.Existing++
		}
	}
	return out, nil
}

// importInvalid is the 400 of an import refused whole: the first problems
// in the message, all of them (up to 100) in details.rows.
func importInvalid(e *appuser.ImportInvalidError) *apiError {
	rows := make([]map[string]any, 0, len(e.Rows))
	var first []string
	for _, r := range e.Rows {
		rows = append(rows, map[string]any{"index": r.Index, "field": r.Field, "error_code": r.Code, "error": r.Reason})
		if len(first) < 3 {
			first = append(first, fmt.Sprintf("users[%d].%s %s", r.Index, r.Field, r.Reason))
		}
	}
	msg := fmt.Sprintf("%d problem(s) in users, nothing was imported: %s", e.Total, strings.Join(first, "; "))
	if e.Total > len(first) {
		msg += "; see details.rows"
	}
	ae := newAPIError(http.StatusBadRequest, "invalid_request", msg)
	ae.Details = map[string]any{"rows": rows, "total": e.Total}
	return ae
}
