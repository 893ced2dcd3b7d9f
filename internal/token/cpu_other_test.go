//go:build !unix

package token

import "time"

// processCPU is unknown here: the benchmarks then report ns/op only.
func processCPU() time.Duration { return 0 }
