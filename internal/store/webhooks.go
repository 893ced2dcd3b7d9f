package store

import (
	"context"
	"time"
)

// WebhookEndpoint is where an app's events are delivered. Its signing
// secrets are sealed with the master key.
type WebhookEndpoint struct {
	ID                   string
	AppID                string
	URL                  string
	Description          string
	EventTypes           []string
	RetryLimit           int
	Metadata             []byte // JSON object
	Enabled              bool
	SecretSealed         []byte
	PreviousSecretSealed []byte
	PreviousExpiresAt    *time.Time
	CreatedAt            time.Time
	UpdatedAt            time.Time
}

const endpointColumns = `id, app_id, url, description, event_types, retry_limit, metadata, enabled, secret_sealed,
	previous_secret_sealed, previous_expires_at, created_at, updated_at`

func scanEndpoint(r row) (WebhookEndpoint, error) {
	var e WebhookEndpoint
	var types []byte
	err := r.Scan(&e.ID, &e.AppID, &e.URL, &e.Description, &types, &e.RetryLimit, &e.Metadata, &e.Enabled, &e.SecretSealed,
		&e.PreviousSecretSealed, &e.PreviousExpiresAt, &e.CreatedAt, &e.UpdatedAt)
	e.EventTypes = parseStrings(types)
	e.PreviousExpiresAt, e.CreatedAt, e.UpdatedAt = utcPtr(e.PreviousExpiresAt), e.CreatedAt.UTC(), e.UpdatedAt.UTC()
	return e, err
}

// CreateWebhookEndpoint inserts e.
func (q Queries) CreateWebhookEndpoint(ctx context.Context, e WebhookEndpoint) error {
	_, err := q.w.exec(ctx, `INSERT INTO webhook_endpoints (`+endpointColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`, e.ID, e.AppID, e.URL, e.Description,
		jsonStrings(e.EventTypes), e.RetryLimit, string(jsonOr(e.Metadata, "{}")), e.Enabled, e.SecretSealed,
		e.PreviousSecretSealed, nullTime(e.PreviousExpiresAt), ts(e.CreatedAt), ts(e.UpdatedAt))
	return err
}

// GetWebhookEndpoint returns an app's endpoint or ErrNotFound.
func (q Queries) GetWebhookEndpoint(ctx context.Context, appID, id string) (WebhookEndpoint, error) {
	return scanEndpoint(q.w.queryRow(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints WHERE app_id = $1 AND id = $2`, appID, id))
}

// ListWebhookEndpoints returns an app's endpoints, oldest first.
func (q Queries) ListWebhookEndpoints(ctx context.Context, appID string) ([]WebhookEndpoint, error) {
	rs, err := q.w.query(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints WHERE app_id = $1 ORDER BY created_at, id`, appID)
	if err != nil {
		return nil, err
	}
	return collect(rs, scanEndpoint)
}

// CountWebhookEndpoints counts an app's endpoints.
func (q Queries) CountWebhookEndpoints(ctx context.Context, appID string) (int, error) {
	var n int
	err := q.w.queryRow(ctx, `SELECT COUNT(*) FROM webhook_endpoints WHERE app_id = $1`, appID).Scan(&n)
	return n, err
}

// UpdateWebhookEndpoint writes every mutable field of e.
func (q Queries) UpdateWebhookEndpoint(ctx context.Context, e WebhookEndpoint) error {
	n, err := q.w.exec(ctx, `UPDATE webhook_endpoints SET url = $3, description = $4, event_types = $5, retry_limit = $6,
		metadata = $7, enabled = $8, secret_sealed = $9, previous_secret_sealed = $10, previous_expires_at = $11, updated_at = $12
		WHERE app_id = $1 AND id = $2`, e.AppID, e.ID, e.URL, e.Description, jsonStrings(e.EventTypes), e.RetryLimit,
		string(jsonOr(e.Metadata, "{}")), e.Enabled, e.SecretSealed, e.PreviousSecretSealed, nullTime(e.PreviousExpiresAt), ts(e.UpdatedAt))
	return affected(n, err)
}

// DeleteWebhookEndpoint removes an endpoint with its deliveries.
func (q Queries) DeleteWebhookEndpoint(ctx context.Context, appID, id string) error {
	n, err := q.w.exec(ctx, `DELETE FROM webhook_endpoints WHERE app_id = $1 AND id = $2`, appID, id)
	return affected(n, err)
}

// WebhookEvent is one event as sent: Body is the exact envelope.
type WebhookEvent struct {
	ID        string
	AppID     string
	EventType string
	Body      []byte
	CreatedAt time.Time
}

// InsertWebhookEvent stores ev.
func (q Queries) InsertWebhookEvent(ctx context.Context, ev WebhookEvent) error {
	_, err := q.w.exec(ctx, `INSERT INTO webhook_events (id, app_id, event_type, body, created_at) VALUES ($1, $2, $3, $4, $5)`,
		ev.ID, ev.AppID, ev.EventType, string(ev.Body), ts(ev.CreatedAt))
	return err
}

// WebhookDelivery is one event on its way to one endpoint.
type WebhookDelivery struct {
	ID            string
	EndpointID    string
	EventID       string
	EventType     string
	Status        string // pending, processing, delivered, failed
	Attempts      int
	MaxAttempts   int
	NextAttemptAt *time.Time
	LastError     string
	CreatedAt     time.Time
	UpdatedAt     time.Time
	DeliveredAt   *time.Time
}

// Delivery statuses.
const (
	DeliveryPending    = "pending"
	DeliveryProcessing = "processing"
	DeliveryDelivered  = "delivered"
	DeliveryFailed     = "failed"
)

const deliveryColumns = `d.id, d.endpoint_id, d.event_id, d.event_type, d.status, d.attempts, d.max_attempts, d.next_attempt_at,
	d.last_error, d.created_at, d.updated_at, d.delivered_at`

func deliveryDest(d *WebhookDelivery) []any {
	return []any{&d.ID, &d.EndpointID, &d.EventID, &d.EventType, &d.Status, &d.Attempts, &d.MaxAttempts, &d.NextAttemptAt,
		&d.LastError, &d.CreatedAt, &d.UpdatedAt, &d.DeliveredAt}
}

func (d *WebhookDelivery) utc() {
	d.NextAttemptAt, d.CreatedAt, d.UpdatedAt, d.DeliveredAt = utcPtr(d.NextAttemptAt), d.CreatedAt.UTC(), d.UpdatedAt.UTC(), utcPtr(d.DeliveredAt)
}

// InsertWebhookDelivery stores d.
func (q Queries) InsertWebhookDelivery(ctx context.Context, d WebhookDelivery) error {
	_, err := q.w.exec(ctx, `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, status, attempts, max_attempts,
		next_attempt_at, last_error, created_at, updated_at, delivered_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		d.ID, d.EndpointID, d.EventID, d.EventType, d.Status, d.Attempts, d.MaxAttempts, nullTime(d.NextAttemptAt), d.LastError,
		ts(d.CreatedAt), ts(d.UpdatedAt), nullTime(d.DeliveredAt))
	return err
}

// DeliveryWork is everything one delivery attempt needs, read in one round trip.
type DeliveryWork struct {
	Delivery WebhookDelivery
	Endpoint WebhookEndpoint
	Body     []byte
	AppName  string
}

// GetDeliveryWork reads a delivery with its endpoint, event body and app name.
func (q Queries) GetDeliveryWork(ctx context.Context, id string) (DeliveryWork, error) {
	var w DeliveryWork
	var types []byte
	var body string
	e := &w.Endpoint
	dest := append(deliveryDest(&w.Delivery), &e.ID, &e.AppID, &e.URL, &e.Description, &types, &e.RetryLimit, &e.Metadata,
		&e.Enabled, &e.SecretSealed, &e.PreviousSecretSealed, &e.PreviousExpiresAt, &e.CreatedAt, &e.UpdatedAt, &body, &w.AppName)
	err := q.w.queryRow(ctx, `SELECT `+deliveryColumns+`, e.id, e.app_id, e.url, e.description, e.event_types, e.retry_limit,
		e.metadata, e.enabled, e.secret_sealed, e.previous_secret_sealed, e.previous_expires_at, e.created_at, e.updated_at,
		ev.body, a.name
		FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id JOIN webhook_events ev ON ev.id = d.event_id
		JOIN apps a ON a.id = e.app_id WHERE d.id = $1`, id).Scan(dest...)
	w.Delivery.utc()
	e.EventTypes = parseStrings(types)
	e.PreviousExpiresAt, e.CreatedAt, e.UpdatedAt = utcPtr(e.PreviousExpiresAt), e.CreatedAt.UTC(), e.UpdatedAt.UTC()
	w.Body = []byte(body)
	return w, err
}

// StartDeliveryAttempt marks a delivery processing and counts the attempt;
// it returns the attempt number.
func (q Queries) StartDeliveryAttempt(ctx context.Context, id string, now time.Time) (int, error) {
	var n int
	err := q.w.queryRow(ctx, `UPDATE webhook_deliveries SET status = 'processing', attempts = attempts + 1, next_attempt_at = NULL,
		updated_at = $2 WHERE id = $1 RETURNING attempts`, id, ts(now)).Scan(&n)
	return n, err
}

// WebhookAttempt is the record of one HTTP attempt.
type WebhookAttempt struct {
	ID             string
	DeliveryID     string
	Attempt        int
	StartedAt      time.Time
	DurationMs     int64
	ResponseStatus *int
	ResponseBody   string
	Error          string
}

// FinishDeliveryAttempt records an attempt and the delivery's new state, in one transaction.
func (tx *Tx) FinishDeliveryAttempt(ctx context.Context, a WebhookAttempt, status string, nextAttemptAt *time.Time, now time.Time) error {
	if _, err := tx.w.exec(ctx, `INSERT INTO webhook_attempts (id, delivery_id, attempt, started_at, duration_ms, response_status, response_body, error)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, a.ID, a.DeliveryID, a.Attempt, ts(a.StartedAt), a.DurationMs, a.ResponseStatus,
		a.ResponseBody, a.Error); err != nil {
		return err
	}
	var delivered any
	if status == DeliveryDelivered {
		delivered = ts(now)
	}
	_, err := tx.w.exec(ctx, `UPDATE webhook_deliveries SET status = $2, next_attempt_at = $3, last_error = $4, updated_at = $5,
		delivered_at = COALESCE(delivered_at, $6) WHERE id = $1`, a.DeliveryID, status, nullTime(nextAttemptAt), a.Error, ts(now), delivered)
	return err
}

// ListDeliveries returns an endpoint's deliveries, newest first, one page, and the total.
func (q Queries) ListDeliveries(ctx context.Context, endpointID string, limit, offset int) ([]WebhookDelivery, int, error) {
	return q.ListDeliveriesByStatus(ctx, endpointID, "", limit, offset)
}

// ListDeliveriesByStatus is ListDeliveries of the deliveries with this
// status ("" for every status).
func (q Queries) ListDeliveriesByStatus(ctx context.Context, endpointID, status string, limit, offset int) ([]WebhookDelivery, int, error) {
	where, args := `d.endpoint_id = $1`, []any{endpointID}
	if status != "" {
		where, args = where+` AND d.status = $2`, append(args, status)
	}
	var total int
	if err := q.r.queryRow(ctx, `SELECT COUNT(*) FROM webhook_deliveries d WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, err
	}
	n := len(args)
	rs, err := q.r.query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d WHERE `+where+`
		ORDER BY d.created_at DESC, d.id DESC LIMIT $`+itoa(n+1)+` OFFSET $`+itoa(n+2), append(args, limit, offset)...)
	if err != nil {
		return nil, 0, err
	}
	list, err := collect(rs, func(r row) (WebhookDelivery, error) {
		var d WebhookDelivery
		err := r.Scan(deliveryDest(&d)...)
		d.utc()
		return d, err
	})
	return list, total, err
}

// GetEventBody returns the JSON body of an app's webhook event.
func (q Queries) GetEventBody(ctx context.Context, appID, eventID string) ([]byte, error) {
	var body string
	err := q.r.queryRow(ctx, `SELECT body FROM webhook_events WHERE app_id = $1 AND id = $2`, appID, eventID).Scan(&body)
	return []byte(body), mapErr(err)
}

// GetDelivery returns one delivery of an endpoint.
func (q Queries) GetDelivery(ctx context.Context, endpointID, id string) (WebhookDelivery, error) {
	var d WebhookDelivery
	err := q.w.queryRow(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d WHERE d.endpoint_id = $1 AND d.id = $2`, endpointID, id).Scan(deliveryDest(&d)...)
	d.utc()
	return d, err
}

// ResetDelivery queues a delivery again from scratch (redeliver).
func (q Queries) ResetDelivery(ctx context.Context, id string, maxAttempts int, now time.Time) error {
	_, err := q.w.exec(ctx, `UPDATE webhook_deliveries SET status = 'pending', attempts = 0, max_attempts = $2, next_attempt_at = NULL,
		last_error = '', updated_at = $3, delivered_at = NULL WHERE id = $1`, id, maxAttempts, ts(now))
	return err
}

// ListAttempts returns the attempts of deliveries, oldest first. A redelivery
// numbers its attempts from 1 again, so the order is by time, not number.
func (q Queries) ListAttempts(ctx context.Context, deliveryIDs []string) (map[string][]WebhookAttempt, error) {
	out := map[string][]WebhookAttempt{}
	for _, id := range deliveryIDs {
		rs, err := q.r.query(ctx, `SELECT id, delivery_id, attempt, started_at, duration_ms, response_status, response_body, error
			FROM webhook_attempts WHERE delivery_id = $1 ORDER BY started_at, attempt, id`, id)
		if err != nil {
			return nil, err
		}
		list, err := collect(rs, func(r row) (WebhookAttempt, error) {
			var a WebhookAttempt
			err := r.Scan(&a.ID, &a.DeliveryID, &a.Attempt, &a.StartedAt, &a.DurationMs, &a.ResponseStatus, &a.ResponseBody, &a.Error)
			a.StartedAt = a.StartedAt.UTC()
			return a, err
		})
		if err != nil {
			return nil, err
		}
		out[id] = list
	}
	return out, nil
}

// CountDeliveriesByStatus counts an app's deliveries by status.
func (q Queries) CountDeliveriesByStatus(ctx context.Context, appID string) (map[string]int, error) {
	rs, err := q.r.query(ctx, `SELECT d.status, COUNT(*) FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id
		WHERE e.app_id = $1 GROUP BY d.status`, appID)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := map[string]int{}
	for rs.Next() {
		var s string
		var n int
		if err := rs.Scan(&s, &n); err != nil {
			return nil, err
		}
		out[s] = n
	}
	return out, rs.Err()
}

// ExpireChallenges closes up to limit pending challenges whose time ran out and returns them.
func (q Queries) ExpireChallenges(ctx context.Context, now time.Time, limit int) ([]Challenge, error) {
	rs, err := q.w.query(ctx, `UPDATE challenges SET status = 'expired' WHERE id IN (
		SELECT id FROM challenges WHERE status = 'pending' AND expires_at <= $1 ORDER BY expires_at LIMIT $2)
		AND status || '' = 'pending' RETURNING `+challengeColumns, ts(now), limit)
	if err != nil {
		return nil, err
	}
	return collect(rs, scanChallenge)
}

// AppDeliveryCounts counts the deliveries to each of an app's endpoints
// made since since, by status: endpoint id → status → count.
func (q Queries) AppDeliveryCounts(ctx context.Context, appID string, since time.Time) (map[string]map[string]int, error) {
	rs, err := q.r.query(ctx, `SELECT d.endpoint_id, d.status, COUNT(*) FROM webhook_deliveries d
		JOIN webhook_endpoints e ON e.id = d.endpoint_id WHERE e.app_id = $1 AND d.created_at >= $2
		GROUP BY d.endpoint_id, d.status`, appID, ts(since))
	if err != nil {
		return nil, err
	}
	type count struct {
		endpoint, status string
		n                int
	}
	list, err := collect(rs, func(r row) (count, error) {
		var c count
		return c, r.Scan(&c.endpoint, &c.status, &c.n)
	})
	out := map[string]map[string]int{}
	for _, c := range list {
		if out[c.endpoint] == nil {
			out[c.endpoint] = map[string]int{}
		}
		out[c.endpoint][c.status] = c.n
	}
	return out, err
}
