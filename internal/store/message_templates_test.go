package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/store"
	"github.com/gatehouse-auth/gatehouse/internal/store/storetest"
)

func TestMessageTemplates(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		_, app := seed(t, db)
		put := func(m store.MessageTemplate) store.MessageTemplate {
			t.Helper()
			got, err := db.PutMessageTemplate(ctx, m)
			if err != nil {
				t.Fatalf("PutMessageTemplate(%+v): %v", m, err)
			}
			return got
		}
		sms := put(store.MessageTemplate{AppID: app.ID, Name: "login_code", Channel: "sms", Locale: "fr", Text: "{{.Code}}", UpdatedAt: t0})
		if sms.CreatedAt != t0.Truncate(time.Microsecond) || sms.UpdatedAt != sms.CreatedAt || sms.Text != "{{.Code}}" {
			t.Errorf("put = %+v", sms)
		}
		put(store.MessageTemplate{AppID: app.ID, Name: "login_code", Channel: "email", Locale: "fr", Subject: "S", Text: "T", HTML: "<p>H</p>", UpdatedAt: t0})
		later := t0.Add(time.Hour)
		again := put(store.MessageTemplate{AppID: app.ID, Name: "login_code", Channel: "sms", Locale: "fr", Text: "v2 {{.Code}}", UpdatedAt: later})
		if again.Text != "v2 {{.Code}}" || again.CreatedAt != sms.CreatedAt || again.UpdatedAt != later.Truncate(time.Microsecond) {
			t.Errorf("replace = %+v; want the new text, the first CreatedAt and the new UpdatedAt", again)
		}
		list, err := db.ListMessageTemplates(ctx, app.ID)
		if err != nil || len(list) != 2 || list[0].Channel != "email" || list[0].HTML != "<p>H</p>" || list[1].Text != "v2 {{.Code}}" {
			t.Fatalf("ListMessageTemplates = %+v, %v", list, err)
		}
		if err := db.DeleteMessageTemplate(ctx, app.ID, "login_code", "sms", "fr"); err != nil {
			t.Errorf("DeleteMessageTemplate: %v", err)
		}
		if err := db.DeleteMessageTemplate(ctx, app.ID, "login_code", "sms", "fr"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("DeleteMessageTemplate again = %v; want ErrNotFound", err)
		}
		if list, _ := db.ListMessageTemplates(ctx, "other"); len(list) != 0 {
			t.Errorf("another app's list = %+v", list)
		}
	})
}

func TestChallengeShortLink(t *testing.T) {
	storetest.ForEach(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		ws, app := seed(t, db)
		err := db.Tx(ctx, func(tx *store.Tx) error {
			if err := tx.CreateBaseUser(ctx, store.BaseUser{ID: "b1", WorkspaceID: ws.ID, Phone: "+15550100", CreatedAt: t0}); err != nil {
				return err
			}
			return tx.CreateAppUser(ctx, store.AppUser{ID: "u1", AppID: app.ID, UserID: "b1", Status: store.StatusActive, Phone: "+15550100",
				CreatedAt: t0, UpdatedAt: t0})
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range []store.Challenge{
			{ID: "c1", ShortHash: "h1", ShortTokenSealed: "sealed1"},
			{ID: "c2"}, {ID: "c3"}, // no short link: many challenges without one
		} {
			c.AppID, c.AppUserID, c.Purpose, c.Method, c.Recipient, c.Status = app.ID, "u1", "authenticate", "magic_link", "+15550100", "pending"
			c.SecretHash, c.RemainingAttempts, c.CreatedAt, c.ExpiresAt = "s"+c.ID, 1, t0, t0.Add(time.Duration(i+1)*time.Minute)
			if err := db.CreateChallenge(ctx, c); err != nil {
				t.Fatalf("CreateChallenge(%s): %v", c.ID, err)
			}
		}
		c, sealed, err := db.GetChallengeByShortLink(ctx, "h1")
		if err != nil || c.ID != "c1" || sealed != "sealed1" || c.Recipient != "+15550100" {
			t.Errorf("GetChallengeByShortLink = %+v, %q, %v", c, sealed, err)
		}
		if _, _, err := db.GetChallengeByShortLink(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetChallengeByShortLink(unknown) = %v; want ErrNotFound", err)
		}
	})
}
