package signin

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"math/big"
	mrand "math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// magicClaims are what the client SDK decodes from a magic-link token
// (client-compat §4.1); the server checks the signature and the single-use row.
type magicClaims struct {
	token.Claims
	UUID            string `json:"uuid"`
	UserStatus      string `json:"user_status"`
	Email           string `json:"email,omitempty"`
	Phone           string `json:"phone,omitempty"`
	WebauthnEnabled bool   `json:"webauthnEnabled"`
	Purpose         string `json:"purpose"`
}

// SendMagicLink e-mails (or texts) a link to the consent page carrying a
// single-use token, and returns a separate polling handle to the device that
// asked, so it can collect its own session once the link is opened on that
// device or approved on another. The match number is shown by both devices.
func (s *Service) SendMagicLink(ctx context.Context, app store.App, identifier string, meta map[string]any, webauthn bool, c Client) (_ SendResult, err error) {
	defer errs.Wrap(&err, "send magic link")
	return s.sendMagic(ctx, app, identifier, meta, webauthn, "", c)
}

// SendHostedMagicLink is SendMagicLink for the hosted sign-in page
// (docs/hosted-pages.md): the same limits, answers and message, and the
// link's opener, when it is the device that asked or chooses "Sign in
// here", goes to landing (a path of this server, "/login/..."), with the
// token in sct_magic, instead of the app's login page. Opening it there
// signs in that browser only: the poll handle then collects nothing, so
// the hosted page's waiting tab cannot open a second session.
func (s *Service) SendHostedMagicLink(ctx context.Context, app store.App, identifier, landing string, c Client) (_ SendResult, err error) {
	defer errs.Wrap(&err, "send magic link")
	if !strings.HasPrefix(landing, "/login/") {
		return SendResult{}, errs.Invalidf("landing", "must be a hosted sign-in page")
	}
	return s.sendMagic(ctx, app, identifier, nil, false, landing, c)
}

func (s *Service) sendMagic(ctx context.Context, app store.App, identifier string, meta map[string]any, webauthn bool, landing string, c Client) (SendResult, error) {
	r, err := s.resolve(ctx, app, identifier, meta, c)
	if err != nil {
		return SendResult{}, err
	}
	ttl := time.Duration(app.MagicLinkExpiration) * time.Second
	return s.sendTo(ctx, app, &r, func() (SendResult, error) {
		if r.User == nil { // nothing may be sent: the answer is a decoy's
			now := s.clock()
			return SendResult{ChallengeID: s.decoyHandle(now.Add(ttl)), SentAt: now, UserID: newID(), Sent: true,
				MatchNumber: matchNumber(), MetaErrors: r.MetaErrors}, nil
		}
		return s.sendMagicLink(ctx, app, r, ttl, webauthn, landing, c)
	})
}

// sendMagicLink issues a magic-link challenge for r, whose user is set.
func (s *Service) sendMagicLink(ctx context.Context, app store.App, r recipient, ttl time.Duration, webauthn bool, landing string, c Client) (SendResult, error) {
	u := r.User
	ch := s.newChallenge(app, r, MethodMagicLink, 1, ttl, c)
	if landing != "" {
		d := decodeData(ch)
		d.HostedLanding = landing
		ch.Data = encodeData(d)
	}
	ch.WebauthnEnabled, ch.MatchNumber, ch.Location = webauthn, matchNumber(), truncate(c.Location, 120)
	tok, err := s.keys.Sign(token.TypeMagic, magicClaims{
		Claims: token.Claims{Issuer: s.settings.Issuer, Subject: u.ID, Audience: token.Audience{app.ID}, IssuedAt: ch.CreatedAt.Unix(),
			Expiry: ch.ExpiresAt.Unix(), ID: ch.ID},
		UUID: u.ID, UserStatus: u.Status, Email: u.Email, Phone: u.Phone, WebauthnEnabled: webauthn, Purpose: "magic_link",
	})
	if err != nil {
		return SendResult{}, err
	}
	handle := token.RandomString(32)
	ch.SecretHash, ch.PollHash = s.hasher.Hash("magic", tok), s.hasher.Hash("magic-poll", handle)
	link := s.consentLink(app, tok)
	if r.ID.Kind == appuser.KindPhone { // one SMS segment, not five
		if link, err = s.shortLink(&ch, tok); err != nil {
			return SendResult{}, err
		}
	}
	msg := outbound.Request{Template: courier.TemplateMagicLink, To: r.ID.Value, Vars: courier.Vars{Link: link, ExpiresIn: ttl,
		RequestedFrom: describeRequester(ch)}, Langs: outbound.Languages(u.Meta, c.Languages)}
	sent, err := s.issue(ctx, app, r, ch, []string{MethodMagicLink}, msg)
	if err != nil {
		return SendResult{}, err
	}
	return SendResult{ChallengeID: handle, SentAt: ch.CreatedAt, UserID: u.ID, Sent: sent, MetaErrors: r.MetaErrors,
		MatchNumber: ch.MatchNumber}, nil
}

// consentLink is the e-mailed link: this server's page for the app, which
// sends the requesting device straight on to the app and asks any other
// device whether the request was the user's. It is built from base_url,
// never from a request's Host header.
func (s *Service) consentLink(app store.App, tok string) string {
	return s.settings.BaseURL + "/v1/auth/" + url.PathEscape(app.ID) + "/magic_links/open?" +
		url.Values{"sct_magic": {tok}}.Encode()
}

// Match numbers are two-digit: 10 to 99.
const minMatch, maxMatch = 10, 99

// matchNumber is the two-digit number the requesting device shows; the
// consent page asks for it, so the user proves the two belong together.
func matchNumber() int {
	n, err := rand.Int(rand.Reader, big.NewInt(maxMatch-minMatch+1))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return int(n.Int64()) + minMatch
}

// matchChoices are the three numbers the consent page offers: ch's match
// number and two decoys, in a shuffled order. They come from a keyed hash of
// the challenge id, so every reload of the page offers the same three in the
// same order (reloading cannot narrow them down), and nobody without the
// server's key can tell the right one from the decoys: the decoys are uniform
// over the other two-digit numbers and the order is a uniform shuffle.
func (s *Service) matchChoices(ch store.Challenge) []int {
	var seed [32]byte
	sum, _ := hex.DecodeString(s.hasher.Hash("magic-choices", ch.ID))
	copy(seed[:], sum)
	// A deterministic generator on purpose: the seed is the secret part.
	r := mrand.New(mrand.NewChaCha8(seed))
	out := []int{ch.MatchNumber}
	for len(out) < 3 {
		if n := minMatch + r.IntN(maxMatch-minMatch+1); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// describeRequester names the requesting device for the e-mail.
func describeRequester(ch store.Challenge) string {
	// A part that is not known is left out, not shown empty: a client
	// whose system is unknown (curl, a script) reads "curl, 192.0.2.1".
	device, os := DescribeUserAgent(ch.UserAgent)
	if os != "" {
		device += " on " + os
	}
	out := device
	if ch.IP != "" {
		out += ", " + ch.IP
	}
	if ch.Location != "" {
		out += " (" + ch.Location + ")"
	}
	return out
}

// sameDevice reports whether c is the device that asked for ch: the same
// address and the same browser. It is a heuristic that only ever saves a
// click: a device that does not match gets the consent page.
func sameDevice(ch store.Challenge, c Client) bool {
	return c.IP != "" && c.UserAgent != "" && ch.IP == c.IP && ch.UserAgent == truncate(c.UserAgent, 512)
}

// parseMagic checks a magic-link token's signature, type, app and expiry;
// anything wrong is ErrMagicLinkNotFound, as the SDK expects.
func (s *Service) parseMagic(app store.App, tok string) (magicClaims, error) {
	var c magicClaims
	if _, err := s.keys.Verify(tok, token.TypeMagic, &c); err != nil {
		return c, ErrMagicLinkNotFound
	}
	if err := c.Validate(s.settings.Issuer, app.ID, s.now.Read(), true); err != nil || c.Purpose != "magic_link" {
		return c, ErrMagicLinkNotFound
	}
	return c, nil
}

// AuthenticateMagicLink signs in the device that opened a link: it spends
// the link and starts a session. The device that asked for the link gets its
// own session from MagicLinkStatus only when this is that same device; a
// link opened elsewhere this way signs in the opener alone, and the poll
// handle dies (consent, on the page, is what releases a poller elsewhere).
func (s *Service) AuthenticateMagicLink(ctx context.Context, app store.App, tok string, c Client) (set TokenSet, err error) {
	return s.authenticateMagic(ctx, app, tok, c, false)
}

// AuthenticateHostedMagicLink is AuthenticateMagicLink for the hosted
// sign-in page's landing: only a link that page asked for (its challenge
// names the landing) signs in there; a link an app asked for, a social
// sign-in's or a hand-off's token is ErrMagicLinkNotFound, as if unknown.
func (s *Service) AuthenticateHostedMagicLink(ctx context.Context, app store.App, tok string, c Client) (TokenSet, error) {
	return s.authenticateMagic(ctx, app, tok, c, true)
}

func (s *Service) authenticateMagic(ctx context.Context, app store.App, tok string, c Client, hostedOnly bool) (set TokenSet, err error) {
	defer errs.Wrap(&err, "authenticate magic link")
	method := MethodMagicLink
	defer func() {
		if method != MethodHosted { // the hosted page's sign-in was counted there
			s.countSignIn(method, set.MFA != nil, err)
		}
	}()
	// A social sign-in's token (sct_magic on the app's callback) comes
	// here too, as the client SDK treats it as a magic link's, and so does
	// the hosted sign-in page's hand-off (hosted.go).
	ch, err := s.openToken(ctx, app, tok, MethodMagicLink, MethodOAuth, MethodHosted)
	if err != nil {
		return TokenSet{}, err
	}
	if hostedOnly && (ch.Method != MethodMagicLink || decodeData(ch).HostedLanding == "") {
		return TokenSet{}, ErrMagicLinkNotFound
	}
	method = ch.Method
	consent := store.ConsentOpenerOnly
	if sameDevice(ch, c) && decodeData(ch).HostedLanding == "" {
		consent = store.ConsentSameDevice
	}
	now := s.clock()
	var out TokenSet
	var spent bool
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		won, err := tx.CompleteChallenge(ctx, ch.ID, now, consent)
		if err != nil {
			return err
		}
		if !won {
			// A genuine link, used again or after a newer one: a failed login
			// of that user, recorded (the transaction commits) and refused.
			spent = true
			return s.emitLoginFailed(ctx, tx, ch, "link_used_or_superseded")
		}
		if ch.Method == MethodOAuth {
			out, err = s.signInExternalChallenge(ctx, tx, app, ch, now, c)
			return err
		}
		if ch.Method == MethodHosted {
			out, err = s.signInHostedChallenge(ctx, tx, app, ch, now, c)
			return err
		}
		out, err = s.signInVerified(ctx, tx, app, ch, linkFactor(ch), now, c, ErrMagicLinkNotFound)
		return err
	})
	if err == nil && spent {
		return TokenSet{}, ErrMagicLinkNotFound
	}
	return out, err
}

// openLink finds the challenge behind a genuine magic-link token of app.
func (s *Service) openLink(ctx context.Context, app store.App, tok string) (store.Challenge, error) {
	return s.openToken(ctx, app, tok, MethodMagicLink)
}

// openToken finds the challenge behind a genuine magic-link style token of
// app whose method is one of methods.
func (s *Service) openToken(ctx context.Context, app store.App, tok string, methods ...string) (store.Challenge, error) {
	if _, err := s.parseMagic(app, tok); err != nil {
		return store.Challenge{}, err
	}
	ch, err := s.db.GetChallengeBySecret(ctx, s.hasher.Hash("magic", tok))
	if err != nil || ch.AppID != app.ID || !slices.Contains(methods, ch.Method) {
		return store.Challenge{}, notFound(err)
	}
	return ch, nil
}

// LinkConsent is what the consent page shows about a pending magic link.
type LinkConsent struct {
	// SameDevice: the opener is the device that asked; the page sends it
	// straight on to AppLink.
	SameDevice bool
	// AppLink is the app's sign-in page with the token, where the opener
	// signs in on this device instead (sct_magic, as the client SDK reads).
	AppLink string
	// The requesting device, as the request that asked for the link showed it.
	Browser, OS, IP, Location string
	RequestedAt, ExpiresAt    time.Time
	// Choices are three numbers, the one the requesting device shows among
	// them, the same on every opening; the page asks which it is and never
	// says.
	Choices   []int
	Recipient string // masked
}

// OpenMagicLink reads what the consent page shows for a link. It changes
// nothing: opening a link (a scanner's GET included) neither spends it nor
// signs anyone in.
func (s *Service) OpenMagicLink(ctx context.Context, app store.App, tok string, c Client) (_ LinkConsent, err error) {
	defer errs.Wrap(&err, "open magic link")
	ch, err := s.openLink(ctx, app, tok)
	if err != nil {
		return LinkConsent{}, err
	}
	if ch.Status != store.ChallengePending || !s.clock().Before(ch.ExpiresAt) {
		return LinkConsent{}, ErrMagicLinkNotFound
	}
	browser, os := DescribeUserAgent(ch.UserAgent)
	appLink := appuser.AppLink(app, "sct_magic", tok)
	if landing := decodeData(ch).HostedLanding; landing != "" { // back to the hosted page that asked
		sep := "?"
		if strings.Contains(landing, "?") {
			sep = "&"
		}
		appLink = s.settings.BaseURL + landing + sep + url.Values{"sct_magic": {tok}}.Encode()
	}
	return LinkConsent{SameDevice: sameDevice(ch, c), AppLink: appLink,
		Browser: browser, OS: os, IP: ch.IP, Location: ch.Location, RequestedAt: ch.CreatedAt, ExpiresAt: ch.ExpiresAt,
		Choices: s.matchChoices(ch), Recipient: courier.MaskAddress(ch.Recipient)}, nil
}

// Consent decisions and denial reasons the consent page sends.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"

	DenialNotRequested   = "not_requested"
	DenialNumberMismatch = "number_mismatch"
)

// ConsentAnswer is the consent page's form, as sent.
type ConsentAnswer struct {
	Decision string // DecisionApprove or DecisionDeny
	// Number goes with approve: the number the person picked. Anything but
	// the requesting device's number (none, malformed, wrong) denies.
	Number string
	Reason string // goes with deny: DenialNotRequested (the default) or DenialNumberMismatch
}

// DecideMagicLink records the recipient's answer on the consent page and
// reports whether it approved. Approve with the requesting device's number
// verifies the contact and releases a session to the device that asked (its
// next poll collects it). Approve with any other number, or none, is the one
// guess the link gets: it denies, as Deny does, with denial_reason
// number_mismatch, so a person who did not compare, or a scanner pressing
// buttons, cannot approve. Either way the link is spent, in one
// compare-and-set that exactly one answer wins, and the event carries
// consent_decision.
func (s *Service) DecideMagicLink(ctx context.Context, app store.App, tok string, a ConsentAnswer, c Client) (approved bool, err error) {
	defer errs.Wrap(&err, "decide magic link")
	if a.Decision != DecisionApprove && a.Decision != DecisionDeny {
		return false, &errs.Invalid{Field: "decision", Reason: "must be approve or deny"}
	}
	reason := DenialNotRequested
	if a.Reason == DenialNumberMismatch {
		reason = DenialNumberMismatch
	}
	ch, err := s.openLink(ctx, app, tok)
	if err != nil {
		return false, err
	}
	approve := a.Decision == DecisionApprove && rightNumber(ch, a.Number)
	if a.Decision == DecisionApprove && !approve {
		reason = DenialNumberMismatch
	}
	now := s.clock()
	browser, os := DescribeUserAgent(c.UserAgent)
	decidedBy := webhook.DecidedBy{IPAddress: c.IP, Browser: browser, OS: os}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if !approve {
			won, err := tx.DenyChallenge(ctx, ch.ID, now)
			if err != nil || !won {
				return cmp.Or(err, ErrMagicLinkNotFound)
			}
			msg := "magic link denied by its recipient"
			if a.Decision == DecisionApprove {
				msg = "magic link denied: the consent page was answered with the wrong number"
			}
			s.log.WarnContext(ctx, msg, "app_id", app.ID, "challenge_id", ch.ID, "reason", reason)
			return s.emitVerification(ctx, tx, ch, webhook.OutcomeDenied, &now, &consent{denialReason: reason, by: decidedBy})
		}
		won, err := tx.CompleteChallenge(ctx, ch.ID, now, store.ConsentApproved)
		if err != nil || !won {
			return cmp.Or(err, ErrMagicLinkNotFound)
		}
		_, err = s.verifyContact(ctx, tx, app, ch, now, ErrMagicLinkNotFound, &consent{by: decidedBy})
		return err
	})
	return approve && err == nil, err
}

// rightNumber reports whether number, as the form sent it, is ch's match
// number: plain decimal digits, nothing else.
func rightNumber(ch store.Challenge, number string) bool {
	if len(number) > 2 {
		return false
	}
	n, err := strconv.Atoi(number)
	return err == nil && n >= minMatch && n == ch.MatchNumber
}

func notFound(err error) error {
	if err == nil || errors.Is(err, store.ErrNotFound) {
		return ErrMagicLinkNotFound
	}
	return err
}

// MagicLinkStatus is polled by the device that asked for a link: pending
// until the link is opened, then a token set for this device exactly once,
// then not found. Polling faster than the poll interval is refused.
func (s *Service) MagicLinkStatus(ctx context.Context, app store.App, handle string, c Client) (set TokenSet, err error) {
	defer errs.Wrap(&err, "magic link status")
	defer func() { s.countSignIn(MethodMagicLink, set.MFA != nil, err) }()
	pollHash := s.hasher.Hash("magic-poll", handle)
	// Pacing is per handle and the same for real handles and decoys, so the
	// answers cannot tell them apart.
	if s.limits.PollInterval > 0 {
		if err := s.allow(ctx, bucket{key: "poll:" + pollHash, rule: ratelimit.Rule{Limit: 1, Period: s.limits.PollInterval}}); err != nil {
			var rl *RateLimitedError
			if errors.As(err, &rl) {
				rl.SlowDown = true
			}
			return TokenSet{}, err
		}
	}
	now := s.clock()
	ch, err := s.db.GetChallengeByPoll(ctx, pollHash)
	if errors.Is(err, store.ErrNotFound) && s.decoyPending(handle, now) {
		return TokenSet{}, ErrMagicLinkPending
	}
	if err != nil || ch.AppID != app.ID {
		return TokenSet{}, notFound(err)
	}
	switch {
	case ch.Status == store.ChallengePending && now.Before(ch.ExpiresAt):
		return TokenSet{}, ErrMagicLinkPending
	case ch.Status == store.ChallengeDenied:
		return TokenSet{}, ErrMagicLinkDenied
	case ch.Status != store.ChallengeCompleted || ch.CollectedAt != nil ||
		(ch.Consent != store.ConsentSameDevice && ch.Consent != store.ConsentApproved):
		return TokenSet{}, ErrMagicLinkNotFound
	}
	var out TokenSet
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		won, err := tx.CollectChallenge(ctx, ch.ID, now)
		if err != nil {
			return err
		}
		if !won {
			return ErrMagicLinkNotFound
		}
		u, err := tx.GetAppUser(ctx, app.ID, ch.AppUserID)
		if err != nil || u.Status != store.StatusActive {
			return notFound(err)
		}
		client := Client{IP: ch.IP, UserAgent: ch.UserAgent}
		if c.IP != "" {
			client = c
		}
		out, err = s.startSession(ctx, tx, app, u, linkFactor(ch), client)
		return err
	})
	return out, err
}

// ConfirmInvite accepts an invitation (appuser spends it, stores the
// metadata the user gave and activates the user) and starts a session, in
// one transaction. A bad invitation is ErrMagicLinkNotFound, as the client
// SDK expects for any link.
func (s *Service) ConfirmInvite(ctx context.Context, app store.App, tok string, meta map[string]any, c Client) (set TokenSet, err error) {
	defer errs.Wrap(&err, "confirm invite")
	defer func() { s.countSignIn(methodInvite, set.MFA != nil, err) }()
	inv, err := s.users.ParseInvitation(app, tok)
	if err != nil {
		return TokenSet{}, ErrMagicLinkNotFound
	}
	var out TokenSet
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		u, err := s.users.AcceptInvitation(ctx, tx, app, inv, meta)
		if errors.Is(err, appuser.ErrInvitationNotFound) {
			return ErrMagicLinkNotFound
		}
		if err != nil {
			return err
		}
		out, err = s.startSession(ctx, tx, app, u, inviteFactor(u), c)
		return err
	})
	return out, err
}
