package webhook

import (
	"context"
	"testing"
	"time"
)

// The gate's decisions, with the time a full app or endpoint last released
// a slot set by hand rather than waited for.
func TestGate(t *testing.T) {
	ctx := context.Background()
	g := newGate(2, 4)
	for _, ep := range []string{"a1", "a2"} {
		if ok, _ := g.enter(ctx, "A", ep); !ok {
			t.Fatalf("enter(A, %s) = false; want a slot", ep)
		}
	}

	// A is at its share and has released nothing for 5 s: stuck. Its next
	// job does not wait and is told to stay in the queue about that long.
	g.apps["A"].moved = time.Now().Add(-5 * time.Second)
	if ok, retryIn := g.enter(ctx, "A", "a3"); ok || retryIn < 5*time.Second || retryIn > AttemptTimeout {
		t.Errorf("enter(A) while A is stuck = %v, %v; want false, 5 s to %v", ok, retryIn, AttemptTimeout)
	}
	g.apps["A"].moved = time.Now().Add(-time.Hour)
	if _, retryIn := g.enter(ctx, "A", "a3"); retryIn != AttemptTimeout {
		t.Errorf("enter(A) stuck for an hour: retry in %v; want %v", retryIn, AttemptTimeout)
	}

	// Another app is not affected.
	if ok, _ := g.enter(ctx, "B", "b1"); !ok {
		t.Errorf("enter(B) while A is stuck = false; want a slot")
	}

	// A has just released a slot, so it is moving: a job for A waits for
	// its next slot (here for as long as it takes) and gets it, whether it
	// started waiting before the release or after.
	g.apps["A"].moved = time.Now()
	g.wait = time.Hour
	got := make(chan bool)
	go func() { ok, _ := g.enter(ctx, "A", "a3"); got <- ok }()
	g.leave("A", "a1")
	if !<-got {
		t.Errorf("enter(A) after A released a slot = false; want the slot")
	}

	// An endpoint at its 4 attempts, stuck, sends its next job back to the
	// queue even though its app has room.
	h := newGate(8, 4)
	for range 4 {
		if ok, _ := h.enter(ctx, "C", "c1"); !ok {
			t.Fatal("enter(C, c1) = false; want a slot")
		}
	}
	h.endpoints["c1"].moved = time.Now().Add(-2 * time.Second)
	if ok, retryIn := h.enter(ctx, "C", "c1"); ok || retryIn < 2*time.Second {
		t.Errorf("enter(C, c1) while c1 is stuck = %v, %v; want false, at least 2 s", ok, retryIn)
	}
	if ok, _ := h.enter(ctx, "C", "c2"); !ok {
		t.Errorf("enter(C, c2) = false; want a slot (app C has room)")
	}

	// Every slot released: nothing is left behind.
	g.leave("A", "a2")
	g.leave("A", "a3")
	g.leave("B", "b1")
	if len(g.apps) != 0 || len(g.endpoints) != 0 {
		t.Errorf("after every leave: apps %v endpoints %v; want none", g.apps, g.endpoints)
	}
}
