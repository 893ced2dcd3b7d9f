//go:build unix

package token

import (
	"syscall"
	"time"
)

// processCPU is the user + system CPU time this process has used: on a
// shared machine a benchmark's ns/op counts the time other processes held
// the CPU, its CPU time does not.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
