package store

import (
	"context"
	"slices"
	"strings"
	"time"
)

// Passkey is a user's WebAuthn credential.
type Passkey struct {
	ID           string
	AppID        string
	AppUserID    string
	CredentialID string // base64url without padding, as browsers name it
	// Credential is the verifier's record (public key, flags, counter,
	// AAGUID) as JSON; only the passkey package reads it.
	Credential              []byte
	Name                    string
	AAGUID                  string
	AttestationFormat       string
	AuthenticatorAttachment string
	Transports              []string
	BackupEligible          bool
	BackedUp                bool
	SignCount               int64
	// SuspendedAt is set when the passkey's signature counter went
	// backwards (a cloned authenticator); it no longer signs anyone in.
	SuspendedAt *time.Time
	UserAgent   string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	LastUsedAt  *time.Time
	LastUsedIP  string
}

const passkeyColumns = `id, app_id, app_user_id, credential_id, credential, name, aaguid, attestation_format,
	authenticator_attachment, transports, backup_eligible, backed_up, sign_count, suspended_at, user_agent,
	created_at, updated_at, last_used_at, last_used_ip`

func scanPasskey(r row) (Passkey, error) {
	var p Passkey
	var transports []byte
	err := r.Scan(&p.ID, &p.AppID, &p.AppUserID, &p.CredentialID, &p.Credential, &p.Name, &p.AAGUID,
		&p.AttestationFormat, &p.AuthenticatorAttachment, &transports, &p.BackupEligible, &p.BackedUp, &p.SignCount,
		&p.SuspendedAt, &p.UserAgent, &p.CreatedAt, &p.UpdatedAt, &p.LastUsedAt, &p.LastUsedIP)
	p.Transports = parseStrings(transports)
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	p.SuspendedAt, p.LastUsedAt = utcPtr(p.SuspendedAt), utcPtr(p.LastUsedAt)
	return p, err
}

// CreatePasskey inserts p. A credential id stored before (for any user of
// any app) is ErrConflict.
func (q Queries) CreatePasskey(ctx context.Context, p Passkey) error {
	_, err := q.w.exec(ctx, `INSERT INTO passkeys (`+passkeyColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
		$11, $12, $13, $14, $15, $16, $17, $18, $19)`,
		p.ID, p.AppID, p.AppUserID, p.CredentialID, string(p.Credential), p.Name, p.AAGUID, p.AttestationFormat,
		p.AuthenticatorAttachment, jsonStrings(p.Transports), p.BackupEligible, p.BackedUp, p.SignCount,
		nullTime(p.SuspendedAt), p.UserAgent, ts(p.CreatedAt), ts(p.UpdatedAt), nullTime(p.LastUsedAt), p.LastUsedIP)
	return err
}

// ListPasskeys returns a user's passkeys, oldest first.
func (q Queries) ListPasskeys(ctx context.Context, appID, appUserID string) ([]Passkey, error) {
	rs, err := q.r.query(ctx, `SELECT `+passkeyColumns+` FROM passkeys WHERE app_id = $1 AND app_user_id = $2
		ORDER BY created_at, id`, appID, appUserID)
	if err != nil {
		return nil, err
	}
	return collect(rs, scanPasskey)
}

// RecordPasskeyUse stores a passkey's state after a good assertion: its new
// verifier record, counter and backup state. It applies only if the counter
// is still the one the assertion was checked against, so of two assertions
// racing with the same counter one loses (false).
func (q Queries) RecordPasskeyUse(ctx context.Context, p Passkey, oldCount int64) (bool, error) {
	n, err := q.w.exec(ctx, `UPDATE passkeys SET credential = $2, sign_count = $3, backed_up = $4, last_used_at = $5,
		last_used_ip = $6, updated_at = $5 WHERE id = $1 AND sign_count = $7 AND suspended_at IS NULL`,
		p.ID, string(p.Credential), p.SignCount, p.BackedUp, nullTime(p.LastUsedAt), p.LastUsedIP, oldCount)
	return n == 1, err
}

// SuspendPasskey marks a passkey suspect (its counter went backwards).
func (q Queries) SuspendPasskey(ctx context.Context, id string, now time.Time) error {
	_, err := q.w.exec(ctx, `UPDATE passkeys SET suspended_at = COALESCE(suspended_at, $2), updated_at = $2 WHERE id = $1`,
		id, ts(now))
	return err
}

// RenamePasskey names one of a user's passkeys; idOrCredential is its id or
// its credential id.
func (q Queries) RenamePasskey(ctx context.Context, appID, appUserID, idOrCredential, name string, now time.Time) (Passkey, error) {
	return scanPasskey(q.w.queryRow(ctx, `UPDATE passkeys SET name = $4, updated_at = $5
		WHERE app_id = $1 AND app_user_id = $2 AND (id = $3 OR credential_id = $3) RETURNING `+passkeyColumns,
		appID, appUserID, idOrCredential, name, ts(now)))
}

// DeletePasskey removes one of a user's passkeys (by id or credential id)
// and returns it.
func (q Queries) DeletePasskey(ctx context.Context, appID, appUserID, idOrCredential string) (Passkey, error) {
	return scanPasskey(q.w.queryRow(ctx, `DELETE FROM passkeys
		WHERE app_id = $1 AND app_user_id = $2 AND (id = $3 OR credential_id = $3) RETURNING `+passkeyColumns,
		appID, appUserID, idOrCredential))
}

// SyncPasskeyState sets a user's webauthn_enabled and webauthn_types from
// the passkeys the user has now (suspended ones do not count) and returns
// the user. Run it in the transaction that changed the passkeys.
func (q Queries) SyncPasskeyState(ctx context.Context, appID, appUserID string, now time.Time) (AppUser, error) {
	list, err := q.ListPasskeys(ctx, appID, appUserID)
	if err != nil {
		return AppUser{}, err
	}
	var types []string
	for _, p := range list {
		if p.SuspendedAt == nil && !slices.Contains(types, p.AuthenticatorAttachment) {
			types = append(types, p.AuthenticatorAttachment)
		}
	}
	slices.Sort(types)
	return scanAppUser(q.w.queryRow(ctx, `UPDATE app_users SET webauthn_enabled = $3, webauthn_types = $4, updated_at = $5
		WHERE id = $2 AND app_id`+q.d.unindexed+` = $1 RETURNING `+appUserColumns, appID, appUserID, len(types) > 0,
		strings.Join(types, ","), ts(now)))
}

// WebauthnHandle returns a user's WebAuthn user handle, nil before the first.
func (q Queries) WebauthnHandle(ctx context.Context, appUserID string) ([]byte, error) {
	var h []byte
	err := q.r.queryRow(ctx, `SELECT webauthn_handle FROM app_users WHERE id = $1`, appUserID).Scan(&h)
	return h, err
}

// EnsureWebauthnHandle gives a user the handle h unless the user has one,
// and returns the handle the user has.
func (q Queries) EnsureWebauthnHandle(ctx context.Context, appUserID string, h []byte) ([]byte, error) {
	if _, err := q.w.exec(ctx, `UPDATE app_users SET webauthn_handle = $2 WHERE id = $1 AND webauthn_handle IS NULL`,
		appUserID, h); err != nil {
		return nil, err
	}
	var out []byte
	err := q.w.queryRow(ctx, `SELECT webauthn_handle FROM app_users WHERE id = $1`, appUserID).Scan(&out)
	return out, err
}

// PasskeyCeremony is a WebAuthn ceremony between its options and its answer.
type PasskeyCeremony struct {
	ID            string
	AppID         string
	AppUserID     string // "" for a sign-in with no identifier (discoverable) or a stand-in's
	Kind          string
	ChallengeHash string
	Session       []byte // the verifier's session data, JSON
	// Subject is whom the ceremony is for (a user, or an identifier's keyed
	// hash): an app holds at most one ceremony per kind and subject, so a
	// new one replaces the earlier. "" for ceremonies that replace nothing.
	Subject string
	// ClientBinding, when set, is the only client that may finish the
	// ceremony (TakePasskeyCeremony's binding must equal it).
	ClientBinding string
	CreatedAt     time.Time
	ExpiresAt     time.Time
}

// Ceremony kinds.
const (
	CeremonyRegister = "register" // adding a passkey to a signed-in user's account
	CeremonySignup   = "signup"   // the first passkey of a user a backend created
	CeremonyLogin    = "login"
	// CeremonyChallenge: a passkey answer to a challenge (second factor or
	// step-up); only POST /challenges/{token}/verify finishes it.
	CeremonyChallenge = "challenge"
)

// CreatePasskeyCeremony inserts c. When c has a subject it replaces the
// app's ceremony of that kind and subject, in the same statement: of
// ceremonies started at once for one subject, exactly one remains, and a
// finish that has not yet taken the replaced one never will.
func (q Queries) CreatePasskeyCeremony(ctx context.Context, c PasskeyCeremony) error {
	_, err := q.w.exec(ctx, `INSERT INTO passkey_ceremonies (id, app_id, app_user_id, kind, challenge_hash, session,
		subject, client_binding, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
		ON CONFLICT (app_id, kind, subject) DO UPDATE SET id = excluded.id, app_user_id = excluded.app_user_id,
		challenge_hash = excluded.challenge_hash, session = excluded.session, client_binding = excluded.client_binding,
		created_at = excluded.created_at, expires_at = excluded.expires_at`,
		c.ID, c.AppID, nullString(c.AppUserID), c.Kind, c.ChallengeHash, string(c.Session), nullString(c.Subject),
		nullString(c.ClientBinding), ts(c.CreatedAt), ts(c.ExpiresAt))
	return err
}

// TakePasskeyCeremony deletes and returns the ceremony of an app with this
// challenge hash, unless it is bound to a client other than binding: of two
// requests answering the same challenge, one gets it and the other
// ErrNotFound, and another client leaves a bound ceremony as it was. Expiry
// is the caller's to check.
func (q Queries) TakePasskeyCeremony(ctx context.Context, appID, challengeHash, binding string) (PasskeyCeremony, error) {
	var c PasskeyCeremony
	var user, subject, bound *string
	err := q.w.queryRow(ctx, `DELETE FROM passkey_ceremonies WHERE app_id = $1 AND challenge_hash = $2
		AND (client_binding IS NULL OR client_binding = $3)
		RETURNING id, app_id, app_user_id, kind, challenge_hash, session, subject, client_binding, created_at, expires_at`,
		appID, challengeHash, binding).
		Scan(&c.ID, &c.AppID, &user, &c.Kind, &c.ChallengeHash, &c.Session, &subject, &bound, &c.CreatedAt, &c.ExpiresAt)
	c.AppUserID, c.Subject, c.ClientBinding = deref(user), deref(subject), deref(bound)
	c.CreatedAt, c.ExpiresAt = c.CreatedAt.UTC(), c.ExpiresAt.UTC()
	return c, err
}

// PrunePasskeyCeremonies deletes ceremonies that expired before t.
func (q Queries) PrunePasskeyCeremonies(ctx context.Context, t time.Time) error {
	_, err := q.w.exec(ctx, `DELETE FROM passkey_ceremonies WHERE expires_at < $1`, ts(t))
	return err
}

// splitTypes reads the comma-separated webauthn_types column.
func splitTypes(s string) []string {
	if s == "" {
		return []string{}
	}
	return strings.Split(s, ",")
}

// TouchAppUser records that a user signed in (last_used_at).
func (q Queries) TouchAppUser(ctx context.Context, appID, appUserID string, now time.Time) error {
	_, err := q.w.exec(ctx, `UPDATE app_users SET last_used_at = $3 WHERE id = $2 AND app_id`+q.d.unindexed+` = $1`, appID, appUserID, ts(now))
	return err
}

// PasskeyHolder is what sign-in options need of the user an identifier
// names: the user (ID "" when nobody has the identifier), the user handle
// and the passkeys that may sign in.
type PasskeyHolder struct {
	UserID   string
	Status   string
	Handle   []byte
	Passkeys []Passkey // not suspended; only CredentialID and Transports are read
}

// PasskeyHolderByContact reads, in one statement, the user of an app with
// this e-mail (or, when email is "", phone) and their passkeys that are not
// suspended. An unknown contact is a zero PasskeyHolder, not an error: the
// same statement runs either way.
func (q Queries) PasskeyHolderByContact(ctx context.Context, appID, email, phone string) (PasskeyHolder, error) {
	col, val := "email", email
	if email == "" {
		col, val = "phone", phone
	}
	rs, err := q.r.query(ctx, `SELECT u.id, u.status, u.webauthn_handle, p.credential_id, p.transports
		FROM app_users u LEFT JOIN passkeys p ON p.app_user_id = u.id AND p.suspended_at IS NULL
		WHERE u.`+col+` = $2 AND u.app_id`+q.d.unindexed+` = $1 ORDER BY p.created_at, p.id`, appID, val)
	if err != nil {
		return PasskeyHolder{}, err
	}
	defer rs.Close()
	var h PasskeyHolder
	for rs.Next() {
		var cred *string
		var transports []byte
		if err := rs.Scan(&h.UserID, &h.Status, &h.Handle, &cred, &transports); err != nil {
			return PasskeyHolder{}, err
		}
		if cred != nil {
			h.Passkeys = append(h.Passkeys, Passkey{CredentialID: *cred, Transports: parseStrings(transports)})
		}
	}
	return h, rs.Err()
}

// GetPasskeyWithOwner reads an app's passkey by credential id with its user
// and the user's handle, in one statement.
func (q Queries) GetPasskeyWithOwner(ctx context.Context, appID, credentialID string) (Passkey, AppUser, []byte, error) {
	var handle []byte
	var email, phone *string
	var types string
	var u AppUser
	var transports []byte
	var p Passkey
	err := q.r.queryRow(ctx, `SELECT p.id, p.app_id, p.app_user_id, p.credential_id, p.credential, p.name, p.aaguid,
		p.attestation_format, p.authenticator_attachment, p.transports, p.backup_eligible, p.backed_up, p.sign_count,
		p.suspended_at, p.user_agent, p.created_at, p.updated_at, p.last_used_at, p.last_used_ip, u.webauthn_handle,
		`+userColumnsU+` FROM passkeys p JOIN app_users u ON u.id = p.app_user_id
		WHERE p.app_id = $1 AND p.credential_id = $2`, appID, credentialID).Scan(append([]any{&p.ID, &p.AppID,
		&p.AppUserID, &p.CredentialID, &p.Credential, &p.Name, &p.AAGUID, &p.AttestationFormat,
		&p.AuthenticatorAttachment, &transports, &p.BackupEligible, &p.BackedUp, &p.SignCount, &p.SuspendedAt,
		&p.UserAgent, &p.CreatedAt, &p.UpdatedAt, &p.LastUsedAt, &p.LastUsedIP, &handle},
		userDest(&u, &email, &phone, &types)...)...)
	p.Transports = parseStrings(transports)
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	p.SuspendedAt, p.LastUsedAt = utcPtr(p.SuspendedAt), utcPtr(p.LastUsedAt)
	u.fill(email, phone, types)
	return p, u, handle, err
}
