package main

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestBuildInfoFrom reads the build records the Go toolchain writes in each
// way of getting a binary.
func TestBuildInfoFrom(t *testing.T) {
	vcs := func(rev, modified, when string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: when}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "5a1f99d0a1b2c3d4e5f60718293a4b5c6d7e8f90"
	tests := []struct {
		name     string
		main     string
		settings []debug.BuildSetting
		want     buildInfo
		line     string
	}{
		{"go run or go test: nothing recorded", "(devel)", nil,
			buildInfo{Version: version, GoVersion: "go1.26.8"}, version + " (go1.26.8)"},
		{"go build in a clone, no tag yet", "v0.0.0-20261126142546-5a1f99d0a1b2", vcs(rev, "false", "2026-11-26T14:25:46Z"),
			buildInfo{Version: version, Commit: "5a1f99d0a1b2", Date: "2026-11-26T14:25:46Z", GoVersion: "go1.26.8"},
			version + " (commit 5a1f99d0a1b2, 2026-11-26T14:25:46Z, go1.26.8)"},
		{"go build in a modified clone", "v0.0.0-20261126142546-5a1f99d0a1b2+dirty", vcs(rev, "true", "2026-11-26T14:25:46Z"),
			buildInfo{Version: version, Commit: "5a1f99d0a1b2+dirty", Date: "2026-11-26T14:25:46Z", GoVersion: "go1.26.8"}, ""},
		{"go build -buildvcs=false in a clone", "(devel)", nil,
			buildInfo{Version: version, GoVersion: "go1.26.8"}, ""},
		{"go build at a release tag", "v0.2.0", vcs(rev, "false", "2026-12-01T09:00:00+01:00"),
			buildInfo{Version: "0.2.0", Commit: "5a1f99d0a1b2", Date: "2026-12-01T08:00:00Z", GoVersion: "go1.26.8"}, ""},
		{"go install module@v0.2.0: no VCS settings", "v0.2.0", nil,
			buildInfo{Version: "0.2.0", GoVersion: "go1.26.8"}, "0.2.0 (go1.26.8)"},
		{"go install module@main after a release", "v0.2.1-0.20261203101112-abcdefabcdef", nil,
			buildInfo{Version: "0.2.1-0.20261203101112-abcdefabcdef", Commit: "abcdefabcdef", Date: "2026-12-03T10:11:12Z", GoVersion: "go1.26.8"}, ""},
		{"go install module@commit after a pre-release", "v0.3.0-rc.1.0.20261203101112-abcdefabcdef", nil,
			buildInfo{Version: "0.3.0-rc.1.0.20261203101112-abcdefabcdef", Commit: "abcdefabcdef", Date: "2026-12-03T10:11:12Z", GoVersion: "go1.26.8"}, ""},
		{"go install module@commit before any tag", "v0.0.0-20261203101112-abcdefabcdef", nil,
			buildInfo{Version: version, Commit: "abcdefabcdef", Date: "2026-12-03T10:11:12Z", GoVersion: "go1.26.8"},
			version + " (commit abcdefabcdef, 2026-12-03T10:11:12Z, go1.26.8)"},
		{"a pre-release tag", "v0.3.0-rc.1", nil, buildInfo{Version: "0.3.0-rc.1", GoVersion: "go1.26.8"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/gatehouse-auth/gatehouse", Version: tt.main}, Settings: tt.settings}
			got := buildInfoFrom(bi)
			if got != tt.want {
				t.Errorf("buildInfoFrom(%q) = %+v; want %+v", tt.main, got, tt.want)
			}
			if tt.line != "" && got.String() != tt.line {
				t.Errorf("String() = %q; want %q", got.String(), tt.line)
			}
		})
	}
}

// TestBuildInfoOfThisBinary: the test binary has a build record; whatever
// it holds, the line starts with a version and ends with the Go version.
func TestBuildInfoOfThisBinary(t *testing.T) {
	b := readBuildInfo()
	if b.Version == "" || !strings.HasPrefix(b.GoVersion, "go") {
		t.Fatalf("readBuildInfo() = %+v; want a version and a Go version", b)
	}
	if s := b.String(); !strings.HasPrefix(s, b.Version+" (") || !strings.HasSuffix(s, b.GoVersion+")") {
		t.Errorf("String() = %q", s)
	}
}
