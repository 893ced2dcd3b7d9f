package ratelimit

import (
	"context"
	"strings"
	"testing"
	"time"
)

// FuzzParseRule checks that an accepted rule is in range, prints back to
// itself, and limits as documented: Limit events at once, then one per
// interval.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{
		"5/10m", "30/1h", "1/1s", " 2 / 90s ", "100/250ms", "3/24h", "off", "OFF", "0", "", "5", "5/", "/1m",
		"0/1m", "-1/1m", "+5/1m", "5/0s", "5/-1m", "5/1500us", "5/1.5s", "5/1m0.001s", "5/1ns", "5/1h30m",
		"1000000000/1ms", "2000000000/1s", "5/10m/2", "on", "05/10m", "5/9223372036854775807ns", "1/2562047h",
		"7/1.0005s", "3/.5s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			if r != (Rule{}) {
				t.Fatalf("ParseRule(%q) = %+v with error %v; want the zero Rule", s, r, err)
			}
			return
		}
		off := strings.EqualFold(strings.TrimSpace(s), "off") || strings.TrimSpace(s) == "0"
		if r.Disabled() != off {
			t.Fatalf("ParseRule(%q) = %+v: Disabled() = %v; want %v", s, r, r.Disabled(), off)
		}
		if off {
			return
		}
		if r.Limit < 1 || r.Limit > maxLimit || r.Period < time.Millisecond || r.Period%time.Millisecond != 0 {
			t.Fatalf("ParseRule(%q) = %+v; out of range", s, r)
		}
		if again, err := ParseRule(r.String()); err != nil || again != r {
			t.Fatalf("ParseRule(%q) = %+v, %v; want %+v (from %q)", r.String(), again, err, r, s)
		}

		interval, burst := r.window()
		periodMs := r.Period.Milliseconds()
		// Rounding may only make the rule stricter, and by less than one
		// interval per event.
		if interval < 1 || burst < periodMs || burst-periodMs >= int64(r.Limit) || burst != interval*int64(r.Limit) {
			t.Fatalf("%+v.window() = %d, %d; period %d ms", r, interval, burst, periodMs)
		}

		if r.Limit > 50 {
			return
		}
		now := time.UnixMilli(1_800_000_000_000)
		m := NewMemory(func() time.Time { return now })
		ctx := context.Background()
		for i := range r.Limit {
			if res, _ := m.Allow(ctx, "k", r); !res.Allowed {
				t.Fatalf("rule %v: event %d of a burst refused", r, i+1)
			}
		}
		res, _ := m.Allow(ctx, "k", r)
		if res.Allowed || res.RetryAfter != time.Duration(interval)*time.Millisecond || RetryAfterSeconds(res.RetryAfter) < 1 {
			t.Fatalf("rule %v: event %d = %+v; want refused, retry after %d ms", r, r.Limit+1, res, interval)
		}
		if res, _ := m.Allow(ctx, "other", r); !res.Allowed {
			t.Fatalf("rule %v: another key was refused", r)
		}
		now = now.Add(time.Duration(interval-1) * time.Millisecond)
		if res, _ := m.Allow(ctx, "k", r); res.Allowed {
			t.Fatalf("rule %v: allowed 1 ms before the next interval", r)
		}
		now = now.Add(time.Millisecond)
		if res, _ := m.Allow(ctx, "k", r); !res.Allowed {
			t.Fatalf("rule %v: refused after one interval", r)
		}
	})
}
