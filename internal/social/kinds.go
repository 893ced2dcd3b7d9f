// Package social keeps an app's social sign-in providers: Google, Apple,
// Microsoft, GitHub and any OpenID provider (docs/social-sign-in.md).
package social

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"regexp"
	"slices"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/errs"
)

// The provider types.
const (
	TypeGoogle    = "google"
	TypeApple     = "apple"
	TypeMicrosoft = "microsoft"
	TypeGitHub    = "github"
	TypeOIDC      = "oidc"
)

// Kind is a provider type: its label, the settings it takes and its
// defaults.
type Kind struct {
	Type  string
	Label string // the default name
	// Fields are the settings it takes besides client_id, in the order shown.
	Fields []Field
	// Scopes are asked for when the app sets none.
	Scopes []string
	// OpenID providers answer with an ID token: "openid" is always asked for.
	OpenID bool
	// Destination are the settings that say where its secrets are sent: a
	// change of one needs the secrets sent again (secretsFollowDestination).
	Destination []string
}

// Field is one setting of a provider type.
type Field struct {
	Name     string
	Secret   bool // sealed, never shown again (a hint instead)
	Required bool
}

// Kinds are the provider types, in the order the docs list them.
var Kinds = []Kind{
	{Type: TypeGoogle, Label: "Google", OpenID: true, Scopes: []string{"openid", "email", "profile"},
		Fields: []Field{{Name: "client_secret", Secret: true, Required: true}}},
	{Type: TypeApple, Label: "Apple", OpenID: true, Scopes: []string{"openid", "name", "email"},
		Fields: []Field{{Name: "team_id", Required: true}, {Name: "key_id", Required: true}, {Name: "private_key", Secret: true, Required: true}}},
	{Type: TypeMicrosoft, Label: "Microsoft", OpenID: true, Scopes: []string{"openid", "email", "profile"},
		Fields:      []Field{{Name: "tenant"}, {Name: "client_secret", Secret: true, Required: true}},
		Destination: []string{"tenant"}},
	{Type: TypeGitHub, Label: "GitHub", Scopes: []string{"read:user", "user:email"},
		Fields: []Field{{Name: "client_secret", Secret: true, Required: true}}},
	{Type: TypeOIDC, Label: "OpenID", OpenID: true, Scopes: []string{"openid", "email", "profile"},
		Fields:      []Field{{Name: "issuer", Required: true}, {Name: "client_secret", Secret: true, Required: true}},
		Destination: []string{"issuer"}},
}

// KindOf returns the provider type t.
func KindOf(t string) (Kind, bool) {
	i := slices.IndexFunc(Kinds, func(k Kind) bool { return k.Type == t })
	if i < 0 {
		return Kind{}, false
	}
	return Kinds[i], true
}

func (k Kind) field(name string) (Field, bool) {
	i := slices.IndexFunc(k.Fields, func(f Field) bool { return f.Name == name })
	if i < 0 {
		return Field{}, false
	}
	return k.Fields[i], true
}

func (k Kind) secret(name string) bool {
	f, ok := k.field(name)
	return ok && f.Secret
}

var (
	slugPattern   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,39}$`)
	appleIDFormat = regexp.MustCompile(`^[A-Z0-9]{10}$`)
	// A Microsoft tenant: one of the three audiences, a directory id or a
	// verified domain name.
	tenantPattern = regexp.MustCompile(`^(common|organizations|consumers|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|[a-zA-Z0-9][a-zA-Z0-9.-]{0,252}\.[a-zA-Z]{2,63})$`)
	colorPattern  = regexp.MustCompile(`^#[0-9a-fA-F]{6}$`)
	// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
	scopePattern = regexp.MustCompile(`^[\x21\x23-\x5B\x5D-\x7E]{1,128}$`)
)

// Limits on a provider's settings.
const (
	maxClientID = 255
	maxSecret   = 8192 // a .p8 key is about 250 bytes; a client secret far less
	maxScopes   = 20
	maxName     = 100
)

// checkSlug refuses a slug that is not 1 to 40 lower-case letters, digits
// and hyphens, starting with a letter or digit.
func checkSlug(slug string) error {
	if !slugPattern.MatchString(slug) {
		return errs.Invalidf("slug", "must be 1 to 40 lower-case letters, digits and hyphens, starting with a letter or digit")
	}
	return nil
}

// checkSettings refuses what k cannot work with: a missing required
// setting, a malformed one, or one k does not take.
func (k Kind) checkSettings(s map[string]string) error {
	for name := range s {
		if _, ok := k.field(name); !ok && name != "client_id" {
			return errs.Invalidf(name, "is not a setting of %s providers", k.Type)
		}
	}
	if id := s["client_id"]; id == "" {
		return errs.Invalidf("client_id", "is required")
	} else if len(id) > maxClientID || !printable(id) {
		return errs.Invalidf("client_id", "must be at most %d printable characters", maxClientID)
	}
	for _, f := range k.Fields {
		v := s[f.Name]
		switch {
		case v == "" && f.Required:
			return errs.Invalidf(f.Name, "is required for %s providers", k.Type)
		case v == "":
		case f.Secret && len(v) > maxSecret:
			return errs.Invalidf(f.Name, "must be at most %d characters", maxSecret)
		case !f.Secret && (len(v) > 2048 || !printable(v)):
			return errs.Invalidf(f.Name, "must be at most 2048 printable characters")
		}
	}
	switch k.Type {
	case TypeApple:
		for _, name := range []string{"team_id", "key_id"} {
			if !appleIDFormat.MatchString(s[name]) {
				return errs.Invalidf(name, "must be the 10 capital letters and digits Apple shows")
			}
		}
		if err := checkAppleKey(s["private_key"]); err != nil {
			return err
		}
	case TypeMicrosoft:
		if t := s["tenant"]; t != "" && !tenantPattern.MatchString(t) {
			return errs.Invalidf("tenant", "must be common, organizations, consumers, a directory (tenant) id or a domain name")
		}
	}
	return nil
}

// checkAppleKey refuses a private key that is not the PEM-encoded P-256
// key (PKCS #8) of a .p8 file Apple issues for Sign in with Apple.
func checkAppleKey(p8 string) error {
	block, _ := pem.Decode([]byte(strings.TrimSpace(p8)))
	if block == nil || block.Type != "PRIVATE KEY" {
		return errs.Invalidf("private_key", "must be the contents of the .p8 file Apple issued (-----BEGIN PRIVATE KEY-----)")
	}
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return errs.Invalidf("private_key", "is not a valid PKCS #8 private key")
	}
	if ec, ok := key.(*ecdsa.PrivateKey); !ok || ec.Curve != elliptic.P256() {
		return errs.Invalidf("private_key", "must be an ES256 (P-256) key, as Apple issues for Sign in with Apple")
	}
	return nil
}

// parseScopes reads scopes (space-separated, as in OAuth) for k: each a
// valid scope token, at most maxScopes, duplicates dropped, "openid" first
// for OpenID providers. Empty is k's defaults.
func (k Kind) parseScopes(raw string) ([]string, error) {
	fields := strings.Fields(raw)
	if len(fields) == 0 {
		return slices.Clone(k.Scopes), nil
	}
	if len(fields) > maxScopes {
		return nil, errs.Invalidf("scopes", "must be at most %d scopes", maxScopes)
	}
	var out []string
	if k.OpenID {
		out = append(out, "openid")
	}
	for _, s := range fields {
		if !scopePattern.MatchString(s) {
			return nil, errs.Invalidf("scopes", "must be OAuth scope tokens separated by spaces")
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
