package server

import (
	"context"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/appuser"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/ratelimit"
	"github.com/gatehouse-auth/gatehouse/internal/token"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// newOutbound builds what stands between the services and the providers:
// the templates, the apps' own providers, the SMS guards and the send
// queue. Test identities are sent nothing and pass the guards.
func (s *Server) newOutbound(messages *outbound.Queue, sealer *token.Sealer, events *webhook.Emitter, outbox *courier.Outbox,
	policy webhook.Policy, limiter ratelimit.Limiter, tests appuser.TestIdentities) (*outbound.Service, error) {
	cfg := s.cfg
	templates, err := courier.LoadTemplates()
	if err != nil {
		return nil, err
	}
	providers := outbound.NewProviders(appProviders(cfg, s.DB, sealer, outbox, policy, limiter, s.now, s.log, s.metrics))
	return outbound.New(outbound.Deps{
		Templates: outbound.NewTemplates(outbound.TemplatesDeps{DB: s.DB, Templates: templates, BaseURL: cfg.BaseURL, Now: s.now, Log: s.log}),
		Providers: providers,
		SMS:       s.smsGuard(events, providers),
		Queue:     messages,
		Exempt:    tests.Of,
		DB:        s.DB,
		Log:       s.log,
		Metrics:   s.metrics,
	}), nil
}

// smsGuard builds the SMS fraud guards from the sms.* settings (validated
// by config). Apps that send SMS through a provider of their own may go
// past the server's countries and daily cap; the others only narrow them.
func (s *Server) smsGuard(events *webhook.Emitter, providers *outbound.Providers) *outbound.Guard {
	g := s.cfg.SMSGuard
	countries := make([]string, 0, len(g.AllowedCountries))
	for _, c := range g.AllowedCountries {
		countries = append(countries, strings.ToUpper(strings.TrimSpace(c)))
	}
	owns := func(ctx context.Context, appID string) bool {
		return providers.SendsOwn(ctx, appID, courier.ChannelSMS)
	}
	return outbound.NewGuard(outbound.GuardDeps{DB: s.DB, Events: events, Now: s.now, Log: s.log, Metrics: s.metrics, OwnsSMS: owns, Settings: outbound.GuardSettings{
		AllowedCountries: countries, AllowVoIP: g.AllowVoIP, Burst: g.PerNumberBurst, Window: g.PerNumberWindow,
		FirstWait: time.Minute, MaxWait: g.PerNumberMaxWait, Quiet: g.PerNumberQuiet, DailyCap: g.DailyCap,
		PrefixHourlyCap: g.PrefixHourlyCap}})
}
