package ratelimit

import (
	"math"
	"testing"
	"time"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		in   string
		want Rule
	}{
		{"5/10m", Rule{5, 10 * time.Minute}},
		{"30/1h", Rule{30, time.Hour}},
		{"1/1s", Rule{1, time.Second}},
		{" 2 / 90s ", Rule{2, 90 * time.Second}},
		{"100/250ms", Rule{100, 250 * time.Millisecond}},
		{"3/24h", Rule{3, 24 * time.Hour}},
		{"off", Rule{}},
		{"OFF", Rule{}},
		{"0", Rule{}},
	}
	for _, tt := range tests {
		got, err := ParseRule(tt.in)
		if err != nil {
			t.Errorf("ParseRule(%q) error: %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseRule(%q) = %+v; want %+v", tt.in, got, tt.want)
		}
	}
}

func TestParseRuleErrors(t *testing.T) {
	for _, in := range []string{
		"", "5", "5/", "/1m", "0/1m", "-1/1m", "x/1m", "5/0s", "5/-1m", "5/1500us", "5/1x", "5/m",
		"2000000000/1s", "5/10m/2", "on",
	} {
		if got, err := ParseRule(in); err == nil {
			t.Errorf("ParseRule(%q) = %+v, nil; want an error", in, got)
		}
	}
}

func TestRuleString(t *testing.T) {
	tests := []struct {
		r    Rule
		want string
	}{
		{Rule{5, 10 * time.Minute}, "5/10m"},
		{Rule{30, time.Hour}, "30/1h"},
		{Rule{1, time.Second}, "1/1s"},
		{Rule{2, 90 * time.Second}, "2/90s"},
		{Rule{1, 36 * time.Hour}, "1/36h"},
		{Rule{3, 1500 * time.Millisecond}, "3/1.5s"},
		{Rule{3, 250 * time.Millisecond}, "3/250ms"},
		{Rule{}, "off"},
		{Rule{5, 0}, "off"},
		{Rule{0, time.Minute}, "off"},
	}
	for _, tt := range tests {
		got := tt.r.String()
		if got != tt.want {
			t.Errorf("%+v.String() = %q; want %q", tt.r, got, tt.want)
		}
		back, err := ParseRule(got)
		if err != nil {
			t.Errorf("ParseRule(%q) error: %v", got, err)
			continue
		}
		want := tt.r
		if want.Disabled() {
			want = Rule{}
		}
		if back != want {
			t.Errorf("ParseRule(%q) = %+v; want %+v", got, back, want)
		}
	}
}

func TestRuleDisabled(t *testing.T) {
	tests := []struct {
		r    Rule
		want bool
	}{
		{Rule{}, true},
		{Rule{0, time.Minute}, true},
		{Rule{-1, time.Minute}, true},
		{Rule{5, 0}, true},
		{Rule{5, -time.Second}, true},
		{Rule{1, time.Millisecond}, false},
		{Rule{5, time.Minute}, false},
	}
	for _, tt := range tests {
		if got := tt.r.Disabled(); got != tt.want {
			t.Errorf("%+v.Disabled() = %v; want %v", tt.r, got, tt.want)
		}
	}
}

func TestRuleWindow(t *testing.T) {
	tests := []struct {
		r                       Rule
		wantInterval, wantBurst int64
	}{
		{Rule{5, time.Minute}, 12_000, 60_000},
		{Rule{5, 10 * time.Minute}, 120_000, 600_000},
		{Rule{1, time.Second}, 1000, 1000},
		{Rule{7, time.Second}, 143, 1001}, // rounded up: never more than 7 per second
		{Rule{1000, time.Millisecond}, 1, 1000},
	}
	for _, tt := range tests {
		gotI, gotB := tt.r.window()
		if gotI != tt.wantInterval || gotB != tt.wantBurst {
			t.Errorf("%+v.window() = %d, %d; want %d, %d", tt.r, gotI, gotB, tt.wantInterval, tt.wantBurst)
		}
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want int
	}{
		{-5 * time.Second, 1},
		{0, 1},
		{time.Millisecond, 1},
		{time.Second, 1},
		{1001 * time.Millisecond, 2},
		{12 * time.Second, 12},
		{59500 * time.Millisecond, 60},
		{time.Hour, 3600},
		{math.MaxInt64, math.MaxInt64/int(time.Second) + 1},
	}
	for _, tt := range tests {
		if got := RetryAfterSeconds(tt.d); got != tt.want {
			t.Errorf("RetryAfterSeconds(%v) = %d; want %d", tt.d, got, tt.want)
		}
	}
}
