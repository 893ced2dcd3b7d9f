package store

import (
	"context"
	"strings"
	"time"
)

// AuditEntry is one administrative action (audit_log). Before and After are
// JSON objects, already redacted; nil when there is no such side.
type AuditEntry struct {
	ID          string
	WorkspaceID string
	AppID       string
	ActorKind   string
	ActorID     string
	MemberID    string
	Action      string
	TargetType  string
	TargetID    string
	Before      []byte
	After       []byte
	IP          string
	UserAgent   string
	CreatedAt   time.Time
}

const auditColumns = `id, workspace_id, app_id, actor_kind, actor_id, member_id, action, target_type, target_id,
	before_state, after_state, ip, user_agent, created_at`

// AddAuditEntry appends e.
func (q Queries) AddAuditEntry(ctx context.Context, e AuditEntry) error {
	_, err := q.w.exec(ctx, `INSERT INTO audit_log (`+auditColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		e.ID, e.WorkspaceID, e.AppID, e.ActorKind, e.ActorID, e.MemberID, e.Action, e.TargetType, e.TargetID,
		nullJSON(e.Before), nullJSON(e.After), e.IP, e.UserAgent, ts(e.CreatedAt))
	return err
}

func nullJSON(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// AuditFilter narrows a workspace's audit log; empty fields do not.
type AuditFilter struct {
	AppID, Action, ActorID, TargetID string
	// Before lists only entries older than this id (the cursor).
	Before string
	Limit  int
}

// ListAuditEntries returns a workspace's entries that f lets through,
// newest first, at most f.Limit. Action matches exactly, or by prefix when
// it ends in '.' ("app." for every app action).
func (q Queries) ListAuditEntries(ctx context.Context, workspaceID string, f AuditFilter) ([]AuditEntry, error) {
	where := []string{"workspace_id = $1"}
	args := []any{workspaceID}
	// add appends a condition, each ? one of vs in order.
	add := func(cond string, vs ...any) {
		for _, v := range vs {
			args = append(args, v)
			cond = strings.Replace(cond, "?", "$"+itoa(len(args)), 1)
		}
		where = append(where, cond)
	}
	if f.AppID != "" {
		add("app_id = ?", f.AppID)
	}
	if strings.HasSuffix(f.Action, ".") {
		add("substr(action, 1, "+itoa(len(f.Action))+") = ?", f.Action)
	} else if f.Action != "" {
		add("action = ?", f.Action)
	}
	if f.ActorID != "" {
		add("(actor_id = ? OR member_id = ?)", f.ActorID, f.ActorID)
	}
	if f.TargetID != "" {
		add("target_id = ?", f.TargetID)
	}
	if f.Before != "" {
		add("id < ?", f.Before)
	}
	args = append(args, f.Limit)
	rs, err := q.r.query(ctx, `SELECT `+auditColumns+` FROM audit_log WHERE `+strings.Join(where, " AND ")+
		` ORDER BY id DESC LIMIT $`+itoa(len(args)), args...)
	if err != nil {
		return nil, err
	}
	return collect(rs, func(r row) (AuditEntry, error) {
		var e AuditEntry
		var before, after *string
		err := r.Scan(&e.ID, &e.WorkspaceID, &e.AppID, &e.ActorKind, &e.ActorID, &e.MemberID, &e.Action, &e.TargetType, &e.TargetID,
			&before, &after, &e.IP, &e.UserAgent, &e.CreatedAt)
		if before != nil {
			e.Before = []byte(*before)
		}
		if after != nil {
			e.After = []byte(*after)
		}
		e.CreatedAt = e.CreatedAt.UTC()
		return e, err
	})
}
