package chaos

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/webhookverify"
)

// receipt is one delivery attempt the receiver got.
type receipt struct {
	eventType string
	body      []byte
	answered  int // the status it answered; 0 when the sender went away first
}

// Endpoints, by path: every event goes to both.
const (
	// flaky answers 500 to a tenth of first attempts, so retries run; its
	// webhook allows 10 retries.
	flaky = "/flaky"
	// lastTry allows no retry (retry_limit 0): a kill during its only
	// attempt leaves the delivery's last attempt cut off (checklist 70).
	lastTry = "/last-try"
)

// receiver serves the webhook endpoints. It verifies every request and,
// while holding is set, keeps requests open (so kills land inside
// deliveries).
type receiver struct {
	srv *httptest.Server

	mu      sync.Mutex
	secrets map[string]string // by path
	rng     *rand.Rand
	got     map[string]map[string][]receipt // by path, then envelope id
	bad     []string
	holding bool
	held    int
	release chan struct{}
}

func newReceiver(t *testing.T, seed uint64) *receiver {
	r := &receiver{rng: rand.New(rand.NewPCG(seed, 2)), secrets: map[string]string{}, release: make(chan struct{}),
		got: map[string]map[string][]receipt{flaky: {}, lastTry: {}}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(func() {
		r.hold(false)
		r.srv.Close()
	})
	return r
}

func (r *receiver) url(path string) string { return r.srv.URL + path }

func (r *receiver) setSecret(path, s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets[path] = s
}

// hold starts or stops holding requests open; stopping answers the held ones.
func (r *receiver) hold(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.holding && !on {
		close(r.release)
		r.release = make(chan struct{})
	}
	r.holding = on
}

// inFlight is how many requests are being held open.
func (r *receiver) inFlight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	r.mu.Lock()
	secret, known := r.secrets[req.URL.Path]
	r.mu.Unlock()
	if err == nil && !known {
		err = fmt.Errorf("no endpoint at %s", req.URL.Path)
	}
	if err == nil {
		err = webhookverify.Verify(req.Header.Get(webhookverify.Header), body, time.Now(), 0, secret)
	}
	var env struct {
		ID        string `json:"id"`
		EventType string `json:"event_type"`
	}
	if err == nil {
		err = json.Unmarshal(body, &env)
	}
	if err == nil && (env.ID == "" || env.EventType == "") {
		err = fmt.Errorf("envelope without id or event_type")
	}
	r.mu.Lock()
	if err != nil {
		r.bad = append(r.bad, fmt.Sprintf("%v: %.300s", err, body))
		r.mu.Unlock()
		http.Error(w, "bad delivery", http.StatusBadRequest)
		return
	}
	got := r.got[req.URL.Path]
	first := len(got[env.ID]) == 0
	got[env.ID] = append(got[env.ID], receipt{eventType: env.EventType, body: body})
	i := len(got[env.ID]) - 1
	fail := req.URL.Path == flaky && first && r.rng.IntN(10) == 0
	slow := time.Duration(0)
	if r.rng.IntN(5) == 0 {
		slow = time.Duration(r.rng.IntN(100)) * time.Millisecond
	}
	holding, release := r.holding, r.release
	if holding {
		r.held++
	}
	r.mu.Unlock()

	status := http.StatusOK
	if fail {
		status = http.StatusInternalServerError
	}
	wait := slow
	if holding {
		wait = 3 * time.Second // released early by hold(false)
	}
	timer := time.NewTimer(wait)
	select {
	case <-timer.C:
	case <-release:
	case <-req.Context().Done():
	}
	timer.Stop()
	r.mu.Lock()
	if holding {
		r.held--
	}
	gone := req.Context().Err() != nil
	if !gone {
		got[env.ID][i].answered = status
	}
	r.mu.Unlock()
	if !gone {
		w.WriteHeader(status)
	}
}

// receipts returns a copy of what each endpoint has seen, and the requests
// the receiver refused.
func (r *receiver) receipts() (map[string]map[string][]receipt, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]map[string][]receipt{}
	for path, byID := range r.got {
		out[path] = make(map[string][]receipt, len(byID))
		for id, list := range byID {
			out[path][id] = append([]receipt(nil), list...)
		}
	}
	return out, append([]string(nil), r.bad...)
}

// accepted reports whether the receiver answered 200 to event id at least once.
func accepted(list []receipt) bool {
	for _, rc := range list {
		if rc.answered == http.StatusOK {
			return true
		}
	}
	return false
}

// sameBodies reports whether every attempt carried want, byte for byte.
func sameBodies(list []receipt, want []byte) bool {
	for _, rc := range list {
		if !bytes.Equal(rc.body, want) {
			return false
		}
	}
	return true
}
