// Package passkey is the WebAuthn relying party of one app: it makes
// registration and sign-in options and verifies what browsers answer. It
// wraps go-webauthn (pre-1.0) so nothing else depends on that library, and it
// keeps no state: ceremony data and credentials go to the caller to store.
package passkey

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"
)

// Timeout is how long a ceremony may take, from its options to its answer
// (WebAuthn's recommended default).
const Timeout = 300 * time.Second

// User-verification requirements and attestation conveyance preferences an
// app may choose.
var (
	UserVerifications = []string{"required", "preferred", "discouraged"}
	Attestations      = []string{"none", "indirect", "direct"}
)

// AcceptedFormats are the attestation statement formats a registration may
// carry; each statement's signature is verified. android-safetynet
// (retired by Google) and compound are refused.
var AcceptedFormats = []string{"none", "packed", "fido-u2f", "tpm", "android-key", "apple"}

// ErrInvalid is any answer from a browser that does not verify: malformed,
// for another origin or RP id, over another challenge, with a bad signature,
// without user verification the app requires, or a refused attestation.
var ErrInvalid = errors.New("passkey: verification failed")

// Settings are an app's relying-party settings.
type Settings struct {
	RPID             string   // a registrable domain: the origins' host or a parent of it
	RPName           string   // shown by the browser
	Origins          []string // exact origins a ceremony may come from
	UserVerification string   // required, preferred or discouraged
	Attestation      string   // none, indirect or direct
}

// RPIDFor returns the RP id an app uses: rpID when set, else its origin's host.
func RPIDFor(origin, rpID string) string {
	if rpID != "" {
		return rpID
	}
	u, err := url.Parse(origin)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// CheckRPID reports why rpID cannot serve origins, or nil: it must be a
// domain name (not an IP address) equal to, or a parent domain of, every
// origin's host.
func CheckRPID(rpID string, origins []string) error {
	if err := protocol.ValidateRPID(rpID); err != nil || strings.Trim(rpID, "0123456789.") == "" {
		return fmt.Errorf("%q is not a domain name", rpID)
	}
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil {
			return fmt.Errorf("origin %q does not parse", o)
		}
		h := u.Hostname()
		if h != rpID && !strings.HasSuffix(h, "."+rpID) {
			return fmt.Errorf("origin %s is not on %s or a subdomain of it", o, rpID)
		}
	}
	return nil
}

// RP is the relying party of one app.
type RP struct {
	s  Settings
	wa *webauthn.WebAuthn
}

// New returns the relying party for settings.
func New(s Settings) (*RP, error) {
	if !slices.Contains(UserVerifications, s.UserVerification) {
		s.UserVerification = "required"
	}
	if !slices.Contains(Attestations, s.Attestation) {
		s.Attestation = "none"
	}
	wa, err := webauthn.New(&webauthn.Config{
		RPID:                  s.RPID,
		RPDisplayName:         s.RPName,
		RPOrigins:             s.Origins,
		AttestationPreference: protocol.ConveyancePreference(s.Attestation),
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:      protocol.ResidentKeyRequirementPreferred,
			UserVerification: protocol.UserVerificationRequirement(s.UserVerification),
		},
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Enforce: true, Timeout: Timeout, TimeoutUVD: Timeout},
			Registration: webauthn.TimeoutConfig{Enforce: true, Timeout: Timeout, TimeoutUVD: Timeout},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("passkey: relying party %q: %w", s.RPID, err)
	}
	return &RP{s: s, wa: wa}, nil
}

// UserVerification is the app's requirement, as the options carry it.
func (rp *RP) UserVerification() string { return rp.s.UserVerification }

// User is whom a ceremony is for.
type User struct {
	Handle      []byte // the WebAuthn user handle: random, no personal data
	Name        string // the identifier the browser shows (e-mail or phone)
	DisplayName string
	Credentials []Stored
}

// Stored is a credential as the caller stores it.
type Stored struct {
	ID     []byte // the raw credential id
	Record []byte // Credential.Record of the registration, as updated by sign-ins
}

type waUser struct {
	u     User
	creds []webauthn.Credential
}

func (w *waUser) WebAuthnID() []byte                         { return w.u.Handle }
func (w *waUser) WebAuthnName() string                       { return w.u.Name }
func (w *waUser) WebAuthnDisplayName() string                { return w.u.DisplayName }
func (w *waUser) WebAuthnCredentials() []webauthn.Credential { return w.creds }

func toWA(u User) (*waUser, error) {
	w := &waUser{u: u}
	for _, s := range u.Credentials {
		var c webauthn.Credential
		if err := json.Unmarshal(s.Record, &c); err != nil {
			return nil, fmt.Errorf("passkey: stored credential: %w", err)
		}
		w.creds = append(w.creds, c)
	}
	return w, nil
}

// Ceremony is what a ceremony's options left for its answer: the challenge
// the browser signs over and the verifier's state (JSON) to store.
type Ceremony struct {
	Challenge string // base64url, as clientDataJSON carries it
	State     []byte
}

// BeginRegistration makes creation options for u, excluding the
// credentials u has. The options are the inner
// PublicKeyCredentialCreationOptions (not wrapped in publicKey).
func (rp *RP) BeginRegistration(u User) (json.RawMessage, Ceremony, error) {
	w, err := toWA(u)
	if err != nil {
		return nil, Ceremony{}, err
	}
	var exclude []protocol.CredentialDescriptor
	for _, c := range w.creds {
		exclude = append(exclude, c.Descriptor())
	}
	creation, session, err := rp.wa.BeginRegistration(w, webauthn.WithExclusions(exclude))
	if err != nil {
		return nil, Ceremony{}, fmt.Errorf("passkey: begin registration: %w", err)
	}
	return marshalCeremony(creation.Response, session)
}

// BeginLogin makes request options listing allow (the user's credentials,
// or stand-ins for an unknown user); with none it is a discoverable sign-in
// (the browser offers whatever passkey it has for this RP). userHandle is
// the user the ceremony is for, nil for a discoverable sign-in.
func (rp *RP) BeginLogin(userHandle []byte, allow []Descriptor) (json.RawMessage, Ceremony, error) {
	list := make([]protocol.CredentialDescriptor, 0, len(allow))
	for _, d := range allow {
		list = append(list, protocol.CredentialDescriptor{Type: protocol.PublicKeyCredentialType, CredentialID: d.ID,
			Transport: transports(d.Transports)})
	}
	assertion, session, err := rp.wa.BeginDiscoverableLogin(webauthn.WithAllowedCredentials(list),
		webauthn.WithUserVerification(protocol.UserVerificationRequirement(rp.s.UserVerification)))
	if err != nil {
		return nil, Ceremony{}, fmt.Errorf("passkey: begin login: %w", err)
	}
	session.UserID = userHandle
	return marshalCeremony(assertion.Response, session)
}

// Descriptor names a credential in allowCredentials.
type Descriptor struct {
	ID         []byte
	Transports []string
}

func transports(in []string) []protocol.AuthenticatorTransport {
	out := make([]protocol.AuthenticatorTransport, 0, len(in))
	for _, t := range in {
		out = append(out, protocol.AuthenticatorTransport(t))
	}
	return out
}

func marshalCeremony(options any, session *webauthn.SessionData) (json.RawMessage, Ceremony, error) {
	opts, err := json.Marshal(options)
	if err != nil {
		return nil, Ceremony{}, err
	}
	// Expiry is the caller's (it keeps its own clock); the stored state
	// carries none, so the library's wall-clock check never disagrees.
	session.Expires = time.Time{}
	state, err := json.Marshal(session)
	if err != nil {
		return nil, Ceremony{}, err
	}
	return opts, Ceremony{Challenge: session.Challenge, State: state}, nil
}

// Registration is a parsed registration answer.
type Registration struct {
	parsed *protocol.ParsedCredentialCreationData
	// Challenge is the challenge it signed over: the caller finds the
	// ceremony by it.
	Challenge string
}

// ParseRegistration reads a browser's registration answer (the JSON of
// PublicKeyCredential with an attestation).
func ParseRegistration(body []byte) (Registration, error) {
	p, err := protocol.ParseCredentialCreationResponseBytes(body)
	if err != nil {
		return Registration{}, fmt.Errorf("%w: %s", ErrInvalid, describe(err))
	}
	return Registration{parsed: p, Challenge: p.Response.CollectedClientData.Challenge}, nil
}

// Credential is a newly registered credential.
type Credential struct {
	ID                []byte
	Record            []byte // what sign-ins verify against; store as is
	AAGUID            string
	AttestationFormat string
	Attachment        string // platform or cross-platform
	Transports        []string
	BackupEligible    bool
	BackedUp          bool
	SignCount         uint32
}

// FinishRegistration verifies a registration answer against the ceremony
// begun for u (state): challenge, origin, RP id, user presence and
// verification as the app requires, the attestation statement, and the
// accepted formats.
func (rp *RP) FinishRegistration(u User, state []byte, r Registration) (Credential, error) {
	var session webauthn.SessionData
	if err := json.Unmarshal(state, &session); err != nil {
		return Credential{}, fmt.Errorf("passkey: ceremony state: %w", err)
	}
	w, err := toWA(u)
	if err != nil {
		return Credential{}, err
	}
	c, err := rp.wa.CreateCredential(w, session, r.parsed)
	if err != nil {
		return Credential{}, fmt.Errorf("%w: %s", ErrInvalid, describe(err))
	}
	if !slices.Contains(AcceptedFormats, c.AttestationFormat) {
		return Credential{}, fmt.Errorf("%w: attestation format %q is not accepted", ErrInvalid, c.AttestationFormat)
	}
	record, err := json.Marshal(c)
	if err != nil {
		return Credential{}, err
	}
	out := Credential{ID: c.ID, Record: record, AttestationFormat: c.AttestationFormat,
		Attachment:     attachment(string(c.Authenticator.Attachment), r.parsed.Response.Transports),
		BackupEligible: c.Flags.BackupEligible, BackedUp: c.Flags.BackupState, SignCount: c.Authenticator.SignCount}
	for _, t := range r.parsed.Response.Transports {
		out.Transports = append(out.Transports, string(t))
	}
	if id, err := uuid.FromBytes(c.Authenticator.AAGUID); err == nil {
		out.AAGUID = id.String()
	}
	return out, nil
}

// attachment is the credential's authenticator attachment as the browser
// reported it; when it did not, a credential reachable only internally or
// by hybrid is taken for a platform one.
func attachment(reported string, ts []protocol.AuthenticatorTransport) string {
	if reported == "platform" || reported == "cross-platform" {
		return reported
	}
	for _, t := range ts {
		if t == protocol.USB || t == protocol.NFC || t == protocol.BLE {
			return "cross-platform"
		}
	}
	if len(ts) > 0 {
		return "platform"
	}
	return "cross-platform"
}

// Assertion is a parsed sign-in answer.
type Assertion struct {
	parsed *protocol.ParsedCredentialAssertionData
	// Challenge is the challenge it signed over.
	Challenge string
	// CredentialID is the credential's id, base64url without padding.
	CredentialID string
	// UserHandle is the user handle the authenticator returned (may be empty).
	UserHandle []byte
}

// ParseAssertion reads a browser's sign-in answer.
func ParseAssertion(body []byte) (Assertion, error) {
	p, err := protocol.ParseCredentialRequestResponseBytes(body)
	if err != nil {
		return Assertion{}, fmt.Errorf("%w: %s", ErrInvalid, describe(err))
	}
	return Assertion{parsed: p, Challenge: p.Response.CollectedClientData.Challenge,
		CredentialID: EncodeID(p.RawID), UserHandle: p.Response.UserHandle}, nil
}

// Use is a credential's state after a verified sign-in.
type Use struct {
	Record    []byte
	SignCount uint32
	BackedUp  bool
	// Cloned: the signature counter did not advance past the stored one,
	// the mark of a cloned authenticator. The caller refuses the sign-in.
	Cloned bool
}

// FinishLogin verifies a sign-in answer by u against the ceremony state:
// challenge, origin, RP id, that the credential was allowed and is u's, the
// user handle, user presence and verification as required, the signature
// and the backup flags. u's Credentials need hold only the one used (the
// caller has checked that it is u's).
func (rp *RP) FinishLogin(u User, state []byte, a Assertion) (Use, error) {
	var session webauthn.SessionData
	if err := json.Unmarshal(state, &session); err != nil {
		return Use{}, fmt.Errorf("passkey: ceremony state: %w", err)
	}
	if len(session.AllowedCredentialIDs) > 0 {
		// The library wants every allowed credential among u's; the one
		// that answered being allowed is what matters, so narrow the list.
		if !slices.ContainsFunc(session.AllowedCredentialIDs, func(id []byte) bool { return bytes.Equal(id, a.parsed.RawID) }) {
			return Use{}, fmt.Errorf("%w: the credential was not offered for this sign-in", ErrInvalid)
		}
		session.AllowedCredentialIDs = [][]byte{a.parsed.RawID}
	}
	w, err := toWA(u)
	if err != nil {
		return Use{}, err
	}
	var c *webauthn.Credential
	if len(session.UserID) == 0 {
		// A discoverable sign-in: the authenticator names the user.
		if !bytes.Equal(a.UserHandle, u.Handle) {
			return Use{}, fmt.Errorf("%w: the user handle is not the credential owner's", ErrInvalid)
		}
		_, c, err = rp.wa.ValidatePasskeyLogin(func(_, _ []byte) (webauthn.User, error) { return w, nil }, session, a.parsed)
	} else {
		c, err = rp.wa.ValidateLogin(w, session, a.parsed)
	}
	if err != nil {
		return Use{}, fmt.Errorf("%w: %s", ErrInvalid, describe(err))
	}
	record, err := json.Marshal(c)
	if err != nil {
		return Use{}, err
	}
	return Use{Record: record, SignCount: c.Authenticator.SignCount, BackedUp: c.Flags.BackupState,
		Cloned: c.Authenticator.CloneWarning}, nil
}

// EncodeID writes a credential id as browsers name it: base64url, no padding.
func EncodeID(id []byte) string { return base64.RawURLEncoding.EncodeToString(id) }

// DecodeID reads a credential id written by EncodeID.
func DecodeID(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }

// describe is the library's error with its details, for logs and 4xx
// messages; it never holds key material.
func describe(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Details != "" {
		return pe.Details
	}
	return err.Error()
}
