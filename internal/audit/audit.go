// Package audit records administrative actions in the append-only audit
// log (docs/audit-log.md): who did what to which target, the change before
// and after (never a secret), from where and when. Each entry is written in
// the transaction of the change it records, so an action and its entry
// commit or fail together, whether it came from the API, the command line
// or the console.
package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// Request is where an action came from: the client's address and user
// agent, as the HTTP layer saw them ("" from the command line).
type Request struct {
	IP, UserAgent string
}

type requestKey struct{}

// WithRequest returns ctx carrying r, for the entries of the actions the
// request makes.
func WithRequest(ctx context.Context, r Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// From is where the request in ctx came from (zero for reads and the
// command line).
func From(ctx context.Context) Request {
	r, _ := ctx.Value(requestKey{}).(Request)
	return r
}

// Change is one action to record. Before and After are what the target
// was and became, as values that marshal to JSON objects holding nothing
// secret (the caller chooses the fields: a secret appears only as its
// hint, if at all); nil for no such side (a creation has no Before).
type Change struct {
	WorkspaceID, AppID string
	// Action names it: "<target>.<verb>", such as app.updated or
	// api_key.created (the docs list them).
	Action               string
	TargetType, TargetID string
	Before, After        any
}

// Maximum length of a user agent kept.
const maxUserAgent = 512

// Record appends p's entry for c with q (the change's transaction). With
// both sides, only the fields that differ are kept; a change whose sides
// are the same records nothing: a save that changed nothing is no action.
func Record(ctx context.Context, q store.Queries, now time.Time, p access.Principal, c Change) error {
	before, err := marshal(c.Before)
	if err != nil {
		return err
	}
	after, err := marshal(c.After)
	if err != nil {
		return err
	}
	if before != nil && after != nil {
		if before, after, err = changed(before, after); err != nil || before == nil {
			return err
		}
	}
	r := From(ctx)
	if len(r.UserAgent) > maxUserAgent {
		r.UserAgent = r.UserAgent[:maxUserAgent]
	}
	return q.AddAuditEntry(ctx, store.AuditEntry{ID: uuid.Must(uuid.NewV7()).String(), WorkspaceID: c.WorkspaceID, AppID: c.AppID,
		ActorKind: string(p.Kind), ActorID: p.CredentialID, MemberID: p.MemberID, Action: c.Action, TargetType: c.TargetType,
		TargetID: c.TargetID, Before: before, After: after, IP: r.IP, UserAgent: r.UserAgent, CreatedAt: now})
}

// changed keeps, of two JSON objects, the fields whose values differ (a
// field absent on one side is null there); nil, nil when none does.
func changed(before, after []byte) ([]byte, []byte, error) {
	var b, a map[string]json.RawMessage
	if err := json.Unmarshal(before, &b); err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal(after, &a); err != nil {
		return nil, nil, err
	}
	outB, outA := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	null := json.RawMessage("null")
	for k, v := range b {
		if w, ok := a[k]; !ok || !bytes.Equal(v, w) {
			outB[k], outA[k] = v, null
			if ok {
				outA[k] = w
			}
		}
	}
	for k, w := range a {
		if _, ok := b[k]; !ok {
			outB[k], outA[k] = null, w
		}
	}
	if len(outA) == 0 {
		return nil, nil, nil
	}
	nb, err := json.Marshal(outB)
	if err != nil {
		return nil, nil, err
	}
	na, err := json.Marshal(outA)
	return nb, na, err
}

func marshal(v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	return json.Marshal(v)
}
