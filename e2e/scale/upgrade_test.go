package scale

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/e2e/gatehousebin"
)

// previousRelease is the commit the rolling upgrade starts from: the
// previous release. Update it at each release (RELEASING: the release's
// commit becomes the next one's previous release). It is built from the
// repository's history, so CI needs a clone with history (not a shallow
// one); offline, the module cache serves its dependencies.
const previousRelease = "b1d4ccd"

// buildPrevious builds previousRelease's binary from git history.
func buildPrevious(t *testing.T) string {
	t.Helper()
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		skipOrFail(t, "not in a git checkout (git rev-parse: %v): the rolling upgrade builds the previous release from history", err)
	}
	repo := strings.TrimSpace(string(root))
	if out, err := exec.Command("git", "-C", repo, "cat-file", "-t", previousRelease).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "commit" {
		skipOrFail(t, "commit %s (the previous release) is not in %s's history (a shallow clone?): %s %v", previousRelease, repo, out, err)
	}
	full, err := exec.Command("git", "-C", repo, "rev-parse", previousRelease+"^{commit}").Output()
	if err != nil {
		t.Fatalf("git rev-parse %s: %v", previousRelease, err)
	}
	// The sources go to a directory named for the commit, kept between
	// runs: the build cache keys compiled packages by their directory, so
	// a run after the first rebuilds nothing, and even the first compiles
	// only Gatehouse's own packages (its dependencies, from the module
	// cache, are those this build compiled already).
	src := filepath.Join(os.TempDir(), "gatehouse-release-"+strings.TrimSpace(string(full)))
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err != nil {
		extractRelease(t, repo, src)
	}
	dir := filepath.Join(t.TempDir(), "previous")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old, err := gatehousebin.Build(dir, src)
	if err != nil {
		t.Fatalf("build the previous release %s: %v", previousRelease, err)
	}
	return old
}

// extractRelease writes previousRelease's tree to src, whole or not at all.
func extractRelease(t *testing.T, repo, src string) {
	t.Helper()
	tmp, err := os.MkdirTemp(filepath.Dir(src), filepath.Base(src)+".part-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	archive := exec.Command("git", "-C", repo, "archive", previousRelease)
	extract := exec.Command("tar", "-x", "-C", tmp)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	extract.Stdin = pipe
	var stderr bytes.Buffer
	archive.Stderr, extract.Stderr = &stderr, &stderr
	if err := extract.Start(); err != nil {
		t.Fatalf("tar: %v", err)
	}
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive %s: %v %s", previousRelease, err, stderr.Bytes())
	}
	if err := extract.Wait(); err != nil {
		t.Fatalf("tar -x: %v %s", err, stderr.Bytes())
	}
	// Another run may have written it meanwhile: either copy will do.
	if err := os.Rename(tmp, src); err != nil {
		if _, serr := os.Stat(filepath.Join(src, "go.mod")); serr != nil {
			t.Fatalf("keep the previous release's sources: %v", err)
		}
	}
}

func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// TestRollingUpgrade runs three replicas of the previous release under
// load, applies this build's migrations while they serve (the
// expand-only rule of docs/versioning.md: the old code keeps working on the
// new schema), then replaces them one by one with this build, each stopped
// gracefully (SIGTERM). No request may fail beyond those in flight on a
// stopping replica, no message may be sent twice (nothing was killed), and
// while old and new serve side by side each side signs in users whose
// codes the other sent, refreshes the other's tokens, finishes the other's
// passkey ceremonies, and both send messages.
func TestRollingUpgrade(t *testing.T) {
	dbURL, haproxy := need(t)
	began := time.Now()
	old := buildPrevious(t)
	t.Logf("previous release %s built in %s", previousRelease, time.Since(began).Round(time.Millisecond))
	r := newRig(t, dbURL)
	for slot := range replicas {
		r.start(slot, old)
	}
	r.startLB(haproxy)
	r.setup(old)

	l := newLoad(r)
	stop := l.run(actors)
	time.Sleep(2 * time.Second)

	// This build's migrations, while the previous release serves.
	var st struct {
		Migrations []struct {
			Set, Name string
			Applied   bool
		} `json:"migrations"`
	}
	before := time.Now()
	r.run(bin, &st, "migrate", "up")
	t.Logf("gatehouse migrate up (this build) while 3 previous-release replicas serve: %d migrations known, in %s",
		len(st.Migrations), time.Since(before).Round(time.Millisecond))
	time.Sleep(2 * time.Second)

	var outages []outage
	mixedFrom := time.Time{}
	var mixedTo time.Time
	for slot := range replicas {
		// Out of the balancer first, then SIGTERM. Stopping a replica the
		// balancer still sends to loses requests even though the replica
		// shuts down gracefully: HTTP keep-alive makes the balancer send
		// a request on an idle connection just as the replica closes it,
		// the request is never read, and the balancer, which must not
		// retry what may have reached a server, closes the client's
		// connection without an answer (docs/versioning.md).
		drained := time.Now()
		r.setServer(slot, "maint")
		for deadline := time.Now().Add(20 * time.Second); r.sessions(slot) > 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("replica %d still has requests from the balancer 20s after it was taken out", slot)
			}
		}
		o := outage{replica: fmt.Sprintf("r%d", slot), slot: slot, from: time.Now()}
		if err := r.replicas[slot].proc.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
			t.Fatalf("previous-release replica %d: %v", slot, err)
		}
		o.to = time.Now()
		outages = append(outages, o)
		r.start(slot, bin)
		r.setServer(slot, "ready")
		r.up(slot)
		o.from = drained
		t.Logf("replica %d upgraded: SIGTERM at %s, stopped in %s, the new one serving %s after the SIGTERM",
			slot, o.from.Format("15:04:05.000"), o.to.Sub(o.from).Round(time.Millisecond), time.Since(o.from).Round(time.Millisecond))
		switch slot {
		case 0:
			mixedFrom = time.Now()
			sideBySide(t, l, 0, 1)
			sideBySide(t, l, 2, 0)
			time.Sleep(2 * time.Second)
		case replicas - 2:
			time.Sleep(2 * time.Second)
			mixedTo = time.Now()
		default:
			time.Sleep(2 * time.Second)
		}
	}
	stop()

	settled := settle(t, r, r.db)
	t.Logf("load stopped %s after the start; settled %s later", time.Since(began).Round(time.Millisecond), settled.Round(time.Millisecond))
	if lost := checkRequests(t, l, outages); lost > 0 {
		t.Errorf("%d requests lost; want none: every replica was out of the balancer before it was stopped", lost)
	}
	checkMessages(t, r, r.db, outages) // no outage is a kill: no duplicate at all
	checkWebhooks(t, r, r.db)
	for _, line := range r.crashes() {
		t.Errorf("a server crashed by itself: %s", line)
	}

	// While old and new served side by side (slot 0 new, slot 2 old
	// throughout), both sent messages.
	sent := map[string]int{}
	for _, m := range r.mail.all() {
		if m.began.After(mixedFrom) && m.at.Before(mixedTo) {
			switch m.slot {
			case 0:
				sent["new"]++
			case replicas - 1:
				sent["previous"]++
			}
		}
	}
	if sent["new"] == 0 || sent["previous"] == 0 {
		t.Errorf("messages sent while both releases served: %v; want some from each", sent)
	}
	l.mu.Lock()
	t.Logf("messages sent side by side: %v; flows completed: %v; %d requests; whole test %s", sent, l.flows, len(l.records), time.Since(began).Round(time.Second))
	l.mu.Unlock()
}

// sideBySide signs in across two replicas, directly: the code sent by a
// verified by b, and back; the tokens each issued refreshed by the other;
// a passkey registered and used with each ceremony begun on one and
// finished on the other.
func sideBySide(t *testing.T, l *load, a, b int) {
	t.Helper()
	ctx := context.Background()
	ua, ub := l.r.replicaURL(a), l.r.replicaURL(b)
	for i, pair := range [][2]string{{ua, ub}, {ub, ua}} {
		email := fmt.Sprintf("side-%d-%d-%d@scale.test", a, b, i)
		tk, err := l.signIn(ctx, pair[0], pair[1], email)
		if err != nil {
			t.Fatalf("sign in %s, code sent by %s and verified by %s: %v", email, pair[0], pair[1], err)
		}
		for _, base := range []string{pair[0], pair[1], pair[0]} {
			if tk, err = l.refresh(ctx, base, tk); err != nil {
				t.Fatalf("refresh %s's tokens on %s: %v", email, base, err)
			}
		}
		if err := l.passkey(ctx, pair[0], pair[1], email, tk); err != nil {
			t.Fatalf("passkey for %s begun on %s and finished on %s: %v", email, pair[0], pair[1], err)
		}
	}
}
