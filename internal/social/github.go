package social

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// GitHub is OAuth 2 without OpenID: the code is exchanged for an access
// token, and who signed in is read from its API (/user, /user/emails).
// Only the verified primary e-mail address counts.

// finishGitHub exchanges the code and reads the account.
func (s *Service) finishGitHub(ctx context.Context, app store.App, p loaded, cb Callback) (Assertion, error) {
	form := url.Values{"client_id": {p.settings["client_id"]}, "client_secret": {p.settings["client_secret"]}, "code": {cb.Code},
		"redirect_uri": {s.RedirectURI(app.ID)}, "code_verifier": {s.verifier(cb.State)}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.d.Endpoints.GitHub+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	if err != nil {
		return Assertion{}, providerError("the token endpoint is not a valid URL")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// GitHub answers a refused code with 200 and an error field.
	var tok struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
	}
	if err := s.oidc.do(req, &tok); err != nil {
		return Assertion{}, err
	}
	if tok.Error != "" || tok.AccessToken == "" {
		return Assertion{}, providerError("the token endpoint refused the code")
	}
	var user struct {
		ID    int64  `json:"id"`
		Login string `json:"login"`
		Name  string `json:"name"`
	}
	if err := s.githubGet(ctx, "/user", tok.AccessToken, &user); err != nil {
		return Assertion{}, err
	}
	if user.ID <= 0 {
		return Assertion{}, providerError("the user answer has no id")
	}
	var emails []struct {
		Email    string `json:"email"`
		Primary  bool   `json:"primary"`
		Verified bool   `json:"verified"`
	}
	if err := s.githubGet(ctx, "/user/emails", tok.AccessToken, &emails); err != nil {
		return Assertion{}, err
	}
	a := Assertion{Issuer: s.d.Endpoints.GitHub, Subject: strconv.FormatInt(user.ID, 10), Name: user.Name}
	if a.Name == "" {
		a.Name = user.Login
	}
	for _, e := range emails {
		if e.Primary && e.Verified {
			a.Email, a.EmailVerified = strings.ToLower(strings.TrimSpace(e.Email)), true
		}
	}
	return a, nil
}

// githubGet reads one of GitHub's API resources with the user's token.
func (s *Service) githubGet(ctx context.Context, path, accessToken string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.d.Endpoints.GitHubAPI+path, nil)
	if err != nil {
		return providerError("the API is not a valid URL")
	}
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("Authorization", "Bearer "+accessToken)
	req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	req.Header.Set("User-Agent", "Gatehouse")
	return s.oidc.do(req, v)
}
