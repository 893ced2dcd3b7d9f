package signin

import (
	"encoding/json"

	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// languages is the order of languages for a message to a user whose
// metadata is meta (JSON): the user's stored locale, then the request's
// Accept-Language (c.Languages; none for a message nobody asked for).
func languages(meta []byte, c Client) []string {
	var m struct {
		Locale any `json:"locale"`
	}
	_ = json.Unmarshal(meta, &m) // metadata is a stored JSON object; anything else has no locale
	return outbound.Languages(map[string]any{outbound.MetaLocaleKey: m.Locale}, c.Languages)
}

// userLanguages is languages for u with no request: its stored locale only.
func userLanguages(u store.AppUser) []string { return languages(u.Meta, Client{}) }
