package server

import (
	"log/slog"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/config"
	"github.com/gatehouse-auth/gatehouse/internal/smsguard"
	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/webhook"
)

// smsGuard builds the SMS fraud guards from the sms.* settings (validated
// by config).
func smsGuard(cfg config.Config, db *store.DB, events *webhook.Emitter, now func() time.Time, log *slog.Logger) *smsguard.Guard {
	g := cfg.SMSGuard
	countries := make([]string, 0, len(g.AllowedCountries))
	for _, c := range g.AllowedCountries {
		countries = append(countries, strings.ToUpper(strings.TrimSpace(c)))
	}
	return smsguard.New(smsguard.Deps{DB: db, Events: events, Now: now, Log: log, Settings: smsguard.Settings{
		AllowedCountries: countries, AllowVoIP: g.AllowVoIP, Burst: g.PerNumberBurst, Window: g.PerNumberWindow,
		FirstWait: time.Minute, MaxWait: g.PerNumberMaxWait, Quiet: g.PerNumberQuiet, DailyCap: g.DailyCap,
		PrefixHourlyCap: g.PrefixHourlyCap}})
}
