// Package access decides what a caller may do. A Principal is who is calling
// (an API secret, an API key, or the operator at the command line); domain
// methods that act for a caller take it and ask App or Workspace, which read
// a workspace member's role in the same transaction as the change it
// permits. httpapi only authenticates and never decides.
package access

import (
	"context"
	"errors"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// ErrForbidden refuses a caller that may not do what it asked. It is also the
// answer for another tenant's app or workspace, so ids cannot be probed.
var ErrForbidden = errors.New("forbidden")

// Kind of principal.
type Kind string

// Principal kinds.
const (
	// KindAppSecret is an app's API secret: full access to its own app.
	KindAppSecret Kind = "app_secret"
	// KindAPIKey is an app's API key: reads and writes its app's data, not its credentials or settings.
	KindAPIKey Kind = "api_key"
	// KindWorkspaceSecret acts for one member of one workspace, with that member's current role.
	KindWorkspaceSecret Kind = "workspace_secret"
	// KindConsole is an operator signed in to the console, acting in one
	// workspace for its membership there, with that member's current role:
	// the same rights as a workspace secret of that member.
	KindConsole Kind = "console"
	// KindOperator is whoever runs the gatehouse command on the server: every right.
	KindOperator Kind = "operator"
	// KindSelf is an app's user acting on their own account (signing up,
	// changing their profile), whom signin has authenticated. It has no right
	// over the app: App, Workspace, OperatorOnly and Reaches refuse it, and
	// only the domain methods made for it (appuser.SignUp, UpdateOwnMeta)
	// accept it. Named rather than a nil principal, so that "no caller"
	// cannot be mistaken for "the user themselves".
	KindSelf Kind = "self"
)

// Principal is the server-side caller. It carries no role: a role is read
// when a decision needs it, so it is never stale.
type Principal struct {
	Kind         Kind
	CredentialID string
	AppID        string // app secrets and API keys
	WorkspaceID  string // workspace secrets
	MemberID     string // workspace secrets
}

// ForMember reports whether p acts for one member of one workspace (a
// workspace secret or a console session), with that member's current role.
func (p Principal) ForMember() bool { return p.Kind == KindWorkspaceSecret || p.Kind == KindConsole }

// Operator is the principal of the command line.
func Operator() Principal { return Principal{Kind: KindOperator} }

// Self is the principal of a user acting on their own account (KindSelf).
func Self() Principal { return Principal{Kind: KindSelf} }

// Roles of workspace members.
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// ValidRole reports whether r is a known role.
func ValidRole(r string) bool { return rank[r] > 0 }

var rank = map[string]int{RoleMember: 1, RoleAdmin: 2, RoleOwner: 3}

// AtLeast reports whether role ranks at least min.
func AtLeast(role, min string) bool { return rank[role] >= rank[min] && rank[min] > 0 }

// Level is what a principal wants to do with an app.
type Level int

// Access levels.
const (
	// Read lists and reads the app's data.
	Read Level = iota + 1
	// Write creates, changes and deletes the app's data (users, sessions, webhooks).
	Write
	// Manage creates the app's credentials and changes its settings.
	Manage
)

// App decides whether p may act on the app at level need: an app secret on
// its own app, an API key on its own app up to Write, a workspace member on
// the apps of its workspace (members read; admins and owners do all), the
// operator on any. q is where a member's role is read: pass the transaction
// of the change, so a role changed meanwhile cannot authorise it. Anything
// else is ErrForbidden, whether the app exists or not.
func App(ctx context.Context, q store.Queries, p Principal, appID string, need Level) error {
	switch p.Kind {
	case KindOperator:
		return nil
	case KindAppSecret:
		if p.AppID == appID {
			return nil
		}
	case KindAPIKey:
		if p.AppID == appID && need <= Write {
			return nil
		}
	case KindWorkspaceSecret, KindConsole:
		role, err := q.MemberRoleInApp(ctx, appID, p.MemberID)
		if err != nil {
			return forbidden(err)
		}
		if need == Read || AtLeast(role, RoleAdmin) {
			return nil
		}
	}
	return ErrForbidden
}

// Workspace returns p's role in the workspace when it is at least min (the
// operator counts as an owner), reading it in q as App does; otherwise
// ErrForbidden.
func Workspace(ctx context.Context, q store.Queries, p Principal, workspaceID, min string) (string, error) {
	switch p.Kind {
	case KindOperator:
		return RoleOwner, nil
	case KindWorkspaceSecret, KindConsole:
		if p.WorkspaceID != workspaceID {
			return "", ErrForbidden
		}
		role, err := q.MemberRole(ctx, workspaceID, p.MemberID)
		if err != nil {
			return "", forbidden(err)
		}
		if AtLeast(role, min) {
			return role, nil
		}
	}
	return "", ErrForbidden
}

// forbidden turns "no such member here" into ErrForbidden and keeps real
// failures (an outage) as they are.
func forbidden(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return ErrForbidden
	}
	return err
}

// OperatorOnly refuses every principal but the operator: server-wide actions
// such as rotating the signing key.
func OperatorOnly(p Principal) error {
	if p.Kind == KindOperator {
		return nil
	}
	return ErrForbidden
}

// Reaches reports whether p's credential belongs to the app (which is of
// workspaceID) at all, whatever it may do there; workspaceID alone with
// appID "" asks the same of a workspace. The HTTP layer asks it before it
// reads a request's input, so a credential of another tenant learns nothing
// from how that input would be judged. What p may do is still decided by the
// method it calls, with roles read then.
func Reaches(p Principal, appID, workspaceID string) bool {
	switch p.Kind {
	case KindOperator:
		return true
	case KindAppSecret, KindAPIKey:
		return appID != "" && p.AppID == appID
	case KindWorkspaceSecret, KindConsole:
		return workspaceID == "" || p.WorkspaceID == workspaceID
	}
	return false
}
