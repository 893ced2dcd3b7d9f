package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/gatehouse-auth/gatehouse/internal/access"
	"github.com/gatehouse-auth/gatehouse/internal/server"
)

// consoleCommand holds the operators' console's command-line side: sign-in
// links, which are made here only, never over HTTP (docs/console.md).
func consoleCommand(e *env) *cobra.Command {
	var email string
	link := &cobra.Command{
		Use:   "link",
		Short: "Print a single-use, 10-minute console sign-in link for a workspace member (first run and break-glass)",
		Long: "Print a link that signs the member with this e-mail address in to the console once, within 10 minutes. " +
			"The address must be a member of a workspace (an owner, on first run or to recover access). " +
			"The link is recorded in the audit log of every workspace the member belongs to; the token is not.",
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "email"); err != nil {
				return err
			}
			return e.withSystem(cmd, func(ctx context.Context, sys *server.Server) (any, error) {
				link, expires, err := sys.Console.CreateLink(ctx, access.Operator(), email)
				if err != nil {
					return nil, err
				}
				return map[string]any{"link": link, "expires_at": expires.UTC().Format(time.RFC3339)}, nil
			})
		},
	}
	link.Flags().StringVar(&email, "email", "", "the member's e-mail address (required)")
	return group(&cobra.Command{Use: "console", Short: "The operators' console: sign-in links"}, link)
}
