// Command quickstart is a small app that signs users in with Gatehouse: a web page that uses the
// unmodified client SDK @scute/core (send an e-mail code, enter it, see who you are) and a backend
// route, GET /api/me, that checks the page's access token with package sessionverify and answers
// from its claims. See README.md.
//
//	go run ./cmd/gatehouse serve --dev     # Gatehouse, writes gatehouse-data/bootstrap.json
//	go run ./examples/quickstart           # this app, on http://localhost:3000
package main

import (
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/gatehouse-auth/gatehouse/sessionverify"
)

//go:embed static
var static embed.FS

func main() {
	addr := flag.String("addr", "localhost:3000", "where to serve the app; the dev app allows the origin http://localhost:3000")
	bootstrap := flag.String("bootstrap", "gatehouse-data/bootstrap.json", "the dev server's bootstrap.json, for the app id and Gatehouse's URL")
	appID := flag.String("app-id", "", "the Gatehouse app id (default: from -bootstrap)")
	gatehouse := flag.String("gatehouse", "", "Gatehouse's base URL (default: from -bootstrap)")
	webDir := flag.String("web", "examples/quickstart/web", "the npm project that builds the browser bundle of @scute/core")
	flag.Parse()

	if *appID == "" || *gatehouse == "" {
		b, err := readBootstrap(*bootstrap)
		if err != nil {
			log.Fatalf("%v\nStart Gatehouse first, from the repository root: go run ./cmd/gatehouse serve --dev\n"+
				"(or give -app-id and -gatehouse)", err)
		}
		if *appID == "" {
			*appID = b.AppID
		}
		if *gatehouse == "" {
			*gatehouse = b.BaseURL
		}
	}
	bundle, err := browserBundle(*webDir)
	if err != nil {
		log.Fatal(err)
	}

	// The one line of Gatehouse in the backend: a verifier of this app's access tokens.
	verifier, err := sessionverify.New(sessionverify.Config{BaseURL: *gatehouse, AppID: *appID})
	if err != nil {
		log.Fatal(err)
	}

	mux := http.NewServeMux()
	page, _ := fs.Sub(static, "static")
	mux.Handle("GET /", http.FileServerFS(page))
	mux.HandleFunc("GET /scute.js", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, bundle) })
	// What the page needs to start the SDK. Nothing here is secret.
	mux.HandleFunc("GET /config.json", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]string{"app_id": *appID, "gatehouse_url": *gatehouse})
	})
	mux.Handle("GET /api/me", verifier.Middleware(http.HandlerFunc(me)))

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	// The browser must open the app at an origin the Gatehouse app allows (see README.md).
	fmt.Printf("Quickstart: http://localhost:%s (Gatehouse %s, app %s)\n", port, *gatehouse, *appID)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}

// me answers who the caller is, from the claims of the access token that the middleware verified.
// An access token carries ids, not the e-mail address: the page shows that from the SDK.
func me(w http.ResponseWriter, r *http.Request) {
	c, _ := sessionverify.ClaimsFrom(r.Context())
	writeJSON(w, map[string]any{
		"user_id":    c.UserID,
		"session_id": c.SessionID,
		"app_id":     c.AppID,
		"signed_in":  c.AMR, // how: email_otp, magic_link, webauthn, …
		"auth_time":  time.Unix(c.AuthTime, 0).UTC(),
		"expires_at": time.Unix(c.ExpiresAt, 0).UTC(),
	})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

type bootstrapFile struct {
	AppID   string `json:"app_id"`
	BaseURL string `json:"base_url"`
}

func readBootstrap(path string) (bootstrapFile, error) {
	var b bootstrapFile
	raw, err := os.ReadFile(path)
	if err != nil {
		return b, fmt.Errorf("cannot read %s: %w", path, err)
	}
	if err := json.Unmarshal(raw, &b); err != nil || b.AppID == "" || b.BaseURL == "" {
		return b, fmt.Errorf("%s lacks app_id or base_url", path)
	}
	return b, nil
}

// browserBundle returns the path of the browser build of @scute/core, building it on the first
// run with npm: the package carries no licence that would let this repository ship a copy, so it
// comes from the npm registry, pinned by web/package-lock.json.
func browserBundle(dir string) (string, error) {
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		if _, err2 := os.Stat(filepath.Join("web", "package.json")); err2 != nil {
			return "", fmt.Errorf("no npm project at %s: run this from the repository root, or give -web", dir)
		}
		dir = "web" // run from examples/quickstart
	}
	bundle := filepath.Join(dir, "dist", "scute.js")
	if _, err := os.Stat(bundle); err == nil {
		return bundle, nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", errors.New("the page needs @scute/core from npm once: install Node.js 20 or later (with npm) and run this again")
	}
	fmt.Println("First run: fetching @scute/core 1.2.2 with npm and bundling it for the browser…")
	for _, args := range [][]string{{"ci", "--omit=dev", "--no-audit", "--no-fund"}, {"run", "build"}} {
		cmd := exec.Command("npm", args...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("npm %s in %s: %w", args[0], dir, err)
		}
	}
	return bundle, nil
}
