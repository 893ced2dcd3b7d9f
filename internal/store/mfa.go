package store

import (
	"context"
	"errors"
	"time"
)

// jsonObject stores "" as an empty JSON object.
func jsonObject(s string) string {
	if s == "" {
		return "{}"
	}
	return s
}

// GetChallengeByToken finds a challenge by the keyed hash of its bearer
// token (the poll handle of a magic link).
func (q Queries) GetChallengeByToken(ctx context.Context, hash string) (Challenge, error) {
	return q.GetChallengeByPoll(ctx, hash)
}

// CancelChallenge closes a pending challenge as cancelled; false when it
// was no longer pending.
func (q Queries) CancelChallenge(ctx context.Context, id string) (bool, error) {
	n, err := q.w.exec(ctx, `UPDATE challenges SET status = 'cancelled' WHERE id = $1 AND status || '' = 'pending'`, id)
	return n == 1, err
}

// CancelPurpose cancels a user's pending challenges of one purpose: a new
// second-factor challenge replaces the one it switches from.
func (q Queries) CancelPurpose(ctx context.Context, appUserID, purpose string) error {
	_, err := q.w.exec(ctx, `UPDATE challenges SET status = 'cancelled'
		WHERE app_user_id = $1 AND purpose = $2 AND status || '' = 'pending'`, appUserID, purpose)
	return err
}

// ResendChallenge gives a pending challenge a new secret (the old one dies
// with the update) and a new expiry; false when it was no longer pending.
func (q Queries) ResendChallenge(ctx context.Context, id, secretHash string, expires time.Time) (bool, error) {
	n, err := q.w.exec(ctx, `UPDATE challenges SET secret_hash = $2, expires_at = $3 WHERE id = $1 AND status || '' = 'pending'`,
		id, secretHash, ts(expires))
	return n == 1, err
}

// SetChallengeData replaces a pending challenge's data (a new passkey ceremony).
func (q Queries) SetChallengeData(ctx context.Context, id, data string) error {
	n, err := q.w.exec(ctx, `UPDATE challenges SET data = $2 WHERE id = $1 AND status || '' = 'pending'`, id, jsonObject(data))
	return affected(n, err)
}

// LatestMFAChallenge returns a user's newest second-factor challenge that
// has not expired, when its sign-in may still go on: pending, or cancelled
// or superseded (replaced). Once the newest one completed or failed, the
// sign-in is over and its first factor starts no other: ErrNotFound.
func (q Queries) LatestMFAChallenge(ctx context.Context, appID, appUserID string, now time.Time) (Challenge, error) {
	ch, err := scanChallenge(q.w.queryRow(ctx, `SELECT `+challengeColumns+` FROM challenges
		WHERE app_id = $1 AND app_user_id = $2 AND purpose = 'mfa' AND expires_at > $3
		ORDER BY created_at DESC, id`+q.d.byteOrder+` DESC LIMIT 1`, appID, appUserID, ts(now)))
	if err == nil && ch.Status != ChallengePending && ch.Status != ChallengeCancelled && ch.Status != ChallengeSuperseded {
		return Challenge{}, ErrNotFound
	}
	return ch, err
}

// PendingPushChallenges lists the push challenges waiting for a user's answer, newest first.
func (q Queries) PendingPushChallenges(ctx context.Context, appID, appUserID string, now time.Time) ([]Challenge, error) {
	rs, err := q.r.query(ctx, `SELECT `+challengeColumns+` FROM challenges
		WHERE app_id = $1 AND app_user_id = $2 AND method = 'push' AND status || '' = 'pending' AND expires_at > $3
		ORDER BY created_at DESC, id DESC LIMIT 20`, appID, appUserID, ts(now))
	if err != nil {
		return nil, err
	}
	return collect(rs, scanChallenge)
}

// GetChallenge reads one challenge of an app by id.
func (q Queries) GetChallenge(ctx context.Context, appID, id string) (Challenge, error) {
	return scanChallenge(q.w.queryRow(ctx, `SELECT `+challengeColumns+` FROM challenges WHERE id = $1 AND app_id = $2`, id, appID))
}

// CountLiveSessions counts a user's live sessions, excluding one.
func (q Queries) CountLiveSessions(ctx context.Context, appID, appUserID, except string, now time.Time) (int, error) {
	var n int
	err := q.r.queryRow(ctx, `SELECT COUNT(*) FROM sessions WHERE app_id = $1 AND app_user_id = $2 AND id <> $3
		AND revoked_at IS NULL AND expires_at > $4`, appID, appUserID, except, ts(now)).Scan(&n)
	return n, err
}

// TOTPEnrollment is one authenticator app of a user.
type TOTPEnrollment struct {
	ID           string
	AppID        string
	AppUserID    string
	Name         string
	SecretSealed []byte
	Verified     bool
	LastUsedStep int64
	CreatedAt    time.Time
	VerifiedAt   *time.Time
	LastUsedAt   *time.Time
}

const totpColumns = `id, app_id, app_user_id, name, secret_sealed, verified, last_used_step, created_at, verified_at, last_used_at`

func scanTOTP(r row) (TOTPEnrollment, error) {
	var e TOTPEnrollment
	err := r.Scan(&e.ID, &e.AppID, &e.AppUserID, &e.Name, &e.SecretSealed, &e.Verified, &e.LastUsedStep, &e.CreatedAt,
		&e.VerifiedAt, &e.LastUsedAt)
	e.CreatedAt, e.VerifiedAt, e.LastUsedAt = e.CreatedAt.UTC(), utcPtr(e.VerifiedAt), utcPtr(e.LastUsedAt)
	return e, err
}

// CreateTOTP stores an enrolment, unverified.
func (q Queries) CreateTOTP(ctx context.Context, e TOTPEnrollment) error {
	_, err := q.w.exec(ctx, `INSERT INTO totp_enrollments (`+totpColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		e.ID, e.AppID, e.AppUserID, e.Name, e.SecretSealed, e.Verified, e.LastUsedStep, ts(e.CreatedAt),
		nullTime(e.VerifiedAt), nullTime(e.LastUsedAt))
	return err
}

// GetTOTP reads one enrolment of a user.
func (q Queries) GetTOTP(ctx context.Context, appUserID, id string) (TOTPEnrollment, error) {
	return scanTOTP(q.w.queryRow(ctx, `SELECT `+totpColumns+` FROM totp_enrollments WHERE id = $1 AND app_user_id = $2`, id, appUserID))
}

// ListTOTP lists a user's enrolments, oldest first.
func (q Queries) ListTOTP(ctx context.Context, appUserID string) ([]TOTPEnrollment, error) {
	rs, err := q.r.query(ctx, `SELECT `+totpColumns+` FROM totp_enrollments WHERE app_user_id = $1 ORDER BY created_at, id`, appUserID)
	if err != nil {
		return nil, err
	}
	return collect(rs, scanTOTP)
}

// UseTOTPStep records that a code of step was accepted, verifying the
// enrolment if it was not yet: only if step is above the last one accepted,
// so of two uses of one code (racing or not) exactly one wins.
func (q Queries) UseTOTPStep(ctx context.Context, id string, step int64, now time.Time) (bool, error) {
	n, err := q.w.exec(ctx, `UPDATE totp_enrollments SET last_used_step = $2, last_used_at = $3, verified = TRUE,
		verified_at = COALESCE(verified_at, $3) WHERE id = $1 AND last_used_step < $2`, id, step, ts(now))
	return n == 1, err
}

// ConfirmTOTP verifies an enrolment with a code of step, leaving that step
// usable once more (last_used_step one below it): the sign-in that follows
// may answer with the same code.
func (q Queries) ConfirmTOTP(ctx context.Context, id string, step int64, now time.Time) error {
	n, err := q.w.exec(ctx, `UPDATE totp_enrollments SET last_used_step = $2 - 1, last_used_at = $3, verified = TRUE,
		verified_at = COALESCE(verified_at, $3) WHERE id = $1 AND NOT verified AND last_used_step < $2`, id, step, ts(now))
	return affected(n, err)
}

// DeleteTOTP removes an enrolment of a user.
func (q Queries) DeleteTOTP(ctx context.Context, appUserID, id string) error {
	n, err := q.w.exec(ctx, `DELETE FROM totp_enrollments WHERE id = $1 AND app_user_id = $2`, id, appUserID)
	return affected(n, err)
}

// DeleteUserTOTP removes every enrolment of a user and returns them.
func (q Queries) DeleteUserTOTP(ctx context.Context, appUserID string) ([]TOTPEnrollment, error) {
	rs, err := q.w.query(ctx, `DELETE FROM totp_enrollments WHERE app_user_id = $1 RETURNING `+totpColumns, appUserID)
	if err != nil {
		return nil, err
	}
	return collect(rs, scanTOTP)
}

// DeleteUnverifiedTOTP removes a user's enrolments that were never confirmed.
func (q Queries) DeleteUnverifiedTOTP(ctx context.Context, appUserID string) error {
	_, err := q.w.exec(ctx, `DELETE FROM totp_enrollments WHERE app_user_id = $1 AND NOT verified`, appUserID)
	return err
}

// ReplaceBackupCodes deletes a user's backup codes and stores hashes as the new set.
func (q Queries) ReplaceBackupCodes(ctx context.Context, appID, appUserID string, ids, hashes []string, now time.Time) error {
	if _, err := q.w.exec(ctx, `DELETE FROM backup_codes WHERE app_user_id = $1`, appUserID); err != nil {
		return err
	}
	for i, h := range hashes {
		if _, err := q.w.exec(ctx, `INSERT INTO backup_codes (id, app_id, app_user_id, code_hash, created_at) VALUES ($1, $2, $3, $4, $5)`,
			ids[i], appID, appUserID, h, ts(now)); err != nil {
			return err
		}
	}
	return nil
}

// UseBackupCode spends the user's unused code with this hash; false when
// there is none (wrong, or used already).
func (q Queries) UseBackupCode(ctx context.Context, appUserID, hash string, now time.Time) (bool, error) {
	n, err := q.w.exec(ctx, `UPDATE backup_codes SET used_at = $3 WHERE app_user_id = $1 AND code_hash = $2 AND used_at IS NULL`,
		appUserID, hash, ts(now))
	return n == 1, err
}

// UnusedBackupCodes counts a user's backup codes not used yet.
func (q Queries) UnusedBackupCodes(ctx context.Context, appUserID string) (int, error) {
	var n int
	err := q.r.queryRow(ctx, `SELECT COUNT(*) FROM backup_codes WHERE app_user_id = $1 AND used_at IS NULL`, appUserID).Scan(&n)
	return n, err
}

// MFAState is what decides whether a user has a second factor.
type MFAState struct {
	VerifiedTOTP int
	BackupCodes  int // unused
	Passkeys     int // not suspended
}

// GetMFAState reads a user's second factors in one round trip.
func (q Queries) GetMFAState(ctx context.Context, appUserID string) (MFAState, error) {
	var m MFAState
	err := q.r.queryRow(ctx, `SELECT
		(SELECT COUNT(*) FROM totp_enrollments WHERE app_user_id = $1 AND verified),
		(SELECT COUNT(*) FROM backup_codes WHERE app_user_id = $1 AND used_at IS NULL),
		(SELECT COUNT(*) FROM passkeys WHERE app_user_id = $1 AND suspended_at IS NULL)`, appUserID).
		Scan(&m.VerifiedTOTP, &m.BackupCodes, &m.Passkeys)
	return m, err
}

// RecordFactorFailure counts one more wrong code of a method (totp,
// backup_code) since the user's last success with it, and returns the count.
func (q Queries) RecordFactorFailure(ctx context.Context, appUserID, method string, now time.Time) (int, error) {
	var n int
	err := q.w.queryRow(ctx, `INSERT INTO factor_failure_streaks (app_user_id, method, failures, updated_at)
		VALUES ($1, $2, 1, $3)
		ON CONFLICT (app_user_id, method) DO UPDATE SET failures = factor_failure_streaks.failures + 1, updated_at = $3
		RETURNING failures`, appUserID, method, ts(now)).Scan(&n)
	return n, err
}

// ConsumeChallenge spends a completed challenge's result once (a step-up
// that authorises one sensitive change); false when it was spent already.
func (q Queries) ConsumeChallenge(ctx context.Context, id string, now time.Time) (bool, error) {
	n, err := q.w.exec(ctx, `UPDATE challenges SET collected_at = $2 WHERE id = $1 AND status = 'completed' AND collected_at IS NULL`,
		id, ts(now))
	return n == 1, err
}

// ApprovePush completes a pending push challenge whose attempt this
// transaction took (TakeAttempt) with the right number, recording the
// session that approved it and giving the attempt back; false when it was no
// longer pending.
func (q Queries) ApprovePush(ctx context.Context, id, data string, now time.Time) (bool, error) {
	n, err := q.w.exec(ctx, `UPDATE challenges SET status = 'completed', completed_at = $2, consent = 'approved', data = $3,
		remaining_attempts = remaining_attempts + 1 WHERE id = $1 AND status || '' = 'pending'`, id, ts(now), jsonObject(data))
	return n == 1, err
}

// EndAllFactorFailures ends a user's streaks of wrong TOTP and backup codes:
// they passed a second factor or a step-up by some method.
func (q Queries) EndAllFactorFailures(ctx context.Context, appUserID string) error {
	_, err := q.w.exec(ctx, `DELETE FROM factor_failure_streaks WHERE app_user_id = $1`, appUserID)
	return err
}

// MFADefault is the id of the second factor a user chose as their default
// ("" if they never chose).
func (q Queries) MFADefault(ctx context.Context, appUserID string) (string, error) {
	var id string
	err := q.r.queryRow(ctx, `SELECT method_id FROM mfa_defaults WHERE app_user_id = $1`, appUserID).Scan(&id)
	if errors.Is(err, ErrNotFound) {
		return "", nil
	}
	return id, err
}

// SetMFADefault records methodID as the user's default second factor.
func (q Queries) SetMFADefault(ctx context.Context, appUserID, methodID string, now time.Time) error {
	_, err := q.w.exec(ctx, `INSERT INTO mfa_defaults (app_user_id, method_id, updated_at) VALUES ($1, $2, $3)
		ON CONFLICT (app_user_id) DO UPDATE SET method_id = excluded.method_id, updated_at = excluded.updated_at`,
		appUserID, methodID, ts(now))
	return err
}
