package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/spf13/cobra"
)

// healthcheckCommand asks a running server's /healthz: the container image
// has no shell and no curl, so its HEALTHCHECK runs the binary itself.
func healthcheckCommand(e *env) *cobra.Command {
	var url string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when the server's /healthz answers 200 (for container health checks)",
		Long: "Ask GET /healthz of the server that the settings describe (http.addr, with 127.0.0.1 for an\n" +
			"unspecified host) or of --url, and exit 0 when it answers 200, 1 otherwise.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" {
				cfg, err := e.loadConfig(cmd, false)
				if err != nil {
					return err
				}
				if url, err = healthURL(cfg.HTTP.Addr); err != nil {
					return usageError(err)
				}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return usageError(fmt.Errorf("--url: %w", err))
			}
			// No proxy from the environment: the server is local.
			client := &http.Client{Transport: &http.Transport{}, CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			}}
			resp, err := client.Do(req)
			if err != nil {
				return fmt.Errorf("healthcheck: %w", err)
			}
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("healthcheck: GET %s answered %s", url, resp.Status)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "url", "", "URL to ask instead (default http://HOST:PORT/healthz from http.addr)")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer")
	return cmd
}

// healthURL is the /healthz URL of a server listening on addr, reached from
// the same host.
func healthURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", err
	}
	if port == "0" {
		return "", errors.New("http.addr has port 0 (chosen at start): give --url")
	}
	if ip, err := netip.ParseAddr(host); host == "" || err == nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if err == nil && ip.Is6() {
			host = "::1"
		}
	}
	return "http://" + net.JoinHostPort(host, port) + "/healthz", nil
}
