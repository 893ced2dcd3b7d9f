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

// GetPasskeyByCredentialID finds an app's passkey by its credential id.
func (q Queries) GetPasskeyByCredentialID(ctx context.Context, appID, credentialID string) (Passkey, error) {
	return scanPasskey(q.r.queryRow(ctx, `SELECT `+passkeyColumns+` FROM passkeys WHERE app_id = $1 AND credential_id = $2`,
		appID, credentialID))
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
		WHERE app_id = $1 AND id = $2 RETURNING `+appUserColumns, appID, appUserID, len(types) > 0,
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

// GetAppUserByWebauthnHandle finds an app's user by WebAuthn user handle.
func (q Queries) GetAppUserByWebauthnHandle(ctx context.Context, appID string, h []byte) (AppUser, error) {
	return scanAppUser(q.r.queryRow(ctx, `SELECT `+appUserColumns+` FROM app_users WHERE app_id = $1 AND webauthn_handle = $2`,
		appID, h))
}

// PasskeyCeremony is a WebAuthn ceremony between its options and its answer.
type PasskeyCeremony struct {
	ID            string
	AppID         string
	AppUserID     string // "" for a sign-in with no identifier (discoverable)
	Kind          string
	ChallengeHash string
	Session       []byte // the verifier's session data, JSON
	CreatedAt     time.Time
	ExpiresAt     time.Time
}

// Ceremony kinds.
const (
	CeremonyRegister = "register"
	CeremonyLogin    = "login"
)

// CreatePasskeyCeremony inserts c.
func (q Queries) CreatePasskeyCeremony(ctx context.Context, c PasskeyCeremony) error {
	_, err := q.w.exec(ctx, `INSERT INTO passkey_ceremonies (id, app_id, app_user_id, kind, challenge_hash, session,
		created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, c.ID, c.AppID, nullString(c.AppUserID), c.Kind,
		c.ChallengeHash, string(c.Session), ts(c.CreatedAt), ts(c.ExpiresAt))
	return err
}

// TakePasskeyCeremony deletes and returns the ceremony of an app with this
// challenge hash: of two requests answering the same challenge, one gets it
// and the other ErrNotFound. Expiry is the caller's to check.
func (q Queries) TakePasskeyCeremony(ctx context.Context, appID, challengeHash string) (PasskeyCeremony, error) {
	var c PasskeyCeremony
	var user *string
	err := q.w.queryRow(ctx, `DELETE FROM passkey_ceremonies WHERE app_id = $1 AND challenge_hash = $2
		RETURNING id, app_id, app_user_id, kind, challenge_hash, session, created_at, expires_at`, appID, challengeHash).
		Scan(&c.ID, &c.AppID, &user, &c.Kind, &c.ChallengeHash, &c.Session, &c.CreatedAt, &c.ExpiresAt)
	c.AppUserID, c.CreatedAt, c.ExpiresAt = deref(user), c.CreatedAt.UTC(), c.ExpiresAt.UTC()
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
	_, err := q.w.exec(ctx, `UPDATE app_users SET last_used_at = $3 WHERE app_id = $1 AND id = $2`, appID, appUserID, ts(now))
	return err
}
