package config

import (
	"regexp"
	"slices"
	"strings"
)

// UnknownVariable is a GATEHOUSE_* environment variable that names no
// setting. Load ignores it; the commands warn about it in development mode
// and refuse to run outside it, because a misspelt variable otherwise
// silently leaves a default in place (a typo in GATEHOUSE_DATABASE_URL would
// put a server on SQLite).
type UnknownVariable struct {
	// Name is the variable's name. Its value is never kept: it may be secret.
	Name string
	// Suggestion is the variable of the setting the name is closest to, or "".
	Suggestion string
}

// Message is the warning for u, naming it and, when there is one, the
// setting's variable it probably means.
func (u UnknownVariable) Message() string {
	msg := u.Name + " is not a setting and is ignored"
	if u.Suggestion != "" {
		msg += "; did you mean " + u.Suggestion + "?"
	}
	return msg
}

// ServiceLink reports whether u has the shape of the variables Kubernetes
// puts in every pod for each Service of the namespace (enableServiceLinks,
// on by default): a Service named gatehouse (or gatehouse-…) gives
// GATEHOUSE_SERVICE_HOST, GATEHOUSE_SERVICE_PORT[_NAME], GATEHOUSE_PORT and
// GATEHOUSE_PORT_8080_TCP[_PROTO|_PORT|_ADDR]. They only warn: refusing
// them would stop a server that runs behind its own Service.
func (u UnknownVariable) ServiceLink() bool {
	return serviceLink.MatchString(u.Name)
}

var serviceLink = regexp.MustCompile(`^GATEHOUSE(_[A-Z0-9_]+)?_(SERVICE_HOST|SERVICE_PORT(_[A-Z0-9_]+)?|PORT|PORT_[0-9]+_(TCP|UDP|SCTP)(_(PROTO|PORT|ADDR))?)$`)

// Refusal is the error line for u outside development mode.
func (u UnknownVariable) Refusal() string {
	msg := u.Name + " is not a setting"
	if u.Suggestion != "" {
		msg += "; did you mean " + u.Suggestion + "?"
	}
	return msg + " Outside --dev the command stops: rename or unset it"
}

// ToolVariables are the GATEHOUSE_* variables that are not settings but are
// read by the project's own tests, scripts and documented examples, so that
// they never warn: exact names, and prefixes ending in "_". They are listed
// in docs/configuration.md.
func ToolVariables() (names, prefixes []string) {
	return []string{
			"GATEHOUSE_BIN",                // e2e/sdk: the server binary under test
			"GATEHOUSE_TESTOP_BIN",         // e2e/sdk: the OpenID provider of the social sign-in test
			"GATEHOUSE_CONSOLE_SHOTS",      // e2e/sdk: where the console test saves docs/console.md's screenshots
			"GATEHOUSE_HOSTED_SHOTS",       // e2e/sdk: where the hosted-pages test saves docs/hosted-pages.md's screenshots
			"GATEHOUSE_BENCH_USERS",        // internal/web: users of BenchmarkConsolePages (default 100 000)
			"GATEHOUSE_TEST_POSTGRES_URL",  // the tests' PostgreSQL server
			"GATEHOUSE_TEST_AS_MAIN",       // cmd/gatehouse tests: the test binary runs as gatehouse
			"GATEHOUSE_ERRDOCS_DUMP",       // internal/httpapi tests: write every error answered to this file
			"GATEHOUSE_WEBHOOK_SECRET",     // docs/webhooks.md: a receiver's signing secret
			"GATEHOUSE_WEBHOOK_SECRET_OLD", // and the one it replaces
		}, []string{
			"GATEHOUSE_E2E_",   // e2e/sdk
			"GATEHOUSE_CHAOS_", // e2e/chaos
			"GATEHOUSE_SCALE_", // e2e/scale
		}
}

// UnknownVariables returns the GATEHOUSE_* variables in environ (os.Environ
// shape) that name no setting and are not tool variables, sorted by name,
// each once, with a suggestion when a setting's variable (or flag) is close.
func UnknownVariables(environ []string) []UnknownVariable {
	t := table()
	known := make(map[string]bool, len(t))
	for _, s := range t {
		known[s.Env] = true
	}
	names, prefixes := ToolVariables()
	var out []UnknownVariable
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, envPrefix) || known[name] || slices.Contains(names, name) ||
			slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(name, p) }) ||
			slices.ContainsFunc(out, func(u UnknownVariable) bool { return u.Name == name }) {
			continue
		}
		out = append(out, UnknownVariable{Name: name, Suggestion: suggest(name, t)})
	}
	slices.SortFunc(out, func(a, b UnknownVariable) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// suggest returns the variable of the setting name most likely means: one
// whose flag the name spells (GATEHOUSE_ADDR for --addr), else the nearest
// by edit distance if it is near enough (a fourth of the name's length,
// and at least 2), else "".
func suggest(name string, t []setting) string {
	rest := strings.TrimPrefix(name, envPrefix)
	flag := strings.ToLower(strings.ReplaceAll(rest, "_", "-"))
	for _, s := range t {
		if s.Flag != "" && s.Flag == flag {
			return s.Env
		}
	}
	best, bestDist := "", max(2, len(rest)/4)+1
	for _, s := range t {
		if d := editDistance(rest, strings.TrimPrefix(s.Env, envPrefix)); d < bestDist {
			best, bestDist = s.Env, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// insertions, deletions, substitutions and swaps of two neighbours each
// count 1, so DATABSE_URL is 1 from DATABASE_URL and DATBAASE_URL 2.
func editDistance(a, b string) int {
	// Three rows of the dynamic-programming table suffice.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
