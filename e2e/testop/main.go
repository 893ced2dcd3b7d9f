// Command testop serves a real OpenID provider (zitadel/oidc's certified
// OP, through internal/social/socialtest) on 127.0.0.1 for the browser
// suite's social sign-in test. It prints "issuer=<url>" once it listens and
// serves until killed. Accounts: ada (verified e-mail) and eve (unverified),
// password "pw".
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/internal/social/socialtest"
)

func main() {
	client := flag.String("client", "gatehouse", "the client id")
	secret := flag.String("secret", "", "the client secret")
	redirects := flag.String("redirect", "", "the registered redirect URIs, comma-separated")
	domain := flag.String("domain", "example.com", "the accounts' e-mail domain")
	flag.Parse()
	if *secret == "" || *redirects == "" {
		fmt.Fprintln(os.Stderr, "testop: -secret and -redirect are required")
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "testop:", err)
		os.Exit(1)
	}
	issuer := "http://" + ln.Addr().String()
	op := socialtest.New(issuer, []socialtest.User{
		{ID: "ada", Email: "ada@" + *domain, EmailVerified: true, FirstName: "Ada", LastName: "Lovelace"},
		{ID: "eve", Email: "eve@" + *domain},
	}, []socialtest.Client{{ID: *client, Secret: *secret, Redirects: strings.Split(*redirects, ",")}})
	fmt.Printf("issuer=%s\n", issuer)
	srv := &http.Server{Handler: op.Handler, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "testop:", err)
		os.Exit(1)
	}
}
