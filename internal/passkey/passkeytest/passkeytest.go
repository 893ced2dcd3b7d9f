// Package passkeytest is a software authenticator for tests: it answers
// WebAuthn options the way a browser with a passkey would (packed self
// attestation, ES256), using descope/virtualwebauthn.
package passkeytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"

	vwa "github.com/descope/virtualwebauthn"
)

// Authenticator is a software authenticator and the page it answers for.
type Authenticator struct {
	RP   vwa.RelyingParty
	Auth vwa.Authenticator
}

// New returns an authenticator answering for origin under rpID, with user
// verification and a synced (backup-eligible, backed-up) credential, as a
// platform passkey is.
func New(rpID, origin string) *Authenticator {
	return &Authenticator{RP: vwa.RelyingParty{ID: rpID, Name: "Test", Origin: origin},
		Auth: vwa.NewAuthenticatorWithOptions(vwa.AuthenticatorOptions{BackupEligible: true, BackupState: true})}
}

// Create answers creation options (PublicKeyCredentialCreationOptionsJSON)
// with a new credential, which it keeps, and returns the browser's answer.
func (a *Authenticator) Create(options string) (string, vwa.Credential, error) {
	opts, err := vwa.ParseAttestationOptions(options)
	if err != nil {
		return "", vwa.Credential{}, fmt.Errorf("parse creation options: %w", err)
	}
	cred, err := NewCredential()
	if err != nil {
		return "", vwa.Credential{}, err
	}
	a.Auth.Options.UserHandle = []byte(opts.UserID)
	body := vwa.CreateAttestationResponse(a.RP, a.Auth, cred, *opts)
	a.Auth.AddCredential(cred)
	return body, cred, nil
}

// Get answers request options with the allowed credential it holds (its
// first, for a discoverable sign-in), advancing that credential's counter.
func (a *Authenticator) Get(options string) (string, error) {
	opts, err := vwa.ParseAssertionOptions(options)
	if err != nil {
		return "", fmt.Errorf("parse request options: %w", err)
	}
	cred := a.Auth.FindAllowedCredential(*opts)
	if len(opts.AllowCredentials) == 0 && len(a.Auth.Credentials) > 0 {
		cred = &a.Auth.Credentials[0]
	}
	if cred == nil {
		return "", errors.New("the authenticator holds none of the allowed credentials")
	}
	cred.Counter++
	return vwa.CreateAssertionResponse(a.RP, a.Auth, *cred, *opts), nil
}

// NewCredential is a P-256 credential whose coordinates are both 32 bytes
// long: virtualwebauthn encodes them without leading zero bytes, which a
// verifier rightly refuses (about 1 key in 128 otherwise).
func NewCredential() (vwa.Credential, error) {
	for {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return vwa.Credential{}, err
		}
		if len(k.X.Bytes()) != 32 || len(k.Y.Bytes()) != 32 { //nolint:staticcheck // what virtualwebauthn encodes
			continue
		}
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return vwa.Credential{}, err
		}
		return vwa.NewCredentialWithImportedKey(vwa.KeyTypeEC2, der), nil
	}
}
