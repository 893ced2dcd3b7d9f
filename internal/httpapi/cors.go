package httpapi

import (
	"net/http"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/tenant"
)

// corsHeaders are what the client SDK sends (client-compat §1.2).
const corsHeaders = "Content-Type, Authorization, X-Authorization, X-Refresh-Token, X-Fingerprint, X-Request-Id"

// cors answers credentialed CORS for the origins an app allows: the exact
// Origin is echoed (never "*"), and other origins get no CORS headers.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Add("Vary", "Origin")
		allowed := false
		if appID := appIDFromPath(r.URL.Path); appID != "" {
			if app, err := s.Tenants.App(r.Context(), appID); err == nil {
				allowed = tenant.AllowsOrigin(app, origin)
			}
		}
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if allowed {
			h := w.Header()
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Expose-Headers", "X-Request-Id, Retry-After")
			if preflight {
				h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
				h.Set("Access-Control-Allow-Headers", corsHeaders)
				h.Set("Access-Control-Max-Age", "600")
			}
		}
		if preflight {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// appIDFromPath finds the app id in the three path families.
func appIDFromPath(p string) string {
	parts := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 4)
	if len(parts) < 2 || parts[0] != "v1" {
		return ""
	}
	switch parts[1] {
	case "auth", "apps":
		if len(parts) >= 3 {
			return parts[2]
		}
		return ""
	case "workspaces", "openapi.json", "docs", "":
		return ""
	}
	return parts[1]
}
