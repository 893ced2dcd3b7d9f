package httpapi

import (
	"log/slog"
	"time"
)

func slogStr(k, v string) slog.Attr     { return slog.String(k, v) }
func slogInt(k string, v int) slog.Attr { return slog.Int(k, v) }
func slogDur(k string, d time.Duration) slog.Attr {
	return slog.Float64(k, float64(d.Microseconds())/1000)
}

func levelFor(status int) slog.Level {
	if status >= 500 {
		return slog.LevelError
	}
	return slog.LevelInfo
}
