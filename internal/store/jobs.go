package store

import (
	"context"
	"fmt"
	"time"
)

// RescueJobs makes the jobs of queue that have been running for longer than
// after available again, each with an error saying why, and reports how many.
// A job runs that long only when the process working it stopped (a worker's
// own deadline is shorter), so nobody will finish it.
//
// River rescues such jobs itself, but only on its elected leader and only
// every 30 s: a server restarted after a crash becomes leader once the dead
// one's lease ends, finds the jobs not yet old enough and leaves them for
// another 30 s. This statement is the same rescue, cheap enough to run every
// few seconds on every replica: the row's state and age are checked in the
// UPDATE itself, so two replicas rescuing at once, or a worker fetching the
// job again in between, never hand it out twice. Jobs on their last attempt
// are left to River, which discards them. Times are the database's, as River's are.
func (q Queries) RescueJobs(ctx context.Context, queue string, after time.Duration, reason string) (int64, error) {
	n, err := q.w.exec(ctx, q.d.rescueJobs, after.Seconds(), queue, reason)
	if err != nil {
		return 0, fmt.Errorf("store: rescue jobs: %w", err)
	}
	return n, nil
}
