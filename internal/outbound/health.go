package outbound

import (
	"context"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/errs"
	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// Health is an app's part of the send queue: messages still waiting (and
// how long the oldest has), and the ones given up on in the last week with
// their last error (recipients masked).
type Health struct {
	Waiting int
	Oldest  time.Time // zero when nothing waits
	Failed  []store.FailedMessage
}

// Health reads app's part of the send queue, for a principal that may read
// the app.
func (s *Service) Health(ctx context.Context, p access.Principal, app store.App, now time.Time) (_ Health, err error) {
	defer errs.Wrap(&err, "read send queue health")
	if err := access.App(ctx, s.db.Queries, p, app.ID, access.Read); err != nil {
		return Health{}, err
	}
	var h Health
	h.Waiting, h.Oldest, h.Failed, err = s.db.AppMessageHealth(ctx, app.ID, now.Add(-7*24*time.Hour), 50)
	return h, err
}
