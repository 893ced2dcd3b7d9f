package signin_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/pquerna/otp/totp"

	"github.com/gatehouse-auth/gatehouse/internal/passkey/passkeytest"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/server/servertest"
	"github.com/gatehouse-auth/gatehouse/internal/signin"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// benchSessions is how many sessions a benchmark spreads its calls over.
const benchSessions = 32

// forEachKind runs a benchmark on SQLite and, when configured, PostgreSQL,
// each on a system of its own without rate limits, which would measure the
// limiter.
func forEachKind(b *testing.B, fn func(b *testing.B, e *env)) {
	opts := options(func(o *servertest.Options) {
		o.Limits.SendPerIdentifier, o.Limits.SendPerIP, o.Limits.VerifyPerIP = ratelimit.Rule{}, ratelimit.Rule{}, ratelimit.Rule{}
		o.Limits.LookupPerIP, o.Limits.ChallengePerIP, o.Limits.ChallengePerUser = ratelimit.Rule{}, ratelimit.Rule{}, ratelimit.Rule{}
	})
	for _, kind := range storetest.Kinds(b) {
		b.Run(kind, func(b *testing.B) { fn(b, newEnv(b, servertest.New(b, kind, opts), nil)) })
	}
}

// benchTokens signs in benchSessions users and returns their token sets.
func benchTokens(b *testing.B, e *env) []signin.TokenSet {
	out := make([]signin.TokenSet, benchSessions)
	for i := range out {
		out[i] = e.signIn(b, e.user(b, fmt.Sprintf("user%d@example.com", i)))
	}
	return out
}

func BenchmarkRefresh(b *testing.B) {
	forEachKind(b, func(b *testing.B, e *env) {
		ctx := b.Context()
		sets := benchTokens(b, e)
		i := 0
		for b.Loop() {
			k := i % len(sets)
			next, err := e.SignIn.Refresh(ctx, e.app, sets[k].Refresh)
			if err != nil {
				b.Fatalf("Refresh: %v", err)
			}
			sets[k] = next
			i++
		}
	})
}

func BenchmarkAuthenticate(b *testing.B) {
	forEachKind(b, func(b *testing.B, e *env) {
		ctx := b.Context()
		sets := benchTokens(b, e)
		i := 0
		for b.Loop() {
			if _, err := e.SignIn.Authenticate(ctx, e.app, sets[i%len(sets)].Access); err != nil {
				b.Fatalf("Authenticate: %v", err)
			}
			i++
		}
	})
}

// BenchmarkAuthenticateParallel measures the per-request check under load
// from every core at once.
func BenchmarkAuthenticateParallel(b *testing.B) {
	forEachKind(b, func(b *testing.B, e *env) {
		ctx := b.Context()
		sets := benchTokens(b, e)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				if _, err := e.SignIn.Authenticate(ctx, e.app, sets[i%len(sets)].Access); err != nil {
					b.Errorf("Authenticate: %v", err)
					return
				}
				i++
			}
		})
	})
}

// BenchmarkVerifyOTP times the verification of a correct code; sending it
// is left out of the measurement.
func BenchmarkVerifyOTP(b *testing.B) {
	forEachKind(b, func(b *testing.B, e *env) {
		ctx := b.Context()
		users := make([]string, benchSessions)
		for i := range users {
			users[i] = e.user(b, fmt.Sprintf("user%d@example.com", i)).ID
		}
		b.ResetTimer()
		for i := range b.N {
			b.StopTimer()
			e.Clock.Advance(time.Second)
			_, code := e.sendCode(b, fmt.Sprintf("user%d@example.com", i%len(users)))
			b.StartTimer()
			if _, err := e.SignIn.VerifyOTP(ctx, e.app, users[i%len(users)], code, e.client); err != nil {
				b.Fatalf("VerifyOTP: %v", err)
			}
		}
	})
}

// BenchmarkPasskeyLogin times a passkey sign-in by identifier: the options
// (a ceremony stored) and the verification of the answer (the ceremony
// spent, the counter written, a session opened). The authenticator's own
// signing is left out.
func BenchmarkPasskeyLogin(b *testing.B) {
	forEachKind(b, func(b *testing.B, e *env) {
		ctx := b.Context()
		type holder struct {
			identifier string
			auth       *passkeytest.Authenticator
		}
		hs := make([]holder, benchSessions)
		for i := range hs {
			id := fmt.Sprintf("user%d@example.com", i)
			c := e.caller(b, e.signIn(b, e.user(b, id)).Access)
			a := e.registerPasskey(b, c)
			hs[i] = holder{id, a}
		}
		b.ResetTimer()
		for i := range b.N {
			h := hs[i%len(hs)]
			opts, err := e.SignIn.BeginPasskeyLogin(ctx, e.app, h.identifier, e.client)
			if err != nil {
				b.Fatalf("BeginPasskeyLogin: %v", err)
			}
			b.StopTimer()
			body, err := h.auth.Get(string(opts))
			if err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, err := e.SignIn.FinishPasskeyLogin(ctx, e.app, []byte(body), e.client); err != nil {
				b.Fatalf("FinishPasskeyLogin: %v", err)
			}
		}
	})
}

// BenchmarkMFALogin times a sign-in with a second factor: a right e-mail
// code that answers an MFA challenge (the user has an authenticator app and
// the app's policy is optional), then the right TOTP code, which opens the
// session. Sending the code is left out, as in BenchmarkVerifyOTP.
func BenchmarkMFALogin(b *testing.B) {
	forEachKind(b, func(b *testing.B, e *env) {
		ctx := b.Context()
		e.app = e.newApp(b, "MFA", func(s *tenant.AppSettings) { s.MFAPolicy = ptr("optional") })
		type holder struct {
			id, email string
			secret    string
		}
		hs := make([]holder, benchSessions)
		for i := range hs {
			email := fmt.Sprintf("user%d@example.com", i)
			u := e.user(b, email)
			c := e.caller(b, e.signIn(b, u).Access)
			en, err := e.SignIn.EnrollTOTP(ctx, e.app, c, "phone", "")
			if err != nil {
				b.Fatalf("EnrollTOTP: %v", err)
			}
			code, _ := totp.GenerateCode(en.Secret, e.Clock.Now())
			if _, err := e.SignIn.VerifyEnrollment(ctx, e.app, c, en.Enrollment.ID, code, e.client); err != nil {
				b.Fatalf("VerifyEnrollment: %v", err)
			}
			hs[i] = holder{u.ID, email, en.Secret}
		}
		b.ResetTimer()
		for i := range b.N {
			h := hs[i%len(hs)]
			b.StopTimer()
			e.Clock.Advance(30 * time.Second) // a new TOTP step: a step is accepted once
			_, code := e.sendCode(b, h.email)
			second, _ := totp.GenerateCode(h.secret, e.Clock.Now())
			b.StartTimer()
			first, err := e.SignIn.VerifyOTP(ctx, e.app, h.id, code, e.client)
			if err != nil || first.MFA == nil {
				b.Fatalf("VerifyOTP = %+v, %v; want an MFA challenge", first, err)
			}
			res, err := e.SignIn.VerifyChallenge(ctx, e.app, first.MFA.Challenge.Token, signin.VerifyInput{Code: second}, e.client)
			if err != nil || res.Tokens == nil || res.Tokens.Access == "" {
				b.Fatalf("VerifyChallenge(totp) = %+v, %v; want tokens", res, err)
			}
		}
	})
}
