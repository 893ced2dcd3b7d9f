package webhookverify_test

import (
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/webhookverify"
)

func ExampleVerify() {
	secret := "whsec_3q2-7wAAAAC_dGVzdC1zZWNyZXQtZm9yLWRvY3MtMQ" // as the API returned it
	body := []byte(`{"id":"8f14e45f-ceea-467f-a0e6-1b6a1b9b6c2e","event_type":"webhook.test"}`)
	signedAt := time.Unix(1700000000, 0)
	header := webhookverify.Sign(body, signedAt, secret)
	fmt.Println(header)

	err := webhookverify.Verify(header, body, signedAt.Add(time.Minute), webhookverify.DefaultTolerance, secret)
	fmt.Println("a minute later:", err)

	err = webhookverify.Verify(header, body, signedAt.Add(time.Hour), webhookverify.DefaultTolerance, secret)
	fmt.Println("an hour later:", errors.Is(err, webhookverify.ErrTimestamp))

	err = webhookverify.Verify(header, []byte(strings.ToUpper(string(body))), signedAt, webhookverify.DefaultTolerance, secret)
	fmt.Println("other body:", errors.Is(err, webhookverify.ErrSignature))
	// Output:
	// t=1700000000,v1=66529a803d52512c29e79cc715b03cb0d65a009192dafd776178902626f42e58
	// a minute later: <nil>
	// an hour later: true
	// other body: true
}

func ExampleHandler() {
	events := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		env, _ := webhookverify.EnvelopeFrom(r.Context())
		log.Printf("event %s (%s)", env.ID, env.EventType)
		w.WriteHeader(http.StatusNoContent)
	})
	// During a rotation, list both secrets; empty values are ignored.
	http.Handle("POST /hooks/gatehouse", webhookverify.Handler(events,
		os.Getenv("GATEHOUSE_WEBHOOK_SECRET"), os.Getenv("GATEHOUSE_WEBHOOK_SECRET_OLD")))
}
