package server

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/config"
	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/outbound"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// smsGuard builds the SMS fraud guards from the sms.* settings (validated
// by config).
// Apps that send SMS through a provider of their own (providers) may go past
// the server's countries and daily cap; the others only narrow them.
func smsGuard(cfg config.Config, db *store.DB, events *webhook.Emitter, now func() time.Time, log *slog.Logger, providers *outbound.Providers) *outbound.Guard {
	g := cfg.SMSGuard
	countries := make([]string, 0, len(g.AllowedCountries))
	for _, c := range g.AllowedCountries {
		countries = append(countries, strings.ToUpper(strings.TrimSpace(c)))
	}
	owns := func(ctx context.Context, appID string) bool {
		return providers.SendsOwn(ctx, appID, courier.ChannelSMS)
	}
	return outbound.NewGuard(outbound.GuardDeps{DB: db, Events: events, Now: now, Log: log, OwnsSMS: owns, Settings: outbound.GuardSettings{
		AllowedCountries: countries, AllowVoIP: g.AllowVoIP, Burst: g.PerNumberBurst, Window: g.PerNumberWindow,
		FirstWait: time.Minute, MaxWait: g.PerNumberMaxWait, Quiet: g.PerNumberQuiet, DailyCap: g.DailyCap,
		PrefixHourlyCap: g.PrefixHourlyCap}})
}
