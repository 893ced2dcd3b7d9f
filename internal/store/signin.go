package store

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Challenge is one attempt to prove control of an identifier: a one-time
// code or a magic link. Only keyed hashes of its secrets are stored.
type Challenge struct {
	ID                string
	AppID             string
	AppUserID         string
	Purpose           string
	Method            string // email_otp, sms_otp or magic_link
	Recipient         string
	Status            string // pending, completed, failed, expired or superseded
	SecretHash        string
	PollHash          string // magic links: the polling handle's hash
	RemainingAttempts int
	WebauthnEnabled   bool
	IP                string
	UserAgent         string
	CreatedAt         time.Time
	ExpiresAt         time.Time
	CompletedAt       *time.Time
	CollectedAt       *time.Time
	// Consent records who a magic link's poller may be signed in for:
	// ConsentSameDevice and ConsentApproved release its tokens,
	// ConsentOpenerOnly and "denied" (DenyChallenge's) never do.
	Consent     string
	MatchNumber int    // magic links and push: the number both devices show
	Location    string // the requester's approximate place, when a trusted proxy said it
	Intent      string // what the app said the challenge is for
	Data        string // a JSON object: what the purpose and method need (never a secret in clear)
	SessionID   string // step-up and push: the session it belongs to
	// ShortHash and ShortTokenSealed are a magic link sent by SMS: the keyed
	// hash of its short link's code and the magic token, sealed. Written by
	// CreateChallenge, read only by GetChallengeByShortLink.
	ShortHash        string
	ShortTokenSealed string
}

// Consent decisions on a magic link.
const (
	ConsentSameDevice = "same_device"
	ConsentApproved   = "approved"
	ConsentOpenerOnly = "opener_only"
)

// Challenge statuses.
const (
	ChallengePending    = "pending"
	ChallengeCompleted  = "completed"
	ChallengeFailed     = "failed"
	ChallengeExpired    = "expired"
	ChallengeSuperseded = "superseded"
	ChallengeDenied     = "denied"
	ChallengeCancelled  = "cancelled"
)

// A condition on a challenge's status is written status || '' = 'pending',
// not status = 'pending', everywhere but the expiry sweep: the expression
// cannot use the pending challenges' expiry index (challenges_pending_expiry,
// partial on status = 'pending'), which the planner, misled by statistics
// that saw few pending challenges, otherwise took for the cheapest way to
// find one user's challenge by id or user, reading every pending challenge
// (and its dead index entries) of every app on each send and verify. The
// primary key and challenges_user find them instead.

const challengeColumns = `id, app_id, app_user_id, purpose, method, recipient, status, secret_hash, poll_hash,
	remaining_attempts, webauthn_enabled, ip, user_agent, created_at, expires_at, completed_at, collected_at,
	consent, match_number, location, intent, data, session_id`

func scanChallenge(r row) (Challenge, error) {
	var c Challenge
	var poll *string
	err := r.Scan(&c.ID, &c.AppID, &c.AppUserID, &c.Purpose, &c.Method, &c.Recipient, &c.Status, &c.SecretHash, &poll,
		&c.RemainingAttempts, &c.WebauthnEnabled, &c.IP, &c.UserAgent, &c.CreatedAt, &c.ExpiresAt, &c.CompletedAt,
		&c.CollectedAt, &c.Consent, &c.MatchNumber, &c.Location, &c.Intent, &c.Data, &c.SessionID)
	c.PollHash = deref(poll)
	c.CreatedAt, c.ExpiresAt = c.CreatedAt.UTC(), c.ExpiresAt.UTC()
	c.CompletedAt, c.CollectedAt = utcPtr(c.CompletedAt), utcPtr(c.CollectedAt)
	return c, err
}

// CreateChallenge inserts c.
func (q Queries) CreateChallenge(ctx context.Context, c Challenge) error {
	_, err := q.w.exec(ctx, `INSERT INTO challenges (`+challengeColumns+`, short_hash, short_token_sealed)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25)`,
		c.ID, c.AppID, c.AppUserID, c.Purpose, c.Method, c.Recipient, c.Status, c.SecretHash, nullString(c.PollHash),
		c.RemainingAttempts, c.WebauthnEnabled, c.IP, c.UserAgent, ts(c.CreatedAt), ts(c.ExpiresAt),
		nullTime(c.CompletedAt), nullTime(c.CollectedAt), c.Consent, c.MatchNumber, c.Location, c.Intent, jsonObject(c.Data), c.SessionID,
		nullString(c.ShortHash), c.ShortTokenSealed)
	return err
}

// SupersedeChallenges retires a user's pending sign-in challenges of the
// given methods: a resent code or link kills the previous one at once. A
// second factor's, a step-up's or a contact check's code is left alone: a
// stranger asking for a sign-in code must not cancel them.
func (q Queries) SupersedeChallenges(ctx context.Context, appUserID string, methods []string) error {
	if len(methods) == 0 {
		return nil
	}
	args := []any{appUserID}
	marks := make([]string, len(methods))
	for i, m := range methods {
		args = append(args, m)
		marks[i] = "$" + itoa(i+2)
	}
	_, err := q.w.exec(ctx, `UPDATE challenges SET status = 'superseded'
		WHERE app_user_id = $1 AND status || '' = 'pending' AND purpose = 'authenticate' AND method IN (`+strings.Join(marks, ", ")+`)`, args...)
	return err
}

// SupersedeAndCreateChallenge is SupersedeChallenges then CreateChallenge:
// on PostgreSQL in one statement (a data-modifying CTE, whose update does
// not see the row the statement inserts), a round trip fewer on every send;
// on SQLite, two in the caller's transaction.
func (q Queries) SupersedeAndCreateChallenge(ctx context.Context, c Challenge, methods []string) error {
	if q.d.name != Postgres || len(methods) == 0 {
		if err := q.SupersedeChallenges(ctx, c.AppUserID, methods); err != nil {
			return err
		}
		return q.CreateChallenge(ctx, c)
	}
	const n = 25 // CreateChallenge's arguments
	args := []any{c.ID, c.AppID, c.AppUserID, c.Purpose, c.Method, c.Recipient, c.Status, c.SecretHash, nullString(c.PollHash),
		c.RemainingAttempts, c.WebauthnEnabled, c.IP, c.UserAgent, ts(c.CreatedAt), ts(c.ExpiresAt),
		nullTime(c.CompletedAt), nullTime(c.CollectedAt), c.Consent, c.MatchNumber, c.Location, c.Intent, jsonObject(c.Data), c.SessionID,
		nullString(c.ShortHash), c.ShortTokenSealed}
	in, methodArgs := inList(methods, n+1)
	args = append(args, methodArgs...)
	_, err := q.w.exec(ctx, `WITH superseded AS (UPDATE challenges SET status = 'superseded'
			WHERE app_user_id = $3 AND status || '' = 'pending' AND purpose = 'authenticate' AND method IN (`+in+`))
		INSERT INTO challenges (`+challengeColumns+`, short_hash, short_token_sealed)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25)`, args...)
	return err
}

// LatestCodeChallenge returns a user's newest one-time-code sign-in
// challenge that was not superseded, whatever its status. Codes sent for
// another purpose (a second factor, a step-up, a contact check) never count.
func (q Queries) LatestCodeChallenge(ctx context.Context, appID, appUserID string) (Challenge, error) {
	return scanChallenge(q.w.queryRow(ctx, `SELECT `+challengeColumns+` FROM challenges
		WHERE app_id = $1 AND app_user_id = $2 AND method IN ('email_otp', 'sms_otp') AND purpose = 'authenticate' AND status <> 'superseded'
		ORDER BY created_at DESC, id DESC LIMIT 1`, appID, appUserID))
}

// GetChallengeBySecret finds a challenge by the keyed hash of its secret.
func (q Queries) GetChallengeBySecret(ctx context.Context, hash string) (Challenge, error) {
	return scanChallenge(q.w.queryRow(ctx, `SELECT `+challengeColumns+` FROM challenges WHERE secret_hash = $1`, hash))
}

// GetChallengeByPoll finds a magic-link challenge by its polling handle's hash.
func (q Queries) GetChallengeByPoll(ctx context.Context, hash string) (Challenge, error) {
	return scanChallenge(q.w.queryRow(ctx, `SELECT `+challengeColumns+` FROM challenges WHERE poll_hash = $1`, hash))
}

// Guess is a challenge one of whose attempts the transaction has just taken
// (TakeAttempt), with the user's record of wrong answers as it stands after
// every earlier guess: what a guess is judged against before its answer is
// compared.
type Guess struct {
	Challenge Challenge // empty for a guess outside a challenge (GuessState)
	// Streak is the user's consecutive wrong e-mail and SMS codes;
	// FactorStreak their consecutive wrong answers of the guessed method
	// (totp, backup_code).
	Streak, FactorStreak int
	// FromSource counts the user's wrong codes from the guess's source
	// (the client IP) entered after the window's start.
	FromSource int
}

// guessState reads a user's record of wrong answers: $U the user, $M the
// method, $S the source, $W the start of the hourly window.
const guessState = `(SELECT COALESCE(MAX(failures), 0) FROM code_failure_streaks WHERE app_user_id = $U),
	(SELECT COALESCE(MAX(failures), 0) FROM factor_failure_streaks WHERE app_user_id = $U AND method = $M),
	(SELECT COUNT(*) FROM code_failures WHERE app_user_id = $U AND source = $S AND created_at > $W)`

func guessStateAt(first int) string {
	return strings.NewReplacer("$U", "$"+itoa(first), "$M", "$"+itoa(first+1), "$S", "$"+itoa(first+2), "$W", "$"+itoa(first+3)).
		Replace(guessState)
}

var (
	takeAttempt = `UPDATE challenges SET remaining_attempts = remaining_attempts - 1
		WHERE id = $1 AND status || '' = 'pending' AND expires_at > $2 AND remaining_attempts > 0
		RETURNING ` + challengeColumns + `, ` + guessStateAt(3)
	takeLatestCodeAttempt = `UPDATE challenges SET remaining_attempts = remaining_attempts - 1
		WHERE id = (SELECT id FROM challenges
			WHERE app_id = $1 AND app_user_id = $3 AND method IN ('email_otp', 'sms_otp') AND purpose = 'authenticate' AND status <> 'superseded'
			ORDER BY created_at DESC, id DESC LIMIT 1)
		AND status || '' = 'pending' AND expires_at > $2 AND remaining_attempts > 0
		RETURNING ` + challengeColumns + `, ` + guessStateAt(3)
	readGuessState = `SELECT ` + guessStateAt(1)
)

// LockGuesses makes the guesses at one user's answers wait for each other:
// the transaction that holds it reads the user's record of wrong answers,
// judges its answer and records the verdict before the next one reads.
// PostgreSQL locks the user's row (FOR NO KEY UPDATE, which lets rows that
// reference the user be inserted meanwhile); SQLite needs nothing, as a
// write transaction holds the database's one write lock. ErrNotFound: no
// such user (never through Tx.Deferred, where the statement goes out with
// the next one, whose own answer tells).
func (q Queries) LockGuesses(ctx context.Context, appUserID string) error {
	if q.d.forUpdate == "" {
		return nil
	}
	n, err := q.w.exec(ctx, `SELECT 1 FROM app_users WHERE id = $1`+q.d.forUpdate, appUserID)
	if err == nil && n == 0 {
		err = ErrNotFound
	}
	return err
}

// TakeAttempt spends one attempt of a pending, unexpired challenge before
// its answer is compared, and returns it with its user's record of wrong
// answers of method from source since since (read after LockGuesses, so it
// counts every earlier guess). Concurrent guesses lower the count by exactly
// their number and never below zero. ErrNotFound: no attempt to take (the
// challenge is not pending, has expired or has none left).
func (q Queries) TakeAttempt(ctx context.Context, id, appUserID, method, source string, now, since time.Time) (Guess, error) {
	return scanGuess(q.w.queryRow(ctx, takeAttempt, id, ts(now), appUserID, method, source, ts(since)))
}

// TakeLatestCodeAttempt is TakeAttempt on the user's newest one-time-code
// sign-in challenge (LatestCodeChallenge), found and taken in one statement.
func (q Queries) TakeLatestCodeAttempt(ctx context.Context, appID, appUserID, source string, now, since time.Time) (Guess, error) {
	return scanGuess(q.w.queryRow(ctx, takeLatestCodeAttempt, appID, ts(now), appUserID, "", source, ts(since)))
}

// GuessState reads a user's record of wrong answers of method from source
// since since, for a guess outside any challenge (after LockGuesses).
func (q Queries) GuessState(ctx context.Context, appUserID, method, source string, since time.Time) (Guess, error) {
	var g Guess
	err := q.w.queryRow(ctx, readGuessState, appUserID, method, source, ts(since)).Scan(&g.Streak, &g.FactorStreak, &g.FromSource)
	return g, err
}

func scanGuess(r row) (Guess, error) {
	var g Guess
	var poll *string
	err := r.Scan(g.dest(&poll)...)
	g.finish(poll)
	return g, err
}

// dest lists where a row of challengeColumns and guessState goes.
func (g *Guess) dest(poll **string) []any {
	c := &g.Challenge
	return []any{&c.ID, &c.AppID, &c.AppUserID, &c.Purpose, &c.Method, &c.Recipient, &c.Status, &c.SecretHash, poll,
		&c.RemainingAttempts, &c.WebauthnEnabled, &c.IP, &c.UserAgent, &c.CreatedAt, &c.ExpiresAt, &c.CompletedAt,
		&c.CollectedAt, &c.Consent, &c.MatchNumber, &c.Location, &c.Intent, &c.Data, &c.SessionID,
		&g.Streak, &g.FactorStreak, &g.FromSource}
}

func (g *Guess) finish(poll *string) {
	c := &g.Challenge
	c.PollHash = deref(poll)
	c.CreatedAt, c.ExpiresAt = c.CreatedAt.UTC(), c.ExpiresAt.UTC()
	c.CompletedAt, c.CollectedAt = utcPtr(c.CompletedAt), utcPtr(c.CollectedAt)
}

// TakeLatestCodeAttemptWithUser is TakeLatestCodeAttempt that also returns
// the challenge's user as it stands (locked by LockGuesses): on PostgreSQL
// in the same statement, so that a code sign-in needs no other read before
// its writes, which then all go out with its COMMIT (VerifyOTP).
func (q Queries) TakeLatestCodeAttemptWithUser(ctx context.Context, appID, appUserID, source string, now, since time.Time) (Guess, AppUser, error) {
	if q.d.name != Postgres {
		g, err := q.TakeLatestCodeAttempt(ctx, appID, appUserID, source, now, since)
		if err != nil {
			return g, AppUser{}, err
		}
		u, err := q.GetAppUser(ctx, appID, appUserID)
		return g, u, err
	}
	var g Guess
	var poll *string
	u, err := scanAppUserAfter(q.w.queryRow(ctx, takeLatestCodeAttemptWithUser, appID, ts(now), appUserID, "", source, ts(since)), g.dest(&poll)...)
	g.finish(poll)
	return g, u, err
}

// The user is found by $3 (the challenge's app_user_id, as the take's
// WHERE requires), not through the join: joined to the CTE's column, a
// plan made while app_users was small (no statistics on a young database)
// read the whole table on every verify, and the connection kept it as the
// table grew (TestSignInLookupsReadOneUser).
var takeLatestCodeAttemptWithUser = `WITH taken AS (UPDATE challenges SET remaining_attempts = remaining_attempts - 1
		WHERE id = (SELECT id FROM challenges
			WHERE app_id = $1 AND app_user_id = $3 AND method IN ('email_otp', 'sms_otp') AND purpose = 'authenticate' AND status <> 'superseded'
			ORDER BY created_at DESC, id DESC LIMIT 1)
		AND status || '' = 'pending' AND expires_at > $2 AND remaining_attempts > 0
		RETURNING ` + challengeColumns + `)
	SELECT taken.*, ` + guessStateAt(3) + `, ` + prefixColumns("u.", appUserColumns) + `
	FROM taken JOIN app_users u ON u.id = $3 AND u.app_id || '' = $1`

// CompleteAttempt completes a pending challenge whose attempt this
// transaction took with a right answer, recording the consent decision
// (empty for most) and giving the attempt back: a right answer costs none.
func (q Queries) CompleteAttempt(ctx context.Context, id string, now time.Time, consent string) (bool, error) {
	n, err := q.w.exec(ctx, `UPDATE challenges SET status = 'completed', completed_at = $2, consent = $3,
		remaining_attempts = remaining_attempts + 1 WHERE id = $1 AND status || '' = 'pending'`, id, ts(now), consent)
	return n == 1, err
}

// FailSpentChallenge fails a pending challenge whose last attempt this
// transaction took with a wrong answer.
func (q Queries) FailSpentChallenge(ctx context.Context, id string) error {
	_, err := q.w.exec(ctx, `UPDATE challenges SET status = 'failed' WHERE id = $1 AND status || '' = 'pending' AND remaining_attempts = 0`, id)
	return err
}

// CompleteChallenge moves a pending, unexpired challenge that nobody guesses
// at (a magic link) to completed, recording the consent decision; only one
// caller can win it.
func (q Queries) CompleteChallenge(ctx context.Context, id string, now time.Time, consent string) (bool, error) {
	n, err := q.w.exec(ctx, `UPDATE challenges SET status = 'completed', completed_at = $2, consent = $3
		WHERE id = $1 AND status || '' = 'pending' AND expires_at > $2 AND remaining_attempts > 0`, id, ts(now), consent)
	return n == 1, err
}

// DenyChallenge ends a pending, unexpired magic link that its recipient
// refused; only one caller can win it, against completion too.
func (q Queries) DenyChallenge(ctx context.Context, id string, now time.Time) (bool, error) {
	n, err := q.w.exec(ctx, `UPDATE challenges SET status = 'denied', completed_at = $2, consent = 'denied'
		WHERE id = $1 AND status || '' = 'pending' AND expires_at > $2`, id, ts(now))
	return n == 1, err
}

// DenyOpenChallenge is DenyChallenge for a sign-in's second factor that
// may have been cancelled or superseded meanwhile: it is denied all the
// same (so that its sign-in is over); false once it has completed, failed,
// been denied or expired.
func (q Queries) DenyOpenChallenge(ctx context.Context, id string, now time.Time) (bool, error) {
	n, err := q.w.exec(ctx, `UPDATE challenges SET status = 'denied', completed_at = $2, consent = 'denied'
		WHERE id = $1 AND status || '' IN ('pending', 'cancelled', 'superseded') AND expires_at > $2`, id, ts(now))
	return n == 1, err
}

// CollectChallenge hands a completed magic link's tokens to its poller once,
// and only when the link was opened on the requesting device or approved.
func (q Queries) CollectChallenge(ctx context.Context, id string, now time.Time) (bool, error) {
	n, err := q.w.exec(ctx, `UPDATE challenges SET collected_at = $2
		WHERE id = $1 AND status = 'completed' AND collected_at IS NULL AND consent IN ('same_device', 'approved')`,
		id, ts(now))
	return n == 1, err
}

// Session is one signed-in device of a user; its refresh tokens form one family.
type Session struct {
	ID           string
	AppID        string
	AppUserID    string
	Method       string
	UserAgent    string
	IP           string
	CreatedAt    time.Time
	LastActiveAt time.Time
	ExpiresAt    time.Time
	RevokedAt    *time.Time
	// CredentialID is the passkey the session signed in with ("" for other methods).
	CredentialID string
	// AuthTime is when the user last proved who they are in this session
	// (the sign-in, or a later step-up); nil on sessions older than it, whose
	// sign-in time is CreatedAt. AMR lists the methods of that proof.
	AuthTime *time.Time
	AMR      []string
	// StepUpFactor is the authenticator app or passkey of the session's last
	// step-up ("" for none or another method).
	StepUpFactor string
}

// Authenticated is when the session's user last proved who they are.
func (s Session) Authenticated() time.Time {
	if s.AuthTime != nil {
		return *s.AuthTime
	}
	return s.CreatedAt
}

const sessionColumns = `s.id, s.app_id, s.app_user_id, s.method, s.user_agent, s.ip, s.created_at, s.last_active_at, s.expires_at, s.revoked_at, s.credential_id, s.auth_time, s.amr, s.step_up_factor`

func sessionDest(s *Session) []any {
	return []any{&s.ID, &s.AppID, &s.AppUserID, &s.Method, &s.UserAgent, &s.IP, &s.CreatedAt, &s.LastActiveAt, &s.ExpiresAt, &s.RevokedAt, &s.CredentialID, &s.AuthTime, (*amrList)(&s.AMR), &s.StepUpFactor}
}

func (s *Session) utc() {
	s.CreatedAt, s.LastActiveAt, s.ExpiresAt, s.RevokedAt = s.CreatedAt.UTC(), s.LastActiveAt.UTC(), s.ExpiresAt.UTC(), utcPtr(s.RevokedAt)
	s.AuthTime = utcPtr(s.AuthTime)
}

// amrList scans the comma-separated amr column.
type amrList []string

// Scan implements sql.Scanner.
func (a *amrList) Scan(v any) error {
	var s string
	switch t := v.(type) {
	case string:
		s = t
	case []byte:
		s = string(t)
	}
	*a = nil
	if s != "" {
		*a = strings.Split(s, ",")
	}
	return nil
}

// CreateSession inserts s.
func (q Queries) CreateSession(ctx context.Context, s Session) error {
	_, err := q.w.exec(ctx, `INSERT INTO sessions (`+sessionInsertColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`, s.ID, s.AppID, s.AppUserID, s.Method, s.UserAgent, s.IP,
		ts(s.CreatedAt), ts(s.LastActiveAt), ts(s.ExpiresAt), nullTime(s.RevokedAt), s.CredentialID, nullTime(s.AuthTime), strings.Join(s.AMR, ","))
	return err
}

// The columns CreateSession, InsertRefreshToken and CreateSessionWithRefresh write.
const (
	sessionInsertColumns = `id, app_id, app_user_id, method, user_agent, ip, created_at, last_active_at, expires_at, revoked_at, credential_id, auth_time, amr`
	refreshInsertColumns = `id, session_id, token_hash, created_at, expires_at, used_at, successor_sealed`
)

// CreateSessionWithRefresh creates s and its first refresh token r: on
// PostgreSQL in one statement (a data-modifying CTE), a round trip fewer on
// every sign-in; on SQLite, two in the caller's transaction.
func (q Queries) CreateSessionWithRefresh(ctx context.Context, s Session, r RefreshToken) error {
	if q.d.name != Postgres {
		if err := q.CreateSession(ctx, s); err != nil {
			return err
		}
		return q.InsertRefreshToken(ctx, r)
	}
	_, err := q.w.exec(ctx, `WITH s AS (
			INSERT INTO sessions (`+sessionInsertColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id)
		INSERT INTO refresh_tokens (`+refreshInsertColumns+`)
		SELECT $14, s.id, $15, $16, $17, $18, $19 FROM s`,
		s.ID, s.AppID, s.AppUserID, s.Method, s.UserAgent, s.IP,
		ts(s.CreatedAt), ts(s.LastActiveAt), ts(s.ExpiresAt), nullTime(s.RevokedAt), s.CredentialID, nullTime(s.AuthTime), strings.Join(s.AMR, ","),
		r.ID, r.TokenHash, ts(r.CreatedAt), ts(r.ExpiresAt), nullTime(r.UsedAt), r.SuccessorSealed)
	return err
}

// StepUpSession records a step-up on a live session: when, with which
// methods, and by which authenticator app or passkey ("" for another).
func (q Queries) StepUpSession(ctx context.Context, sessionID string, at time.Time, amr []string, factor string) error {
	n, err := q.w.exec(ctx, `UPDATE sessions SET auth_time = $2, amr = $3, step_up_factor = $4 WHERE id = $1 AND revoked_at IS NULL`,
		sessionID, ts(at), strings.Join(amr, ","), factor)
	return affected(n, err)
}

const userColumnsU = `u.id, u.app_id, u.user_id, u.status, u.email, u.phone, u.email_verified, u.phone_verified,
	u.webauthn_enabled, u.user_meta, u.created_at, u.updated_at, u.last_used_at, u.webauthn_types`

func userDest(u *AppUser, email, phone **string, types *string) []any {
	return []any{&u.ID, &u.AppID, &u.UserID, &u.Status, email, phone, &u.EmailVerified, &u.PhoneVerified,
		&u.WebauthnEnabled, &u.Meta, &u.CreatedAt, &u.UpdatedAt, &u.LastUsedAt, types}
}

func (u *AppUser) fill(email, phone *string, types string) {
	u.Email, u.Phone, u.WebauthnTypes = deref(email), deref(phone), splitTypes(types)
	u.CreatedAt, u.UpdatedAt, u.LastUsedAt = u.CreatedAt.UTC(), u.UpdatedAt.UTC(), utcPtr(u.LastUsedAt)
}

// GetSessionWithUser reads a session of an app and its user in one round
// trip: what every request with an access token needs.
func (q Queries) GetSessionWithUser(ctx context.Context, appID, sessionID string) (Session, AppUser, error) {
	var s Session
	var u AppUser
	var email, phone *string
	var types string
	err := q.r.queryRow(ctx, `SELECT `+sessionColumns+`, `+userColumnsU+`
		FROM sessions s JOIN app_users u ON u.id = s.app_user_id WHERE s.id = $1 AND s.app_id = $2`, sessionID, appID).
		Scan(append(sessionDest(&s), userDest(&u, &email, &phone, &types)...)...)
	s.utc()
	u.fill(email, phone, types)
	return s, u, err
}

// TouchSession records activity, at most once per staleAfter, so reads do
// not turn into a write each.
func (q Queries) TouchSession(ctx context.Context, sessionID string, now time.Time, staleAfter time.Duration) error {
	_, err := q.w.exec(ctx, `UPDATE sessions SET last_active_at = $2 WHERE id = $1 AND last_active_at < $3`,
		sessionID, ts(now), ts(now.Add(-staleAfter)))
	return err
}

// ListSessions returns a user's live sessions, newest first.
func (q Queries) ListSessions(ctx context.Context, appID, appUserID string, now time.Time) ([]Session, error) {
	rs, err := q.r.query(ctx, `SELECT `+sessionColumns+` FROM sessions s
		WHERE s.app_id = $1 AND s.app_user_id = $2 AND s.revoked_at IS NULL AND s.expires_at > $3
		ORDER BY s.created_at DESC, s.id DESC`, appID, appUserID, ts(now))
	if err != nil {
		return nil, err
	}
	return collectSessions(rs)
}

// RecentSessions returns a user's last sessions, live or ended, newest
// first: the user's sign-in history, as far as sessions are kept.
func (q Queries) RecentSessions(ctx context.Context, appID, appUserID string, limit int) ([]Session, error) {
	// COALESCE keeps app_id out of any index's condition (it is NOT NULL:
	// the same test): PostgreSQL without statistics on a freshly filled
	// table otherwise ANDs sessions_user with a scan of all of the app's
	// entries in sessions_app_created (whose last column is app_id), 2 ms
	// at 100 000 sessions instead of 0.1.
	rs, err := q.r.query(ctx, `SELECT `+sessionColumns+` FROM sessions s
		WHERE s.app_user_id = $2 AND COALESCE(s.app_id, '') = $1
		ORDER BY s.created_at DESC, s.id DESC LIMIT $3`, appID, appUserID, limit)
	if err != nil {
		return nil, err
	}
	return collectSessions(rs)
}

func collectSessions(rs rows) ([]Session, error) {
	return collect(rs, func(r row) (Session, error) {
		var s Session
		err := r.Scan(sessionDest(&s)...)
		s.utc()
		return s, err
	})
}

// RevokeSession ends one session of a user (appUserID "" for any user of the app).
func (q Queries) RevokeSession(ctx context.Context, appID, appUserID, sessionID string, now time.Time) error {
	n, err := q.w.exec(ctx, `UPDATE sessions SET revoked_at = COALESCE(revoked_at, $4)
		WHERE app_id = $1 AND ($2 = '' OR app_user_id = $2) AND id = $3`, appID, appUserID, sessionID, ts(now))
	return affected(n, err)
}

// RevokeUserSessions ends every session of a user.
func (q Queries) RevokeUserSessions(ctx context.Context, appID, appUserID string, now time.Time) error {
	_, err := q.w.exec(ctx, `UPDATE sessions SET revoked_at = $3 WHERE app_id = $1 AND app_user_id = $2 AND revoked_at IS NULL`,
		appID, appUserID, ts(now))
	return err
}

// RefreshToken is one member of a session's refresh-token family.
type RefreshToken struct {
	ID              string
	SessionID       string
	TokenHash       string
	CreatedAt       time.Time
	ExpiresAt       time.Time
	UsedAt          *time.Time
	SuccessorSealed []byte // the token that replaced this one, sealed, kept for the grace window
}

// InsertRefreshToken stores r.
func (q Queries) InsertRefreshToken(ctx context.Context, r RefreshToken) error {
	_, err := q.w.exec(ctx, `INSERT INTO refresh_tokens (`+refreshInsertColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, r.ID, r.SessionID, r.TokenHash, ts(r.CreatedAt), ts(r.ExpiresAt), nullTime(r.UsedAt), r.SuccessorSealed)
	return err
}

// GetRefreshFamily reads a refresh token by hash with its session and user, in one round trip.
func (q Queries) GetRefreshFamily(ctx context.Context, hash string) (RefreshToken, Session, AppUser, error) {
	var r RefreshToken
	var s Session
	var u AppUser
	var email, phone *string
	var types string
	dest := append([]any{&r.ID, &r.SessionID, &r.TokenHash, &r.CreatedAt, &r.ExpiresAt, &r.UsedAt, &r.SuccessorSealed},
		append(sessionDest(&s), userDest(&u, &email, &phone, &types)...)...)
	err := q.w.queryRow(ctx, `SELECT rt.id, rt.session_id, rt.token_hash, rt.created_at, rt.expires_at, rt.used_at, rt.successor_sealed,
		`+sessionColumns+`, `+userColumnsU+`
		FROM refresh_tokens rt JOIN sessions s ON s.id = rt.session_id JOIN app_users u ON u.id = s.app_user_id
		WHERE rt.token_hash = $1`, hash).Scan(dest...)
	r.CreatedAt, r.ExpiresAt, r.UsedAt = r.CreatedAt.UTC(), r.ExpiresAt.UTC(), utcPtr(r.UsedAt)
	s.utc()
	u.fill(email, phone, types)
	return r, s, u, err
}

// UseRefreshToken marks a refresh token used and keeps its successor. Only
// the first caller wins; the others find used_at set and take the grace path.
func (q Queries) UseRefreshToken(ctx context.Context, id string, now time.Time, successorSealed []byte) (bool, error) {
	n, err := q.w.exec(ctx, `UPDATE refresh_tokens SET used_at = $2, successor_sealed = $3 WHERE id = $1 AND used_at IS NULL`,
		id, ts(now), successorSealed)
	return n == 1, err
}

// UnspentRefreshTokens lists the ids of a session's refresh tokens not used
// yet. It takes no lock: a locking read that waits for a concurrent refresh
// would skip the token it spent without seeing the successor it added (one
// statement, one snapshot), while a plain read followed by a conditional
// UseRefreshToken loses that race visibly and can read again.
func (q Queries) UnspentRefreshTokens(ctx context.Context, sessionID string) ([]string, error) {
	rs, err := q.w.query(ctx, `SELECT id FROM refresh_tokens WHERE session_id = $1 AND used_at IS NULL ORDER BY id`, sessionID)
	if err != nil {
		return nil, err
	}
	return collect(rs, func(r row) (string, error) {
		var id string
		err := r.Scan(&id)
		return id, err
	})
}

// GetRefreshByHash reads one refresh token by its keyed hash.
func (q Queries) GetRefreshByHash(ctx context.Context, hash string) (RefreshToken, error) {
	var r RefreshToken
	err := q.w.queryRow(ctx, `SELECT id, session_id, token_hash, created_at, expires_at, used_at, successor_sealed
		FROM refresh_tokens WHERE token_hash = $1`, hash).Scan(&r.ID, &r.SessionID, &r.TokenHash, &r.CreatedAt, &r.ExpiresAt, &r.UsedAt, &r.SuccessorSealed)
	r.CreatedAt, r.ExpiresAt, r.UsedAt = r.CreatedAt.UTC(), r.ExpiresAt.UTC(), utcPtr(r.UsedAt)
	return r, err
}

// GetRefreshToken reads one refresh token by id.
func (q Queries) GetRefreshToken(ctx context.Context, id string) (RefreshToken, error) {
	var r RefreshToken
	err := q.w.queryRow(ctx, `SELECT id, session_id, token_hash, created_at, expires_at, used_at, successor_sealed
		FROM refresh_tokens WHERE id = $1`, id).Scan(&r.ID, &r.SessionID, &r.TokenHash, &r.CreatedAt, &r.ExpiresAt, &r.UsedAt, &r.SuccessorSealed)
	r.CreatedAt, r.ExpiresAt, r.UsedAt = r.CreatedAt.UTC(), r.ExpiresAt.UTC(), utcPtr(r.UsedAt)
	return r, err
}

// MarkUserVerified records that a user proved control of their e-mail or
// phone, and activates a pending user (AppUser.Verified says the same in Go).
func (q Queries) MarkUserVerified(ctx context.Context, appID, appUserID string, email, phone bool, now time.Time) (AppUser, error) {
	return scanAppUser(q.w.queryRow(ctx, markUserVerified+` RETURNING `+appUserColumns, appID, appUserID, email, phone, ts(now)))
}

// app_id is compared as an expression, as dialect.unindexed says why (on
// both engines here: the primary key serves either way).
const markUserVerified = `UPDATE app_users SET
		email_verified = email_verified OR $3, phone_verified = phone_verified OR $4,
		status = CASE WHEN status IN ('pending', 'imported') THEN 'active' ELSE status END,
		last_used_at = $5, updated_at = $5
		WHERE id = $2 AND app_id || '' = $1`

// Verified is u as markUserVerified leaves it: the statement's effect, for
// a caller that deferred it and needs the result before the commit. A test
// holds the two together.
func (u AppUser) Verified(email, phone bool, now time.Time) AppUser {
	u.EmailVerified, u.PhoneVerified = u.EmailVerified || email, u.PhoneVerified || phone
	if u.Status == StatusPending || u.Status == StatusImported {
		u.Status = StatusActive
	}
	now = ts(now) // as stored
	u.LastUsedAt, u.UpdatedAt = &now, now
	return u
}

// CompleteAttemptAndMarkVerified is CompleteAttempt (with no consent)
// then MarkUserVerified, for a code sign-in whose attempt this transaction
// took (TakeLatestCodeAttemptWithUser): on PostgreSQL in one statement (a
// data-modifying CTE), on SQLite two. It returns nothing, so that it can go
// out with the COMMIT (Tx.Deferred): the take left the challenge pending
// and locked by this transaction, so the completion cannot miss, and the
// user as updated is AppUser.Verified of the user the take returned.
func (q Queries) CompleteAttemptAndMarkVerified(ctx context.Context, challengeID, appID, appUserID string, email, phone bool, now time.Time) error {
	if q.d.name != Postgres {
		if _, err := q.CompleteAttempt(ctx, challengeID, now, ""); err != nil {
			return err
		}
		_, err := q.w.exec(ctx, markUserVerified, appID, appUserID, email, phone, ts(now))
		return err
	}
	_, err := q.w.exec(ctx, `WITH done AS (
			UPDATE challenges SET status = 'completed', completed_at = $5, consent = '',
			remaining_attempts = remaining_attempts + 1 WHERE id = $6 AND status || '' = 'pending' RETURNING id)
		`+markUserVerified+` AND EXISTS (SELECT 1 FROM done)`,
		appID, appUserID, email, phone, ts(now), challengeID)
	return err
}

// CodeFailure is one wrong one-time code: when it was entered, for whom,
// for which method and from which source (the client IP).
type CodeFailure struct {
	ID        string
	AppID     string
	AppUserID string
	Method    string // email_otp, sms_otp, totp or backup_code
	Source    string
	At        time.Time
}

// RecordCodeFailure stores f and adds it to its user's streak of wrong codes
// since their last sign-in, returning the streak with f counted. The
// streak's upsert holds the user's row until the transaction ends, so
// concurrent failures of one user get one count after another.
func (q Queries) RecordCodeFailure(ctx context.Context, f CodeFailure) (streak int, err error) {
	if err := q.InsertCodeFailure(ctx, f); err != nil {
		return 0, err
	}
	err = q.w.queryRow(ctx, `INSERT INTO code_failure_streaks (app_user_id, failures, updated_at) VALUES ($1, 1, $2)
		ON CONFLICT (app_user_id) DO UPDATE SET failures = code_failure_streaks.failures + 1, updated_at = excluded.updated_at
		RETURNING failures`, f.AppUserID, ts(f.At)).Scan(&streak)
	return streak, err
}

// InsertCodeFailure stores f for the hourly budget alone, outside the
// user's streak of wrong e-mail and SMS codes (a wrong TOTP or backup code).
func (q Queries) InsertCodeFailure(ctx context.Context, f CodeFailure) error {
	_, err := q.w.exec(ctx, `INSERT INTO code_failures (id, app_id, app_user_id, method, source, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, f.ID, f.AppID, f.AppUserID, f.Method, f.Source, ts(f.At))
	return err
}

// CodeFailuresFrom counts a user's wrong codes from source entered after since.
func (q Queries) CodeFailuresFrom(ctx context.Context, appUserID, source string, since time.Time) (int, error) {
	var n int
	err := q.r.queryRow(ctx, `SELECT COUNT(*) FROM code_failures WHERE app_user_id = $1 AND source = $2 AND created_at > $3`,
		appUserID, source, ts(since)).Scan(&n)
	return n, err
}

// CodeFailureStreak is a user's count of wrong codes since their last sign-in.
func (q Queries) CodeFailureStreak(ctx context.Context, appUserID string) (int, error) {
	var n int
	err := q.r.queryRow(ctx, `SELECT failures FROM code_failure_streaks WHERE app_user_id = $1`, appUserID).Scan(&n)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	return n, err
}

// EndCodeFailureStreak starts a user's count of wrong codes afresh (a
// successful sign-in).
func (q Queries) EndCodeFailureStreak(ctx context.Context, appUserID string) error {
	_, err := q.w.exec(ctx, `DELETE FROM code_failure_streaks WHERE app_user_id = $1`, appUserID)
	return err
}

// PruneCodeFailures deletes the wrong codes entered before before.
func (q Queries) PruneCodeFailures(ctx context.Context, before time.Time) error {
	_, err := q.w.exec(ctx, `DELETE FROM code_failures WHERE created_at < $1`, ts(before))
	return err
}

// UseInvitation spends an invitation once; false when it was used already.
func (q Queries) UseInvitation(ctx context.Context, id string, now time.Time) (bool, error) {
	n, err := q.w.exec(ctx, `UPDATE invitations SET used_at = $2 WHERE id = $1 AND used_at IS NULL AND expires_at > $2`, id, ts(now))
	return n == 1, err
}

// RotateRefreshToken spends old (if still unspent, keeping its successor
// sealed for the grace window) and stores next, atomically: both happen or
// neither. It reports whether this caller spent it; false means another
// request did first and nothing was stored. One round trip on PostgreSQL.
func (db *DB) RotateRefreshToken(ctx context.Context, oldID string, now time.Time, successorSealed []byte, next RefreshToken) (bool, error) {
	if db.pool != nil {
		var id string
		err := db.w.queryRow(ctx, db.dialect.rotateRefresh, oldID, ts(now), successorSealed, next.ID, next.TokenHash,
			ts(next.CreatedAt), ts(next.ExpiresAt)).Scan(&id)
		if errors.Is(err, ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}
	var won bool
	err := db.Tx(ctx, func(tx *Tx) error {
		var err error
		if won, err = tx.UseRefreshToken(ctx, oldID, now, successorSealed); err != nil || !won {
			return err
		}
		return tx.InsertRefreshToken(ctx, next)
	})
	return won, err
}
