package outbound_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nyaruka/phonenumbers"

	"github.com/gatehouse-auth/gatehouse/internal/fakeclock"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

func settings() outbound.GuardSettings {
	return outbound.GuardSettings{AllowedCountries: []string{"US", "CA", "GB", "DE"}, Burst: 3, Window: 10 * time.Minute,
		FirstWait: time.Minute, MaxWait: 32 * time.Minute, Quiet: time.Hour, DailyCap: 1000, PrefixHourlyCap: 30}
}

// app stores an app (the counters reference nothing, but Take takes one).
func app(t *testing.T, db *store.DB) store.App {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	if err := db.CreateWorkspace(ctx, store.Workspace{ID: "ws", Name: "WS", Slug: "ws", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	a := store.App{ID: "app", WorkspaceID: "ws", Name: "A", Slug: "a", CreatedAt: now, UpdatedAt: now}
	if err := db.CreateApp(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetApp(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.SMSAllowedCountries != nil || got.SMSDailyCap != 0 {
		t.Errorf("a new app's SMS settings = %v, %d; want nil and 0 (the server's)", got.SMSAllowedCountries, got.SMSDailyCap)
	}
	return got
}

func TestCheck(t *testing.T) {
	ctx := t.Context()
	// App "own" sends SMS through a provider of its own; the others through
	// the server's.
	owns := func(_ context.Context, appID string) bool { return appID == "own" }
	g := outbound.NewGuard(outbound.GuardDeps{Settings: settings(), OwnsSMS: owns})
	tests := []struct {
		number string
		want   error
	}{
		{"+14155550163", nil},  // NANP: fixed or mobile, fictional 555-01xx included
		{"+12025550100", nil},  // idem, another area code
		{"+16135550123", nil},  // Canada
		{"+447400123456", nil}, // UK mobile
		{"+4915123456789", nil},
		{"+442079460000", outbound.ErrLineTypeNotAllowed}, // UK landline (London drama range)
		{"+449098790000", outbound.ErrLineTypeNotAllowed}, // UK premium rate
		{"+448431234567", outbound.ErrLineTypeNotAllowed}, // UK shared cost
		{"+448001234567", outbound.ErrLineTypeNotAllowed}, // UK toll free
		{"+447012345678", outbound.ErrLineTypeNotAllowed}, // UK personal number
		{"+447640123456", outbound.ErrLineTypeNotAllowed}, // UK pager
		{"+443001234567", outbound.ErrLineTypeNotAllowed}, // UK UAN
		{"+18005550100", outbound.ErrLineTypeNotAllowed},  // US toll free
		{"+19005550100", outbound.ErrLineTypeNotAllowed},  // US premium rate
		{"+49301234567", outbound.ErrLineTypeNotAllowed},  // Berlin landline
		{"+18765550100", outbound.ErrCountryNotAllowed},   // Jamaica, +1 but not US
		{"+447911123456", outbound.ErrCountryNotAllowed},  // Guernsey, +44 but not GB
		{"+33612345678", outbound.ErrCountryNotAllowed},   // France: not in this list
		{"+881612345678", outbound.ErrCountryNotAllowed},  // satellite (region 001)
	}
	for _, tt := range tests {
		if got := g.Check(ctx, store.App{}, tt.number); !errors.Is(got, tt.want) {
			t.Errorf("Check(%s) = %v; want %v", tt.number, got, tt.want)
		}
	}
	// An app with its own SMS provider chooses its countries freely; * is
	// every country.
	own := func(c ...string) store.App { return store.App{ID: "own", SMSAllowedCountries: c} }
	if err := g.Check(ctx, own("FR"), "+33612345678"); err != nil {
		t.Errorf("Check(FR mobile, own provider, app allows FR) = %v", err)
	}
	if err := g.Check(ctx, own("FR"), "+14155550163"); !errors.Is(err, outbound.ErrCountryNotAllowed) {
		t.Errorf("Check(US, own provider, app allows FR only) = %v; want country refused", err)
	}
	if err := g.Check(ctx, own("*"), "+18765550100"); err != nil {
		t.Errorf("Check(JM, own provider, app allows *) = %v", err)
	}
	if err := g.Check(ctx, own([]string{}...), "+14155550163"); !errors.Is(err, outbound.ErrCountryNotAllowed) {
		t.Errorf("Check(own provider, app allows none) = %v; want country refused", err)
	}
	// An app on the server's provider may only narrow the server's list.
	shared := func(c ...string) store.App { return store.App{ID: "shared", SMSAllowedCountries: c} }
	for _, tt := range []struct {
		app    store.App
		number string
		want   error
	}{
		{shared("FR"), "+33612345678", outbound.ErrCountryNotAllowed},       // FR is not the server's
		{shared("*"), "+18765550100", outbound.ErrCountryNotAllowed},        // * is the server's list
		{shared("GB", "FR"), "+447400123456", nil},                          // GB is the server's too
		{shared("GB", "FR"), "+14155550163", outbound.ErrCountryNotAllowed}, // narrowed away
	} {
		if err := g.Check(ctx, tt.app, tt.number); !errors.Is(err, tt.want) {
			t.Errorf("Check(%s, server provider, app allows %v) = %v; want %v", tt.number, tt.app.SMSAllowedCountries, err, tt.want)
		}
	}
	// Likewise the daily cap: raised only with an own provider.
	server := settings().DailyCap
	if got := g.DailyCap(ctx, store.App{ID: "shared", SMSDailyCap: server * 10}); got != server {
		t.Errorf("DailyCap(server provider, app cap %d) = %d; want the server's %d", server*10, got, server)
	}
	if got := g.DailyCap(ctx, store.App{ID: "shared", SMSDailyCap: 1}); got != 1 {
		t.Errorf("DailyCap(server provider, app cap 1) = %d; want 1", got)
	}
	if got := g.DailyCap(ctx, store.App{ID: "own", SMSDailyCap: server * 10}); got != server*10 {
		t.Errorf("DailyCap(own provider, app cap %d) = %d; want it", server*10, got)
	}
	// VoIP only by setting.
	if outbound.MobileType(phonenumbers.VOIP, false) || !outbound.MobileType(phonenumbers.VOIP, true) {
		t.Errorf("MobileType(VOIP) does not follow sms.allow_voip")
	}
}

func TestPrefix(t *testing.T) {
	for number, want := range map[string]string{
		"+14155552671":  "+1415555",
		"+447400123456": "+44740012",
		"+6421234567":   "+642123",
	} {
		if got := outbound.Prefix(number); got != want {
			t.Errorf("Prefix(%s) = %s; want %s", number, got, want)
		}
	}
}

// TestWaits steps the waits of one number with a fixed jitter (none).
func TestWaits(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		clock := fakeclock.New(time.Date(2031, 3, 14, 15, 9, 26, 0, time.UTC))
		g := outbound.NewGuard(outbound.GuardDeps{DB: db, Settings: settings(), Now: clock.Now, Jitter: func(d time.Duration) time.Duration { return d }})
		a := app(t, db)
		ctx := context.Background()
		take := func() time.Duration {
			t.Helper()
			err := g.Take(ctx, a, "+14155552671")
			var le *outbound.LimitError
			if errors.As(err, &le) && le.Limit == outbound.LimitNumber {
				return le.RetryAfter
			}
			if err != nil {
				t.Fatalf("Take: %v", err)
			}
			return 0
		}
		for i := range 3 {
			if w := take(); w != 0 {
				t.Fatalf("send %d refused, wait %s", i+1, w)
			}
			clock.Advance(30 * time.Second)
		}
		if w := take(); w != 10*time.Minute-90*time.Second {
			t.Errorf("4th wait = %s; want the window's rest, 8m30s", w)
		}
		clock.Advance(10*time.Minute - 90*time.Second)
		for _, want := range []time.Duration{1, 2, 4, 8, 16, 32, 32, 32} {
			if w := take(); w != 0 {
				t.Fatalf("send after its wait refused: %s", w)
			}
			if w := take(); w != want*time.Minute {
				t.Fatalf("wait = %s; want %s", w, want*time.Minute)
			}
			clock.Advance(want * time.Minute)
		}
		clock.Advance(time.Hour)
		for range 3 {
			if w := take(); w != 0 {
				t.Fatalf("after an hour's quiet: refused, wait %s", w)
			}
		}
		// Another number, and another app's same number, wait on their own.
		if err := g.Take(ctx, a, "+14155552672"); err != nil {
			t.Errorf("another number: %v", err)
		}
		other := a
		other.ID = "other"
		if err := g.Take(ctx, other, "+14155552671"); err != nil {
			t.Errorf("another app: %v", err)
		}
		// Pruning keeps a number whose run is still on.
		if err := g.Prune(ctx); err != nil {
			t.Fatal(err)
		}
		if w := take(); w == 0 {
			t.Errorf("after Prune, the 4th send of the run went")
		}
	})
}

// TestRacingSends: concurrent sends (as from several replicas) never let
// more through than the limits allow.
func TestRacingSends(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		s := settings()
		s.PrefixHourlyCap, s.DailyCap = 5, 7
		g := outbound.NewGuard(outbound.GuardDeps{DB: db, Settings: s})
		a := app(t, db)
		run := func(numbers func(i int) string) (ok int, refused map[outbound.Limit]int) {
			var mu sync.Mutex
			var wg sync.WaitGroup
			refused = map[outbound.Limit]int{}
			for i := range 12 {
				wg.Go(func() {
					err := g.Take(context.Background(), a, numbers(i))
					mu.Lock()
					defer mu.Unlock()
					var le *outbound.LimitError
					switch {
					case err == nil:
						ok++
					case errors.As(err, &le):
						refused[le.Limit]++
					default:
						t.Errorf("Take: %v", err)
					}
				})
			}
			wg.Wait()
			return ok, refused
		}
		if ok, refused := run(func(int) string { return "+14155552671" }); ok != 3 || refused[outbound.LimitNumber] != 9 {
			t.Errorf("12 racing sends to one number: %d went, refused %v; want 3 and 9 by its waits", ok, refused)
		}
		// Two more of the prefix's 5 this hour, then the app's 7 for the day.
		if ok, refused := run(func(i int) string { return "+1415555" + string(rune('3'+i%6)) + "000" }); ok != 2 || refused[outbound.LimitPrefix] != 10 {
			t.Errorf("12 racing sends in one prefix: %d went, refused %v; want 2, 10 by the prefix cap", ok, refused)
		}
		if ok, refused := run(func(i int) string { return "+1212555" + string(rune('0'+i%10)) + "10" + string(rune('0'+i/10)) }); ok != 2 || refused[outbound.LimitDaily] != 10 {
			t.Errorf("12 racing sends to other prefixes: %d went, refused %v; want 2, 10 by the daily cap", ok, refused)
		}
	})
}
