package outbound

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/courier"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// ProviderCacheTTL is how long the providers built for an app are used
// without reading its settings again: a change made through these Providers is
// used at once, one made by another replica within the TTL.
const ProviderCacheTTL = 2 * time.Second

// Router returns the courier.Provider the services send through: a
// message of an app (Message.AppID) goes through the app's enabled provider
// for its channel, and otherwise, like a message of no app, through
// fallback (the server-wide provider). An app's settings are read at most
// once per ProviderCacheTTL, and its providers built again only when they
// changed.
func (s *Providers) Router(fallback courier.Provider) courier.Provider {
	return &messageRouter{s: s, fallback: fallback}
}

type messageRouter struct {
	s        *Providers
	fallback courier.Provider
}

func (r *messageRouter) Send(ctx context.Context, m courier.Message) (string, error) {
	if m.AppID == "" {
		return r.fallback.Send(ctx, m)
	}
	set, err := r.s.appProviders(ctx, m.AppID)
	if err != nil {
		return "", fmt.Errorf("%w: read the app's providers: %w", courier.ErrDelivery, err)
	}
	if slug, broken := set.broken[m.Channel]; broken {
		return "", fmt.Errorf("%w: the app's %s provider cannot be used; see the server log", courier.ErrDelivery, slug)
	}
	p := set.by[m.Channel]
	if p == nil {
		return r.fallback.Send(ctx, m)
	}
	id, err := p.Send(ctx, m)
	if err != nil && !errors.Is(err, courier.ErrDelivery) {
		err = fmt.Errorf("%w: %s: %w", courier.ErrDelivery, m.Channel, err)
	}
	return id, err
}

// providerSet is the providers an app sends through, by channel.
type providerSet struct {
	stamp  string // what the set was built from: enabled slugs and their update times
	by     map[courier.Channel]courier.Provider
	broken map[courier.Channel]string // channels whose enabled provider cannot be built, with its slug
}

// appProviders returns the app's provider set, from the cache while fresh.
func (s *Providers) appProviders(ctx context.Context, appID string) (*providerSet, error) {
	set, _, fresh, gen := s.cache.Get(appID)
	if fresh {
		return set, nil
	}
	rows, err := s.db.ListMessageProviders(ctx, appID)
	if err != nil {
		return nil, err
	}
	rows = slices.DeleteFunc(rows, func(r store.MessageProvider) bool {
		_, offered := s.kindOf(r.Type)
		return !r.Enabled || !offered
	})
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%s@%d;", r.Slug, r.UpdatedAt.UnixMicro())
	}
	next := &providerSet{stamp: b.String()}
	if set != nil && set.stamp == next.stamp {
		next.by, next.broken = set.by, set.broken // nothing changed: keep what was built
	} else {
		next.by, next.broken = map[courier.Channel]courier.Provider{}, map[courier.Channel]string{}
		for _, r := range rows {
			k, _ := s.kindOf(r.Type)
			p, err := s.build(r)
			chans := k.Channels
			if cs, ok := p.(courier.ChannelSender); ok && err == nil {
				chans = slices.DeleteFunc(slices.Clone(chans), func(ch courier.Channel) bool { return !cs.Sends(ch) })
			}
			for _, ch := range chans {
				switch {
				case next.by[ch] != nil || next.broken[ch] != "":
				case err != nil:
					next.broken[ch] = r.Slug
				default:
					next.by[ch] = p
				}
			}
			if err != nil {
				s.log.ErrorContext(ctx, "an app's message provider cannot be used: its messages on its channels fail until it is fixed or disabled",
					"app_id", appID, "slug", r.Slug, "err", err)
			}
		}
	}
	s.cache.Put(appID, next, gen)
	return next, nil
}

// build makes the provider of a stored row.
func (s *Providers) build(r store.MessageProvider) (courier.Provider, error) {
	settings, err := s.settings(r)
	if err != nil {
		return nil, err
	}
	p, err := courier.FromSpec(courier.Spec{Type: r.Type, Config: settings}, s.env())
	if err != nil {
		return nil, err
	}
	return s.d.Metrics.Provider(p, "app_"+r.Type), nil
}

// SendsOwn reports whether the app sends on ch through an enabled provider
// of its own (one that cannot be built counts: its messages fail rather
// than fall back). The SMS guards let only such apps go past the server's
// countries and cap. A read error counts as no.
func (s *Providers) SendsOwn(ctx context.Context, appID string, ch courier.Channel) bool {
	set, err := s.appProviders(ctx, appID)
	if err != nil {
		return false
	}
	return set.by[ch] != nil || set.broken[ch] != ""
}
