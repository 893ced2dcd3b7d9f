package signin

import (
	"fmt"
	"testing"
	"time"
)

// TestVerifiedTokensGenerations: the cache of verified tokens keeps the
// current and the previous generation, starts a new one by age or when
// full, and never holds more than two generations' worth.
func TestVerifiedTokensGenerations(t *testing.T) {
	var v verifiedTokens
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	v.put("a", AccessClaims{UUID: "a"}, t0)
	v.put("b", AccessClaims{UUID: "b"}, t0.Add(time.Minute))
	if c, ok := v.get("a"); !ok || c.UUID != "a" {
		t.Fatalf("get(a) = %+v, %v; want the claims put", c, ok)
	}
	// One age later a new generation starts: a and b are still found.
	v.put("c", AccessClaims{UUID: "c"}, t0.Add(verifiedTokensAge))
	for _, k := range []string{"a", "b", "c"} {
		if _, ok := v.get(k); !ok {
			t.Errorf("%s was forgotten one generation later", k)
		}
	}
	// Another age later, the first generation is dropped.
	v.put("d", AccessClaims{UUID: "d"}, t0.Add(2*verifiedTokensAge))
	if _, ok := v.get("a"); ok {
		t.Error("a is still remembered two generations later")
	}
	if _, ok := v.get("c"); !ok {
		t.Error("c, of the previous generation, was forgotten")
	}
	// Full: the bound holds whatever the rate.
	now := t0.Add(3 * verifiedTokensAge)
	for i := range 3*verifiedTokensMax + 7 {
		v.put(fmt.Sprint("t", i), AccessClaims{}, now)
	}
	if n := v.size(); n > 2*verifiedTokensMax || n < verifiedTokensMax {
		t.Errorf("%d tokens remembered after %d puts; want between %d and %d", n, 3*verifiedTokensMax+7, verifiedTokensMax, 2*verifiedTokensMax)
	}
	if _, ok := v.get(fmt.Sprint("t", 3*verifiedTokensMax+6)); !ok {
		t.Error("the newest token is not remembered")
	}
}
