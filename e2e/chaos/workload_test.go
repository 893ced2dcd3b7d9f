package chaos

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The workload: a few actors, each signing in its own users over real HTTP
// while the server is killed under them. Every request that fails in
// transport (the server died) is retried on the next process, so flows cross
// restarts, and the ledger records what the server acknowledged (a 2xx or a
// definite refusal) apart from what it may or may not have done (a request
// cut off by a kill).

// rate counts the requests that may have taken from one rate-limit bucket.
type rate struct {
	answered    int // requests the server answered: each took from the bucket
	tried       int // answered plus those cut off, which may have taken
	first, last time.Time
}

func (r *rate) add(start, end time.Time, answered bool) {
	if r.tried == 0 || start.Before(r.first) {
		r.first = start
	}
	if end.After(r.last) {
		r.last = end
	}
	r.tried++
	if answered {
		r.answered++
	}
}

// otpRec is what the workload knows of one one-time-code challenge.
type otpRec struct {
	user, ident  string
	wrongRefused int  // wrong codes answered 422: each spent an attempt
	wrongTried   int  // wrong codes sent, including cut-off and 429 ones
	tooMany      bool // a wrong code was answered 429 too_many_attempts
	verified     bool // the right code was answered with tokens
	rightTried   int
}

// magicRec is what the workload knows of one magic link (by challenge id).
type magicRec struct {
	user, ident string
	opened      bool // authenticate answered with tokens
	openTried   int
	collected   bool // the poll answered with tokens
}

// ledger is everything the server acknowledged, and every request that may
// have changed something.
type ledger struct {
	mu        sync.Mutex
	users     map[string]string // acknowledged user id -> identifier
	sends     map[string]*rate  // identifier -> its send bucket
	sendIP    rate
	verifyIP  rate
	otp       map[string]*otpRec   // challenge id ->
	magic     map[string]*magicRec // challenge id ->
	sessions  map[string]string    // acknowledged session id -> sign-in kind ("otp", "magic")
	refresh   map[string]string    // acknowledged refresh token id (jti) -> session id
	spent     map[string]bool      // refresh token ids whose rotation was acknowledged
	metaSent  map[string]string    // first_name value -> user id, every PATCH sent
	metaTries map[string]int       // first_name value -> attempts that may have reached a server
	metaAcked map[string]bool      // first_name values acknowledged
	oddities  []string             // answers the workload did not expect
}

func newLedger() *ledger {
	return &ledger{users: map[string]string{}, sends: map[string]*rate{}, otp: map[string]*otpRec{},
		magic: map[string]*magicRec{}, sessions: map[string]string{}, refresh: map[string]string{},
		spent: map[string]bool{}, metaSent: map[string]string{}, metaTries: map[string]int{}, metaAcked: map[string]bool{}}
}

func (l *ledger) odd(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.oddities = append(l.oddities, fmt.Sprintf(format, args...))
}

// session is a signed-in device an actor holds on to.
type session struct {
	user, sid, access, refresh, jti string
}

// workload is what the actors share.
type workload struct {
	c      *cluster
	appID  string
	secret string // the app's API secret
	ledger *ledger
	client *http.Client
}

// actor signs in its own users one step at a time: no two requests for one
// user are ever in flight together, so every difference from the ledger is
// the server's.
type actor struct {
	w        *workload
	n        int
	rng      *rand.Rand
	idents   []string
	sessions []*session
	made     int
}

// answer is the outcome of one logical request, retried across restarts
// until the server answered it.
type answer struct {
	status int // 0: never answered (the workload stopped)
	body   map[string]any
	cutOff int    // attempts a kill cut off (their effect is unknown)
	where  string // Location of a redirect
}

// tries is how many attempts may have reached the server.
func (a answer) tries() int {
	if a.status != 0 {
		return a.cutOff + 1
	}
	return a.cutOff
}

func (a answer) code() string { s, _ := a.body["error_code"].(string); return s }

// do sends a request until a server answers it (each transport failure
// waits for the next process). hook sees every attempt. When ctx ends first,
// the answer still counts the attempts made.
func (a *actor) do(ctx context.Context, method, path string, header map[string]string, body any, hook func(start, end time.Time, answered bool)) (answer, error) {
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	var out answer
	after := -1
	for {
		base, gen, err := a.w.c.await(ctx, after)
		if err != nil {
			return out, err
		}
		req, _ := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(raw))
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("User-Agent", fmt.Sprintf("chaos-actor/%d", a.n))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		start := time.Now()
		resp, err := a.w.client.Do(req)
		if err != nil {
			// Cut off by a kill, or abandoned as the workload stops
			// (possibly after the kill that cut it off): either way the
			// server may have acted on it.
			if hook != nil {
				hook(start, time.Now(), false)
			}
			out.cutOff++
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			after = gen
			continue
		}
		b, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if rerr != nil {
			// The answer was cut off: whatever it was, it may have happened.
			if hook != nil {
				hook(start, time.Now(), false)
			}
			out.cutOff++
			after = gen
			continue
		}
		if hook != nil {
			hook(start, time.Now(), true)
		}
		out.status, out.body, out.where = resp.StatusCode, nil, resp.Header.Get("Location")
		if resp.StatusCode/100 == 3 {
			return out, nil
		}
		if err := json.Unmarshal(b, &out.body); err != nil && len(b) > 0 {
			a.w.ledger.odd("%s %s answered %d with a body that is not a JSON object: %.200q", method, path, resp.StatusCode, b)
		}
		return out, nil
	}
}

// run performs random flows until ctx ends.
func (a *actor) run(ctx context.Context) {
	for ctx.Err() == nil {
		var err error
		switch n := a.rng.IntN(100); {
		case n < 12:
			err = a.createUser(ctx)
		case n < 55:
			err = a.otpFlow(ctx)
		case n < 85:
			err = a.magicFlow(ctx)
		case n < 93:
			err = a.refreshOld(ctx)
		default:
			err = a.updateMeta(ctx)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			a.w.ledger.odd("actor %d: %v", a.n, err)
		}
	}
}

// newIdent makes an identifier no other actor or engine run uses: mostly
// e-mail addresses, some phone numbers.
func (a *actor) newIdent() string {
	a.made++
	var id string
	if a.rng.IntN(8) == 0 && a.made < 1000 {
		id = fmt.Sprintf("+1415555%d%03d", a.n, a.made) // valid US numbers, one block per actor
	} else {
		id = fmt.Sprintf("a%d-u%d@chaos.test", a.n, a.made)
	}
	a.idents = append(a.idents, id)
	return id
}

// pickIdent returns one of the actor's identifiers, or a new one.
func (a *actor) pickIdent() string {
	if len(a.idents) == 0 || a.rng.IntN(3) == 0 {
		return a.newIdent()
	}
	return a.idents[a.rng.IntN(len(a.idents))]
}

func (a *actor) sendHook(ident string) func(start, end time.Time, answered bool) {
	return func(start, end time.Time, answered bool) {
		l := a.w.ledger
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.sends[ident] == nil {
			l.sends[ident] = &rate{}
		}
		l.sends[ident].add(start, end, answered)
		l.sendIP.add(start, end, answered)
	}
}

func (a *actor) verifyHook(start, end time.Time, answered bool) {
	l := a.w.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	l.verifyIP.add(start, end, answered)
}

func (a *actor) createUser(ctx context.Context) error {
	ident := a.newIdent()
	ans, err := a.do(ctx, "POST", "/v1/"+a.w.appID+"/users", map[string]string{"Authorization": "Bearer " + a.w.secret},
		map[string]any{"identifier": ident}, nil)
	if err != nil {
		return err
	}
	switch {
	case ans.status == http.StatusOK:
		id := str(ans.body, "user", "id")
		a.ackUser(ident, id)
	case ans.status == http.StatusBadRequest && ans.code() == "user_exists" && ans.cutOff > 0:
		// An attempt a kill cut off had created it.
	default:
		return fmt.Errorf("create user %s = %d %v", ident, ans.status, ans.body)
	}
	return nil
}

func (a *actor) ackUser(ident, id string) {
	if id == "" {
		a.w.ledger.odd("user %s acknowledged without an id", ident)
		return
	}
	l := a.w.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	l.users[id] = ident
}

// settle waits for a message of kind want to ident since, and a moment
// more for a second one, as after a send that was sent twice.
func (a *actor) settle(ctx context.Context, ident string, since time.Time, want string) error {
	if _, _, err := a.outbox(ctx, ident, since, want); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(300 * time.Millisecond):
	}
	return nil
}

// outboxAfterKill is how long a message may take when a kill came after its
// send: the attempt cut off is tried again webhooks.rescue_after (16 s here)
// after it began, once a process is up again (a later kill may cut that try
// off too).
const outboxAfterKill = 2 * time.Minute

// outbox returns the newest message to ident sent after since (the dev
// outbox keeps codes and links). The send queue's workers send it after the
// send's answer, so it polls, for up to 10 s; or, when a kill came since,
// for up to outboxAfterKill, as a kill may have cut off the message's
// attempt, which is tried again once the queue rescues it.
func (a *actor) outbox(ctx context.Context, ident string, since time.Time, want string) (code, link string, err error) {
	deadline := time.Now().Add(10 * time.Second)
	extended := false
	for {
		ans, err := a.do(ctx, "GET", "/dev/outbox?limit=5&to="+url.QueryEscape(ident)+"&since="+url.QueryEscape(since.UTC().Format(time.RFC3339Nano)), nil, nil, nil)
		if err != nil {
			return "", "", err
		}
		msgs, _ := ans.body["messages"].([]any)
		if ans.status != http.StatusOK {
			return "", "", fmt.Errorf("outbox for %s = %d %v", ident, ans.status, ans.body)
		}
		// Newest first; a notice (no code, no link) is not the message.
		for _, v := range msgs {
			m, _ := v.(map[string]any)
			code, _ = m["code"].(string)
			link, _ = m["link"].(string)
			if (want == "code" && code != "") || (want == "link" && link != "") {
				return code, link, nil
			}
		}
		if time.Now().After(deadline) && !extended && a.w.c.restartedSince(since) {
			deadline, extended = since.Add(outboxAfterKill), true
		}
		if time.Now().After(deadline) {
			return "", "", fmt.Errorf("outbox for %s = %v; want the message acknowledged %s ago (a restart since: %v)",
				ident, ans.body, time.Since(since).Round(time.Millisecond), extended)
		}
		wait := 10 * time.Millisecond
		if extended {
			wait = 250 * time.Millisecond // waiting for a rescue
		}
		select {
		case <-ctx.Done():
			return "", "", ctx.Err()
		case <-time.After(wait):
		}
	}
}

// retriedSend: a send that a kill cut off and that was sent again may have
// made two challenges, the first committed before the kill and superseded
// by the second. Both messages go out (the first passed its check before
// the second committed, or its worker was faster), in either order, and
// the outbox cannot say which code or link is the current one: a user who
// double-clicked would not know either. So the actor takes the answer (the
// send's ledger entries stand) and leaves that flow there, once its
// messages have arrived (settle), so that they do not pass for a later
// flow's.

func (a *actor) otpFlow(ctx context.Context) error {
	ident := a.pickIdent()
	since := time.Now()
	send, err := a.do(ctx, "POST", "/v1/auth/"+a.w.appID+"/otps/login", nil, map[string]any{"identifier": ident}, a.sendHook(ident))
	if err != nil {
		return err
	}
	chID, userID := str(send.body, "otp", "id"), str(send.body, "user_id")
	otp, _ := send.body["otp"].(map[string]any)
	if send.status != http.StatusOK || chID == "" || userID == "" || otp["success"] != true {
		return fmt.Errorf("send code to %s = %d %v", ident, send.status, send.body)
	}
	a.ackUser(ident, userID)
	rec := &otpRec{user: userID, ident: ident}
	l := a.w.ledger
	l.mu.Lock()
	l.otp[chID] = rec
	l.mu.Unlock()
	if send.cutOff > 0 {
		return a.settle(ctx, ident, since, "code") // ambiguous: see retriedSend
	}
	code, _, err := a.outbox(ctx, ident, since, "code")
	if err != nil {
		return err
	}
	if len(code) != 6 {
		return fmt.Errorf("outbox message to %s holds no code", ident)
	}

	wrong := []int{0, 0, 0, 0, 1, 1, 1, 2, 2, 3, 5, 6}[a.rng.IntN(12)]
	for range wrong {
		guess := fmt.Sprintf("%06d", a.rng.IntN(1000000))
		if guess == code {
			continue
		}
		ans, err := a.do(ctx, "POST", "/v1/auth/"+a.w.appID+"/otps/verify", nil,
			map[string]any{"otp": guess, "user_id": userID}, a.verifyHook)
		l.mu.Lock()
		rec.wrongTried += ans.tries()
		if err != nil {
			l.mu.Unlock()
			return err
		}
		switch {
		case ans.status == http.StatusUnprocessableEntity && ans.code() == "invalid_code":
			rec.wrongRefused++
		case ans.status == http.StatusTooManyRequests && ans.code() == "too_many_attempts":
			rec.tooMany = true
		default:
			l.oddities = append(l.oddities, fmt.Sprintf("wrong code for challenge %s = %d %v", chID, ans.status, ans.body))
		}
		l.mu.Unlock()
	}
	if a.rng.IntN(5) == 0 {
		return nil // abandoned: the challenge stays pending until superseded
	}
	ans, err := a.do(ctx, "POST", "/v1/auth/"+a.w.appID+"/otps/verify", nil,
		map[string]any{"otp": code, "user_id": userID}, a.verifyHook)
	l.mu.Lock()
	rec.rightTried += ans.tries()
	l.mu.Unlock()
	if err != nil {
		return err
	}
	switch {
	case ans.status == http.StatusOK:
		l.mu.Lock()
		rec.verified = true
		l.mu.Unlock()
		s := a.ackTokens(ans, userID, "otp")
		if s != nil {
			for range a.rng.IntN(4) {
				if err := a.refresh(ctx, s); err != nil {
					return err
				}
			}
		}
	case ans.status == http.StatusTooManyRequests && ans.code() == "too_many_attempts" && rec.wrongTried >= 5:
	case ans.status == http.StatusUnprocessableEntity && ans.code() == "invalid_code" && ans.cutOff > 0:
		// A cut-off attempt may have won the challenge; the check decides.
	default:
		return fmt.Errorf("right code for challenge %s to %s (after %d wrong), %s after its send = %d %v", chID, ident, rec.wrongTried,
			time.Since(since).Round(time.Millisecond), ans.status, ans.body)
	}
	return nil
}

// ackTokens records an acknowledged token set and keeps it.
func (a *actor) ackTokens(ans answer, userID, kind string) *session {
	access, _ := ans.body["access"].(string)
	refresh, _ := ans.body["refresh"].(string)
	ac, rc := claims(access), claims(refresh)
	if ac.Sid == "" || rc.Jti == "" || rc.Sid != ac.Sid || ac.Sub != userID {
		a.w.ledger.odd("token set for user %s has access claims %+v and refresh claims %+v", userID, ac, rc)
		return nil
	}
	l := a.w.ledger
	l.mu.Lock()
	l.sessions[ac.Sid] = kind
	l.refresh[rc.Jti] = ac.Sid
	l.mu.Unlock()
	s := &session{user: userID, sid: ac.Sid, access: access, refresh: refresh, jti: rc.Jti}
	a.sessions = append(a.sessions, s)
	if len(a.sessions) > 20 {
		a.sessions = a.sessions[1:]
	}
	return s
}

// refresh rotates s's refresh token. A retry after a kill gets the same
// successor inside the grace window, or a 401 (reuse) after it.
func (a *actor) refresh(ctx context.Context, s *session) error {
	ans, err := a.do(ctx, "POST", "/v1/auth/"+a.w.appID+"/tokens/refresh", map[string]string{"X-Refresh-Token": s.refresh}, nil, nil)
	if err != nil {
		return err
	}
	switch {
	case ans.status == http.StatusOK:
		access, _ := ans.body["access"].(string)
		refresh, _ := ans.body["refresh"].(string)
		ac, rc := claims(access), claims(refresh)
		if rc.Sid != s.sid || ac.Sid != s.sid || rc.Jti == "" || rc.Jti == s.jti {
			return fmt.Errorf("refresh of session %s answered claims %+v / %+v", s.sid, ac, rc)
		}
		l := a.w.ledger
		l.mu.Lock()
		l.spent[s.jti] = true
		l.refresh[rc.Jti] = s.sid
		l.mu.Unlock()
		s.access, s.refresh, s.jti = access, refresh, rc.Jti
	case ans.status == http.StatusUnauthorized && ans.cutOff > 0:
		// The cut-off attempt rotated it and the grace window had passed
		// before the retry: reuse, which revokes the session.
		a.drop(s)
	default:
		return fmt.Errorf("refresh of session %s = %d %v", s.sid, ans.status, ans.body)
	}
	return nil
}

func (a *actor) drop(s *session) {
	for i, x := range a.sessions {
		if x == s {
			a.sessions = append(a.sessions[:i], a.sessions[i+1:]...)
			return
		}
	}
}

// refreshOld rotates a session kept from earlier, often across restarts.
func (a *actor) refreshOld(ctx context.Context) error {
	if len(a.sessions) == 0 {
		return a.otpFlow(ctx)
	}
	return a.refresh(ctx, a.sessions[a.rng.IntN(len(a.sessions))])
}

// updateMeta changes a signed-in user's first name to a value never used
// before, so each change has exactly one user.updated event to find (a
// request retried after a kill may make the change twice).
func (a *actor) updateMeta(ctx context.Context) error {
	if len(a.sessions) == 0 {
		return a.otpFlow(ctx)
	}
	s := a.sessions[a.rng.IntN(len(a.sessions))]
	a.made++
	value := fmt.Sprintf("n%d-%d", a.n, a.made)
	l := a.w.ledger
	l.mu.Lock()
	l.metaSent[value] = s.user
	l.mu.Unlock()
	ans, err := a.do(ctx, "PATCH", "/v1/auth/"+a.w.appID+"/current_user/meta", map[string]string{"X-Authorization": s.access},
		map[string]any{"user_meta": map[string]any{"first_name": value}}, nil)
	l.mu.Lock()
	l.metaTries[value] = ans.tries()
	l.mu.Unlock()
	if err != nil {
		return err
	}
	switch {
	case ans.status == http.StatusOK:
		l.mu.Lock()
		l.metaAcked[value] = true
		l.mu.Unlock()
	case ans.status == http.StatusUnauthorized:
		a.drop(s) // revoked by a refresh reuse
	default:
		return fmt.Errorf("update meta of %s = %d %v", s.user, ans.status, ans.body)
	}
	return nil
}

func (a *actor) magicFlow(ctx context.Context) error {
	ident := a.pickIdent()
	since := time.Now()
	send, err := a.do(ctx, "POST", "/v1/auth/"+a.w.appID+"/magic_links/login", nil, map[string]any{"identifier": ident}, a.sendHook(ident))
	if err != nil {
		return err
	}
	handle, userID := str(send.body, "magic_link", "id"), str(send.body, "user_id")
	if send.status != http.StatusOK || handle == "" || userID == "" {
		return fmt.Errorf("send magic link to %s = %d %v", ident, send.status, send.body)
	}
	a.ackUser(ident, userID)
	if send.cutOff > 0 {
		return a.settle(ctx, ident, since, "link") // ambiguous: see retriedSend
	}
	_, link, err := a.outbox(ctx, ident, since, "link")
	if err != nil {
		return err
	}
	if link, err = a.expand(ctx, link); err != nil {
		return err
	}
	u, err := url.Parse(link)
	tok := ""
	if err == nil {
		tok = u.Query().Get("sct_magic")
	}
	chID := claims(tok).Jti
	if chID == "" {
		return fmt.Errorf("outbox message to %s holds no magic link: %q", ident, link)
	}
	rec := &magicRec{user: userID, ident: ident}
	l := a.w.ledger
	l.mu.Lock()
	l.magic[chID] = rec
	l.mu.Unlock()

	if a.rng.IntN(5) == 0 || time.Since(since) > (magicTTL-10)*time.Second {
		// Never opened: it expires, or a newer link supersedes it. (A link
		// that arrived late, its attempt cut off by a kill and rescued,
		// may expire before it is opened.)
		return nil
	}
	if a.rng.IntN(3) == 0 {
		if _, err := a.poll(ctx, handle, chID, rec); err != nil {
			return err
		}
	}
	ans, err := a.do(ctx, "PATCH", "/v1/auth/"+a.w.appID+"/magic_links/authenticate", nil, map[string]any{"token": tok}, nil)
	l.mu.Lock()
	rec.openTried += ans.tries()
	l.mu.Unlock()
	if err != nil {
		return err
	}
	switch {
	case ans.status == http.StatusOK:
		l.mu.Lock()
		rec.opened = true
		l.mu.Unlock()
		a.ackTokens(ans, userID, "magic")
	case ans.status == http.StatusNotFound && ans.cutOff > 0:
		// A cut-off attempt opened it; the poll below tells.
	default:
		return fmt.Errorf("open magic link %s to %s, %s after its send = %d %v", chID, ident, time.Since(since).Round(time.Millisecond), ans.status, ans.body)
	}
	for range 20 {
		done, err := a.poll(ctx, handle, chID, rec)
		if err != nil || done {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
	return nil
}

// expand opens a short link (sent by SMS: {base_url}/m/{code}) and returns
// the consent link it redirects to; any other link is returned as it is.
func (a *actor) expand(ctx context.Context, link string) (string, error) {
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(u.Path, "/m/") {
		return link, nil
	}
	ans, err := a.do(ctx, "GET", u.Path, nil, nil, nil)
	if err != nil {
		return "", err
	}
	if ans.status != http.StatusSeeOther || ans.where == "" {
		return "", fmt.Errorf("open short link %q = %d, Location %q", link, ans.status, ans.where)
	}
	return ans.where, nil
}

// poll asks once for the link's tokens; done when they came or never will.
func (a *actor) poll(ctx context.Context, handle, chID string, rec *magicRec) (done bool, err error) {
	ans, err := a.do(ctx, "POST", "/v1/auth/"+a.w.appID+"/magic_links/status", nil, map[string]any{"id": handle}, nil)
	if err != nil {
		return false, err
	}
	switch {
	case ans.status == http.StatusOK:
		l := a.w.ledger
		l.mu.Lock()
		rec.collected = true
		l.mu.Unlock()
		a.ackTokens(ans, rec.user, "magic")
		return true, nil
	case ans.status == http.StatusConflict && ans.code() == "magic_link_pending",
		ans.status == http.StatusTooManyRequests:
		return false, nil
	case ans.status == http.StatusNotFound:
		return true, nil // collected by a cut-off poll
	}
	return true, fmt.Errorf("poll magic link %s = %d %v", chID, ans.status, ans.body)
}

// tokenClaims are the claims the checks read from a token.
type tokenClaims struct {
	Jti string `json:"jti"`
	Sid string `json:"sid"`
	Sub string `json:"sub"`
}

// claims decodes a JWT's payload without checking it (the server did).
func claims(tok string) tokenClaims {
	var c tokenClaims
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return c
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err == nil {
		_ = json.Unmarshal(raw, &c)
	}
	return c
}

// str walks nested JSON objects to a string.
func str(v map[string]any, path ...string) string {
	var cur any = v
	for _, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[k]
	}
	s, _ := cur.(string)
	return s
}
