package social

import (
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// appleAudience is the audience of the client secrets Apple accepts.
const appleAudience = "https://appleid.apple.com"

// appleSecretTTL is how long a minted client secret is valid: one is
// minted for each code exchange, so minutes are enough (Apple allows up to
// six months).
const appleSecretTTL = 5 * time.Minute

// AppleClientSecret mints the client secret Sign in with Apple asks for at
// its token endpoint: a JWT signed (ES256) with the developer's .p8 key,
// naming the team (iss), the Services ID (sub) and the key (kid).
func AppleClientSecret(teamID, keyID, clientID, p8 string, now time.Time) (string, error) {
	if err := checkAppleKey(p8); err != nil {
		return "", err
	}
	block, _ := pem.Decode([]byte(strings.TrimSpace(p8)))
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key.(*ecdsa.PrivateKey)},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", keyID))
	if err != nil {
		return "", err
	}
	return jwt.Signed(signer).Claims(jwt.Claims{Issuer: teamID, Subject: clientID, Audience: jwt.Audience{appleAudience},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(appleSecretTTL))}).Serialize()
}
