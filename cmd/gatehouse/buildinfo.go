package main

import (
	"regexp"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// buildInfo is what the binary knows about its own build. It comes from the
// record the Go toolchain embeds (runtime/debug.ReadBuildInfo), not from
// -ldflags, so `go install …@version`, `go build` in a clone and the
// container image all report it without a build script.
type buildInfo struct {
	// Version is the module version when Go recorded one (`go install
	// module@v0.2.0` gives 0.2.0; a later commit a Go pseudo-version), else
	// the version constant.
	Version string
	// Commit is the VCS revision's first 12 hex digits, with "+dirty" when
	// the tree had uncommitted changes; "" when unknown.
	Commit string
	// Date is the time of that commit (RFC 3339, UTC): Go records no clock
	// time of the build itself, so the same commit builds the same binary.
	Date      string
	GoVersion string
}

// pseudoVersion matches Go's pseudo-versions (vX.Y.Z-[pre.]0.TIME-REV or
// vX.0.0-TIME-REV), capturing the commit time and revision.
var pseudoVersion = regexp.MustCompile(`^v\d+\.\d+\.\d+-(?:[0-9A-Za-z.-]*\.)?(\d{14})-([0-9a-f]{12})(\+[0-9A-Za-z.-]+)?$`)

func readBuildInfo() buildInfo {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return buildInfo{Version: version, GoVersion: runtime.Version()}
	}
	return buildInfoFrom(bi)
}

// buildInfoFrom reads a build record: the VCS settings `go build` stamps in
// a clone first, then what a module version says (a module downloaded by
// `go install module@version` has no VCS settings).
func buildInfoFrom(bi *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: version, GoVersion: bi.GoVersion}
	if b.GoVersion == "" {
		b.GoVersion = runtime.Version()
	}
	var rev, modified, vtime string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		case "vcs.time":
			vtime = s.Value
		}
	}
	if rev != "" {
		b.Commit = rev[:min(12, len(rev))]
		if modified == "true" {
			b.Commit += "+dirty"
		}
	}
	if t, err := time.Parse(time.RFC3339, vtime); err == nil {
		b.Date = t.UTC().Format(time.RFC3339)
	}
	mv := bi.Main.Version
	if mv == "" || mv == "(devel)" {
		return b
	}
	if m := pseudoVersion.FindStringSubmatch(mv); m != nil {
		if b.Commit == "" {
			b.Commit = m[2]
			if m[3] == "+dirty" {
				b.Commit += "+dirty"
			}
		}
		if t, err := time.Parse("20060102150405", m[1]); err == nil && b.Date == "" {
			b.Date = t.UTC().Format(time.RFC3339)
		}
		// v0.0.0-TIME-REV: no release tag precedes the commit, so the
		// constant says more than Go's placeholder.
		if strings.HasPrefix(mv, "v0.0.0-"+m[1]) {
			return b
		}
	}
	b.Version = strings.TrimPrefix(mv, "v")
	return b
}

// String is what `gatehouse version` and `--version` print after
// "gatehouse ": "0.1.0 (commit 5a1f99d0a1b2, 2026-11-26T14:20:00Z, go1.26.8)",
// leaving out what is unknown.
func (b buildInfo) String() string {
	var parts []string
	if b.Commit != "" {
		parts = append(parts, "commit "+b.Commit)
	}
	if b.Date != "" {
		parts = append(parts, b.Date)
	}
	parts = append(parts, b.GoVersion)
	return b.Version + " (" + strings.Join(parts, ", ") + ")"
}
