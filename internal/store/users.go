package store

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"
)

// BaseUser is one person within a workspace; each app they use has its own AppUser.
type BaseUser struct {
	ID          string
	WorkspaceID string
	Email       string
	Phone       string
	CreatedAt   time.Time
}

// FindBaseUser finds a workspace's person by e-mail or phone (whichever is set).
func (q Queries) FindBaseUser(ctx context.Context, workspaceID, email, phone string) (BaseUser, error) {
	var b BaseUser
	var e, p *string
	err := q.w.queryRow(ctx, `SELECT id, workspace_id, email, phone, created_at FROM base_users
		WHERE ((email = $2 AND $2 <> '') OR (phone = $3 AND $3 <> '')) AND workspace_id`+q.d.unindexed+` = $1
		ORDER BY created_at LIMIT 1`, workspaceID, email, phone).Scan(&b.ID, &b.WorkspaceID, &e, &p, &b.CreatedAt)
	b.Email, b.Phone, b.CreatedAt = deref(e), deref(p), b.CreatedAt.UTC()
	return b, err
}

// CreateBaseUser inserts b.
func (q Queries) CreateBaseUser(ctx context.Context, b BaseUser) error {
	_, err := q.w.exec(ctx, `INSERT INTO base_users (id, workspace_id, email, phone, created_at) VALUES ($1, $2, $3, $4, $5)`,
		b.ID, b.WorkspaceID, nullString(b.Email), nullString(b.Phone), ts(b.CreatedAt))
	return err
}

// EnsureBaseUser returns the workspace's person with b's e-mail or phone,
// inserting b when there is none. It never fails on a concurrent insert of
// the same person (which would abort a PostgreSQL transaction).
func (q Queries) EnsureBaseUser(ctx context.Context, b BaseUser) (BaseUser, error) {
	// A new person (the usual case, at sign-up) costs one statement: the
	// unique contacts mean no other row can match b once it is inserted.
	var id string
	err := q.w.queryRow(ctx, `INSERT INTO base_users (id, workspace_id, email, phone, created_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT DO NOTHING RETURNING id`, b.ID, b.WorkspaceID, nullString(b.Email), nullString(b.Phone), ts(b.CreatedAt)).Scan(&id)
	switch {
	case err == nil:
		b.CreatedAt = b.CreatedAt.UTC()
		return b, nil
	case !errors.Is(err, ErrNotFound):
		return BaseUser{}, err
	}
	return q.FindBaseUser(ctx, b.WorkspaceID, b.Email, b.Phone)
}

// SetBaseUserContact fills in an e-mail or phone the person did not have yet.
func (q Queries) SetBaseUserContact(ctx context.Context, id, email, phone string) error {
	_, err := q.w.exec(ctx, `UPDATE base_users SET email = COALESCE(email, $2), phone = COALESCE(phone, $3) WHERE id = $1`,
		id, nullString(email), nullString(phone))
	return err
}

// AppUser is a user of one app.
type AppUser struct {
	ID              string
	AppID           string
	UserID          string // the base user
	Status          string
	Email           string
	Phone           string
	EmailVerified   bool
	PhoneVerified   bool
	WebauthnEnabled bool
	// WebauthnTypes are the attachments of the user's passkeys ("platform",
	// "cross-platform"), kept with WebauthnEnabled by the passkey statements.
	WebauthnTypes []string
	Meta          []byte // JSON object
	CreatedAt     time.Time
	UpdatedAt     time.Time
	LastUsedAt    *time.Time
}

// App-user statuses.
const (
	StatusActive   = "active"
	StatusPending  = "pending"
	StatusInactive = "inactive"
	StatusImported = "imported"
)

const appUserColumns = `id, app_id, user_id, status, email, phone, email_verified, phone_verified, webauthn_enabled,
	user_meta, created_at, updated_at, last_used_at, webauthn_types`

func scanAppUser(r row) (AppUser, error) {
	return scanAppUserAfter(r)
}

// scanAppUserAfter scans a row of first's columns then appUserColumns.
func scanAppUserAfter(r row, first ...any) (AppUser, error) {
	var u AppUser
	var e, p *string
	var types string
	err := r.Scan(append(first, &u.ID, &u.AppID, &u.UserID, &u.Status, &e, &p, &u.EmailVerified, &u.PhoneVerified,
		&u.WebauthnEnabled, &u.Meta, &u.CreatedAt, &u.UpdatedAt, &u.LastUsedAt, &types)...)
	u.Email, u.Phone, u.WebauthnTypes = deref(e), deref(p), splitTypes(types)
	u.CreatedAt, u.UpdatedAt, u.LastUsedAt = u.CreatedAt.UTC(), u.UpdatedAt.UTC(), utcPtr(u.LastUsedAt)
	return u, err
}

// prefixColumns qualifies each of a list of columns with prefix ("u.").
func prefixColumns(prefix, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}

// CreateAppUser inserts u. The same e-mail, phone or person twice in an app is ErrConflict.
func (q Queries) CreateAppUser(ctx context.Context, u AppUser) error {
	_, err := q.w.exec(ctx, `INSERT INTO app_users (`+appUserColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
		u.ID, u.AppID, u.UserID, u.Status, nullString(u.Email), nullString(u.Phone), u.EmailVerified, u.PhoneVerified,
		u.WebauthnEnabled, string(jsonOr(u.Meta, "{}")), ts(u.CreatedAt), ts(u.UpdatedAt), nullTime(u.LastUsedAt),
		strings.Join(u.WebauthnTypes, ","))
	if err != nil {
		return err
	}
	return q.writeNames(ctx, u.AppID, u.ID, u.Meta, false)
}

// GetAppUser returns an app's user by id or ErrNotFound.
func (q Queries) GetAppUser(ctx context.Context, appID, id string) (AppUser, error) {
	return scanAppUser(q.r.queryRow(ctx, `SELECT `+appUserColumns+` FROM app_users WHERE id = $2 AND app_id`+q.d.unindexed+` = $1`, appID, id))
}

// LockAppUser reads an app's user and, on PostgreSQL, locks its row until
// the transaction ends (SQLite's writer holds the database): changes that
// must see the user's other ways in apply one after the other.
func (q Queries) LockAppUser(ctx context.Context, appID, id string) (AppUser, error) {
	return scanAppUser(q.w.queryRow(ctx, `SELECT `+appUserColumns+` FROM app_users WHERE id = $2 AND app_id`+q.d.unindexed+` = $1`+q.d.forUpdate, appID, id))
}

// FindAppUser returns an app's user by normalised e-mail or phone (whichever is set).
func (q Queries) FindAppUser(ctx context.Context, appID, email, phone string) (AppUser, error) {
	if email != "" {
		return scanAppUser(q.r.queryRow(ctx, `SELECT `+appUserColumns+` FROM app_users WHERE email = $2 AND app_id`+q.d.unindexed+` = $1`, appID, email))
	}
	return scanAppUser(q.r.queryRow(ctx, `SELECT `+appUserColumns+` FROM app_users WHERE phone = $2 AND app_id`+q.d.unindexed+` = $1`, appID, phone))
}

// FindAppUserOrPerson is FindAppUser that also answers, in the same
// statement, the workspace's person with that contact (FindBaseUser): a
// sign-in's one read before its transaction, so that signing a new address
// up knows whether to make a person too (person "" when there is none).
// ErrNotFound when the app has no such user, person set all the same.
func (q Queries) FindAppUserOrPerson(ctx context.Context, appID, workspaceID, email, phone string) (u AppUser, person string, err error) {
	column, value := "email", email
	if email == "" {
		column, value = "phone", phone
	}
	var (
		p, id, uApp, uPerson, status, e, ph, types *string
		emailV, phoneV, webauthn                   *bool
		meta                                       []byte
		created, updated, lastUsed                 *time.Time
	)
	err = q.r.queryRow(ctx, `SELECT (SELECT id FROM base_users WHERE `+column+` = $2 AND workspace_id`+q.d.unindexed+` = $3 ORDER BY created_at LIMIT 1), `+
		prefixColumns("u.", appUserColumns)+`
		FROM (SELECT 1 AS one) AS k LEFT JOIN app_users u ON u.`+column+` = $2 AND u.app_id`+q.d.unindexed+` = $1`, appID, value, workspaceID).
		Scan(&p, &id, &uApp, &uPerson, &status, &e, &ph, &emailV, &phoneV, &webauthn, &meta, &created, &updated, &lastUsed, &types)
	if err != nil {
		return AppUser{}, "", err
	}
	if id == nil {
		return AppUser{}, deref(p), ErrNotFound
	}
	u = AppUser{ID: *id, AppID: deref(uApp), UserID: deref(uPerson), Status: deref(status), Email: deref(e), Phone: deref(ph),
		EmailVerified: *emailV, PhoneVerified: *phoneV, WebauthnEnabled: *webauthn, WebauthnTypes: splitTypes(deref(types)),
		Meta: meta, CreatedAt: created.UTC(), UpdatedAt: updated.UTC(), LastUsedAt: utcPtr(lastUsed)}
	return u, u.UserID, nil
}

// UserFilter narrows ListAppUsers; zero fields do not filter.
type UserFilter struct {
	ID    string
	Email string // substring, case-insensitive
	Phone string // substring
	// EmailPrefix and PhonePrefix match stored values that start with them,
	// byte for byte (stored e-mail addresses are lower-case, phone numbers
	// E.164): a range scan on an index, unlike the substrings above. They
	// must be valid UTF-8.
	EmailPrefix string
	PhonePrefix string
	// Name matches users each of whose words starts a word of their names
	// (the user_meta keys that contain "name"; names.go), any case.
	Name string
	// nameBroad: Name's words are common (ListAppUsers decides), so a page
	// is found faster in order than from the matches.
	nameBroad bool
	// CountUpTo, when above 0, stops counting the total past it (the total
	// is then CountUpTo+1): a search that matches much of a large app
	// need not read every match to say "more than".
	CountUpTo     int
	Status        string
	CreatedBefore *time.Time
	// After lists only the users after this one in the list's order
	// (newest first): keyset pages, which cost the same however deep. It
	// narrows the page, not the total.
	After *UserCursor
	// Sort orders the list: "" newest first, SortLastSignIn most recent
	// sign-in first.
	Sort string
}

// SortLastSignIn lists users by their last sign-in, most recent first,
// then those who never signed in, newest first.
const SortLastSignIn = "last_sign_in"

// UserCursor is a user's place in the list: its creation time, last
// sign-in (for SortLastSignIn; nil if none) and id.
type UserCursor struct {
	CreatedAt  time.Time
	LastUsedAt *time.Time
	ID         string
}

// userWhere is the condition ListAppUsers selects by, with its arguments.
func (q Queries) userWhere(appID string, f UserFilter) (string, []any) {
	where := []string{"app_id = $1"}
	args := []any{appID}
	// arg adds an argument and returns its placeholder.
	arg := func(v any) string {
		args = append(args, v)
		return "$" + itoa(len(args))
	}
	add := func(cond string, v any) { where = append(where, strings.ReplaceAll(cond, "?", arg(v))) }
	if f.ID != "" {
		add("id = ?", f.ID)
	}
	if f.Email != "" {
		// ASCII case only, on both engines: PostgreSQL's ILIKE also folded
		// look-alikes such as the Kelvin sign onto k, which SQLite did not.
		add("LOWER(email) LIKE ?", "%"+escapeLike(asciiLower(f.Email))+"%")
		where[len(where)-1] += ` ESCAPE '\'`
	}
	if f.Phone != "" {
		add("phone LIKE ?", "%"+escapeLike(f.Phone)+"%")
		where[len(where)-1] += ` ESCAPE '\'`
	}
	// A prefix is the range [prefix, prefixEnd): no LIKE, so no wildcard
	// to escape, and an index serves it whatever the database's collation.
	for _, p := range []struct{ col, prefix string }{{"email", f.EmailPrefix}, {"phone", f.PhonePrefix}} {
		if p.prefix == "" {
			continue
		}
		col := p.col + q.d.byteOrder
		add(col+" >= ?", p.prefix)
		if end, ok := prefixEnd(p.prefix); ok {
			add(col+" < ?", end)
		}
	}
	// Every word of a name search starts a word of the user's names: each
	// a range of app_user_names (names.go), their intersection the few
	// users to read by id. app_id is then compared as an expression, which
	// no index offers: otherwise both engines may walk the app's users in
	// the page's order (app_users_app_created) testing each, as if
	// matches were many (100 ms at 100 000 users).
	if words := NameQuery(f.Name); len(words) > 0 && f.nameBroad {
		// Many matches: walk the app's users in the page's order, testing
		// each against its own few name rows, until the page is full.
		for _, w := range words {
			c := `EXISTS (SELECT 1 FROM app_user_names n WHERE n.app_user_id = app_users.id AND n.word` + q.d.byteOrder + ` >= ` + arg(w)
			if end, ok := prefixEnd(w); ok {
				c += ` AND n.word` + q.d.byteOrder + ` < ` + arg(end)
			}
			where = append(where, c+`)`)
		}
	} else if len(words) > 0 {
		var sets []string
		for _, w := range words {
			c := `SELECT app_user_id FROM app_user_names WHERE app_id = $1 AND word` + q.d.byteOrder + ` >= ` + arg(w)
			if end, ok := prefixEnd(w); ok {
				c += ` AND word` + q.d.byteOrder + ` < ` + arg(end)
			}
			sets = append(sets, c)
		}
		where[0] = "app_id || '' = $1"
		where = append(where, `id IN (`+strings.Join(sets, ` INTERSECT `)+`)`)
	}
	if f.Status != "" {
		add("status = ?", f.Status)
	}
	if f.CreatedBefore != nil {
		add("created_at < ?", ts(*f.CreatedBefore))
	}
	return strings.Join(where, " AND "), args
}

// userStatements are ListAppUsers's statements: the count, which takes all
// of args but the last two, and the page, which takes all of them.
func (q Queries) userStatements(appID string, f UserFilter, limit, offset int) (count, page string, countArgs, pageArgs []any) {
	// An uncapped count reads every match either way, fastest from the
	// matches; a capped one stops sooner walking the users in order.
	counted := f
	counted.nameBroad = f.nameBroad && f.CountUpTo > 0
	cond, args := q.userWhere(appID, counted)
	count, countArgs = `SELECT COUNT(*) FROM app_users WHERE `+cond, args
	if f.CountUpTo > 0 {
		count = `SELECT COUNT(*) FROM (SELECT 1 FROM app_users WHERE ` + cond + ` LIMIT ` + itoa(f.CountUpTo+1) + `) AS t`
	}
	cond, args = q.userWhere(appID, f)
	pageArgs = append([]any(nil), args...)
	if f.After != nil {
		// A row value: an index on (app_id, created_at, id) serves it on both engines.
		pageArgs = append(pageArgs, ts(f.After.CreatedAt), f.After.ID)
		cond += ` AND (created_at, id) < ($` + itoa(len(pageArgs)-1) + `, $` + itoa(len(pageArgs)) + `)`
	}
	pageArgs = append(pageArgs, limit, offset)
	return count, `SELECT ` + appUserColumns + ` FROM app_users WHERE ` + cond +
		` ORDER BY created_at DESC, id DESC LIMIT $` + itoa(len(pageArgs)-1) + ` OFFSET $` + itoa(len(pageArgs)), countArgs, pageArgs
}

// ListAppUsers returns one page of an app's users, in f's order (newest
// first unless f.Sort says otherwise), and the total that match.
func (q Queries) ListAppUsers(ctx context.Context, appID string, f UserFilter, limit, offset int) ([]AppUser, int, error) {
	if words := NameQuery(f.Name); len(words) > 0 {
		broad, err := q.commonNames(ctx, appID, words)
		if err != nil {
			return nil, 0, err
		}
		f.nameBroad = broad
	}
	count, page, countArgs, pageArgs := q.userStatements(appID, f, limit, offset)
	var users []AppUser
	var err error
	if f.Sort == SortLastSignIn {
		users, err = q.usersByLastSignIn(ctx, appID, f, limit, offset)
	} else {
		var rs rows
		if rs, err = q.r.query(ctx, page, pageArgs...); err == nil {
			users, err = collect(rs, scanAppUser)
		}
	}
	if err != nil {
		return nil, 0, err
	}
	// A first page that is not full holds every match: no count needed
	// (a search that reads every user, such as a name, reads them once).
	if f.After == nil && offset == 0 && len(users) < limit {
		return users, len(users), nil
	}
	var total int
	if err := q.r.queryRow(ctx, count, countArgs...).Scan(&total); err != nil {
		return nil, 0, err
	}
	return users, total, nil
}

// usersByLastSignIn is a page of SortLastSignIn in up to two statements:
// the users who signed in, most recent first, then, when the page is not
// full, those who never did (last_used_at NULL), newest first. On SQLite
// each is a range on app_users_app_last_used (one statement with NULLS
// LAST would need an OR in the cursor, which it does not read as one
// range). PostgreSQL has no such index (00030: it kept every sign-in's
// write of last_used_at from being a heap-only update), so each sorts the
// app's users: tens of milliseconds at 100 000, for a console page.
func (q Queries) usersByLastSignIn(ctx context.Context, appID string, f UserFilter, limit, offset int) ([]AppUser, error) {
	cond, args := q.userWhere(appID, f)
	run := func(cond string, args []any, order string, limit, offset int) ([]AppUser, error) {
		args = append(append([]any(nil), args...), limit, offset)
		rs, err := q.r.query(ctx, `SELECT `+appUserColumns+` FROM app_users WHERE `+cond+` ORDER BY `+order+
			` LIMIT $`+itoa(len(args)-1)+` OFFSET $`+itoa(len(args)), args...)
		if err != nil {
			return nil, err
		}
		return collect(rs, scanAppUser)
	}
	var users []AppUser
	// Signed in: skipped when the cursor is already among the others.
	if f.After == nil || f.After.LastUsedAt != nil {
		c, a := cond+" AND last_used_at IS NOT NULL", args
		if f.After != nil {
			a = append(append([]any(nil), a...), ts(*f.After.LastUsedAt), f.After.ID)
			c += ` AND (last_used_at, id) < ($` + itoa(len(a)-1) + `, $` + itoa(len(a)) + `)`
		}
		var err error
		if users, err = run(c, a, "last_used_at DESC, id DESC", limit, offset); err != nil {
			return nil, err
		}
		if len(users) == limit {
			return users, nil
		}
		if offset > 0 && len(users) == 0 {
			// The offset may reach past the signed-in users: skip only
			// what is left of it among the others.
			var signedIn int
			if err := q.r.queryRow(ctx, `SELECT COUNT(*) FROM app_users WHERE `+c, a...).Scan(&signedIn); err != nil {
				return nil, err
			}
			offset -= signedIn
		} else {
			offset = 0
		}
	}
	c, a := cond+" AND last_used_at IS NULL", args
	if f.After != nil && f.After.LastUsedAt == nil {
		a = append(append([]any(nil), a...), f.After.ID)
		c += ` AND id < $` + itoa(len(a))
	}
	rest, err := run(c, a, "id DESC", limit-len(users), max(offset, 0))
	if err != nil {
		return nil, err
	}
	return append(users, rest...), nil
}

// prefixEnd is the least string above every string that starts with prefix,
// in byte order, which for UTF-8 is code point order: prefix with its last
// rune replaced by the next one (surrogates, which valid UTF-8 never holds,
// skipped). A last rune of U+10FFFF has no next one: it is dropped and the
// rune before it moves up instead. ok is false when there is no such string
// (a prefix of only U+10FFFF), so the range has no upper end.
func prefixEnd(prefix string) (end string, ok bool) {
	rs := []rune(prefix)
	for i := len(rs) - 1; i >= 0; i-- {
		switch r := rs[i]; {
		case r == utf8.MaxRune:
			continue
		case r == 0xD7FF: // the next rune would be the first surrogate
			rs[i] = 0xE000
		default:
			rs[i] = r + 1
		}
		return string(rs[:i+1]), true
	}
	return "", false
}

// UpdateAppUser writes the mutable fields of u and returns the stored row.
// webauthn_enabled and webauthn_types are not among them: they follow the
// user's passkeys (SyncPasskeyState), so a profile change read before a
// passkey was added cannot undo it.
// The user's name rows (names.go) follow its user_meta.
func (q Queries) UpdateAppUser(ctx context.Context, u AppUser) (AppUser, error) {
	out, err := scanAppUser(q.w.queryRow(ctx, `UPDATE app_users SET status = $3, email = $4, phone = $5, email_verified = $6,
		phone_verified = $7, user_meta = $8, updated_at = $9
		WHERE id = $2 AND app_id`+q.d.unindexed+` = $1 RETURNING `+appUserColumns,
		u.AppID, u.ID, u.Status, nullString(u.Email), nullString(u.Phone), u.EmailVerified, u.PhoneVerified,
		string(jsonOr(u.Meta, "{}")), ts(u.UpdatedAt)))
	if err != nil {
		return out, err
	}
	return out, q.writeNames(ctx, out.AppID, out.ID, out.Meta, true)
}

// SetAppUserStatus changes a user's status and returns the stored row.
func (q Queries) SetAppUserStatus(ctx context.Context, appID, id, status string, now time.Time) (AppUser, error) {
	return scanAppUser(q.w.queryRow(ctx, `UPDATE app_users SET status = $3, updated_at = $4
		WHERE id = $2 AND app_id`+q.d.unindexed+` = $1 RETURNING `+appUserColumns, appID, id, status, ts(now)))
}

// DeleteAppUser removes an app's user.
func (q Queries) DeleteAppUser(ctx context.Context, appID, id string) error {
	n, err := q.w.exec(ctx, `DELETE FROM app_users WHERE id = $2 AND app_id`+q.d.unindexed+` = $1`, appID, id)
	return affected(n, err)
}

// Invitation is a pending invitation; the link's token is kept only as a keyed hash.
type Invitation struct {
	ID        string
	AppID     string
	AppUserID string
	TokenHash string
	ExpiresAt time.Time
	UsedAt    *time.Time
	CreatedAt time.Time
	// ShortHash and ShortTokenSealed are set for an invitation sent by SMS:
	// the keyed hash of its short link's code, and its token sealed.
	ShortHash        string
	ShortTokenSealed string
}

// CreateInvitation inserts inv.
func (q Queries) CreateInvitation(ctx context.Context, inv Invitation) error {
	_, err := q.w.exec(ctx, `INSERT INTO invitations (id, app_id, app_user_id, token_hash, expires_at, used_at, created_at,
		short_hash, short_token_sealed) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, inv.ID, inv.AppID, inv.AppUserID,
		inv.TokenHash, ts(inv.ExpiresAt), nullTime(inv.UsedAt), ts(inv.CreatedAt), nullString(inv.ShortHash), inv.ShortTokenSealed)
	return err
}

// GetInvitationByShortLink finds an invitation by the keyed hash of its
// short link's code, with the sealed token the link stands for.
func (q Queries) GetInvitationByShortLink(ctx context.Context, hash string) (Invitation, error) {
	var inv Invitation
	err := q.r.queryRow(ctx, `SELECT id, app_id, app_user_id, token_hash, expires_at, used_at, created_at, short_token_sealed
		FROM invitations WHERE short_hash = $1`, hash).Scan(&inv.ID, &inv.AppID, &inv.AppUserID, &inv.TokenHash,
		&inv.ExpiresAt, &inv.UsedAt, &inv.CreatedAt, &inv.ShortTokenSealed)
	inv.ExpiresAt, inv.UsedAt, inv.CreatedAt, inv.ShortHash = inv.ExpiresAt.UTC(), utcPtr(inv.UsedAt), inv.CreatedAt.UTC(), hash
	return inv, err
}

// DeleteOpenInvitations removes a user's unspent invitations, so that no
// link sent before works any more.
func (q Queries) DeleteOpenInvitations(ctx context.Context, appUserID string) error {
	_, err := q.w.exec(ctx, `DELETE FROM invitations WHERE app_user_id = $1 AND used_at IS NULL`, appUserID)
	return err
}

// GetInvitationByHash finds an invitation by its token's keyed hash.
func (q Queries) GetInvitationByHash(ctx context.Context, hash string) (Invitation, error) {
	var inv Invitation
	err := q.r.queryRow(ctx, `SELECT id, app_id, app_user_id, token_hash, expires_at, used_at, created_at
		FROM invitations WHERE token_hash = $1`, hash).Scan(&inv.ID, &inv.AppID, &inv.AppUserID, &inv.TokenHash,
		&inv.ExpiresAt, &inv.UsedAt, &inv.CreatedAt)
	inv.ExpiresAt, inv.UsedAt, inv.CreatedAt = inv.ExpiresAt.UTC(), utcPtr(inv.UsedAt), inv.CreatedAt.UTC()
	return inv, err
}

// asciiLower folds A-Z only (stored e-mail addresses are lower-case ASCII).
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

func itoa(n int) string {
	const digits = "0123456789"
	if n < 10 {
		return digits[n : n+1]
	}
	return itoa(n/10) + digits[n%10:n%10+1]
}
