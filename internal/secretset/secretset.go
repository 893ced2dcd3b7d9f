// Package secretset stores a provider's settings: the plain ones as a JSON
// object, the secret ones as another, sealed with the master key and bound
// to their owner, and shows a secret only as a hint. The apps' message
// providers and social sign-in providers keep their settings this way.
package secretset

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/gatehouse-auth/gatehouse/internal/token"
)

// hintMin is the shortest secret whose hint shows its last 4 characters.
const hintMin = 16

// Hint is how a secret setting is shown: its last 4 characters when it is
// long enough for them to say little, else a mask alone.
func Hint(secret string) string {
	r := []rune(secret)
	if len(r) >= hintMin {
		return "****" + string(r[len(r)-4:])
	}
	return "********"
}

// Seal splits settings into the plain ones (JSON) and the secret ones
// (JSON sealed with additional data ad; nil when there are none).
func Seal(s *token.Sealer, settings map[string]string, secret func(name string) bool, ad []byte) (plain, sealed []byte, err error) {
	p, sec := map[string]string{}, map[string]string{}
	for name, v := range settings {
		if secret(name) {
			sec[name] = v
		} else {
			p[name] = v
		}
	}
	if plain, err = json.Marshal(p); err != nil {
		return nil, nil, err
	}
	if len(sec) == 0 {
		return plain, nil, nil
	}
	b, err := json.Marshal(sec)
	if err != nil {
		return nil, nil, err
	}
	if sealed, err = s.Seal(b, ad); err != nil {
		return nil, nil, err
	}
	return plain, sealed, nil
}

// Open joins what Seal made back into the settings, in clear.
func Open(s *token.Sealer, plain, sealed, ad []byte) (map[string]string, error) {
	out := map[string]string{}
	if len(plain) > 0 {
		if err := json.Unmarshal(plain, &out); err != nil {
			return nil, fmt.Errorf("settings: %w", err)
		}
	}
	if len(sealed) > 0 {
		b, err := s.Open(sealed, ad)
		if err != nil {
			return nil, fmt.Errorf("secret settings: %w", err)
		}
		secrets := map[string]string{}
		if err := json.Unmarshal(b, &secrets); err != nil {
			return nil, fmt.Errorf("secret settings: %w", err)
		}
		maps.Copy(out, secrets)
	}
	return out, nil
}
