package config

import (
	"strings"
)

// docIntro is the hand-written part of docs/configuration.md.
const docIntro = `# Configuration

<!-- Generated from internal/config by
     go test ./internal/config -run TestConfigurationDocIsCurrent -update
     Do not edit by hand. -->

Gatehouse reads its settings from four sources. Each source overrides the ones before it:

1. the built-in defaults in the table below;
2. a YAML file, if one is given with ` + "`--config PATH`" + ` (a missing or malformed file is an error);
3. environment variables named ` + "`GATEHOUSE_`" + ` plus the setting name in upper case, with dots
   replaced by underscores (` + "`http.shutdown_timeout`" + ` is ` + "`GATEHOUSE_HTTP_SHUTDOWN_TIMEOUT`" + `);
   empty variables are ignored;
4. command-line flags, but only those given on the command line.

A ` + "`GATEHOUSE_*`" + ` variable that names no setting **stops every command** (` + "`serve`" + `, ` + "`migrate`" + `, the
operator commands) outside development mode, with status 2, before anything else: a misspelt
` + "`GATEHOUSE_DATABASE_URL`" + ` would otherwise leave the default in place and put a production server's data
in a SQLite file. One line per such variable names it and, when a setting's variable is close, the one
it probably means; then the command says why it stopped:

` + "```" + `
{"time":"…","level":"ERROR","msg":"GATEHOUSE_DATABSE_URL is not a setting; did you mean GATEHOUSE_DATABASE_URL? Outside --dev the command stops: rename or unset it","variable":"GATEHOUSE_DATABSE_URL","did_you_mean":"GATEHOUSE_DATABASE_URL"}
gatehouse: not settings: GATEHOUSE_DATABSE_URL (outside --dev an unknown GATEHOUSE_ variable stops every command; rename or unset it)
` + "```" + `

In development mode (` + "`--dev`" + ` or ` + "`GATEHOUSE_DEV`" + `) the same line is a warning and the command goes on;
so it is for ` + "`gatehouse healthcheck`" + ` (the container's health check, which reads only ` + "`http.addr`" + `), and for
the variables Kubernetes puts in every pod for a Service named ` + "`gatehouse`" + ` or ` + "`gatehouse-…`" + `
(` + "`GATEHOUSE_SERVICE_HOST`" + `, ` + "`GATEHOUSE_SERVICE_PORT…`" + `, ` + "`GATEHOUSE_PORT`" + `, ` + "`GATEHOUSE_PORT_8080_TCP…`" + `),
which only warn (` + "`enableServiceLinks: false`" + ` in the pod spec removes them). The value is never logged. These variables are not settings and never warn, because the project's own
tests, scripts and examples read them: ` + "%TOOLVARS%" + `.

In the YAML file, each dot in a setting name is one level of nesting. Unknown keys are an error,
so that a typo does not silently leave a default in place:

` + "```yaml" + `
http:
  addr: 0.0.0.0:8080
  trusted_proxies: [10.0.0.0/8, 192.168.1.10/32]
base_url: https://auth.example.com
database:
  url: postgres://gatehouse@db.internal/gatehouse?sslmode=verify-full
master_key_file: /run/secrets/gatehouse-master-key
mail:
  provider: smtp
  from: Example <no-reply@example.com>
smtp:
  host: smtp.example.com
` + "```" + `

Durations use Go syntax (` + "`10s`, `1m30s`" + `). Lists are comma-separated in environment variables
and flags; in YAML they may be a list or a comma-separated string.

## Development mode

` + "`gatehouse serve --dev`" + ` needs nothing else. It stores a SQLite database in the data
directory (as it does whenever ` + "`database.url`" + ` is empty), generates a master key in
` + "`DATA_DIR/master.key`" + ` when neither ` + "`master_key`" + ` nor ` + "`master_key_file`" + ` is set,
keeps outgoing e-mail in an outbox (the default ` + "`mail.provider`" + ` in development mode) and
shows it at ` + "`/dev/outbox`" + `. Do not use it in production.

Outside development mode that key is never read on its own: a command that finds
` + "`DATA_DIR/master.key`" + ` with neither setting refuses to start and names the file. Run operator
commands on a development data directory with ` + "`--dev`" + ` too, or set ` + "`master_key_file`" + ` to the file
to keep using its key.

## Settings

Settings marked secret are never printed with their value; prefer the ` + "`_file`" + ` variant where
there is one.

`

// markdown renders docs/configuration.md from Settings.
func markdown() string {
	var b strings.Builder
	names, prefixes := ToolVariables()
	var tools []string
	for _, n := range names {
		tools = append(tools, "`"+n+"`")
	}
	for _, p := range prefixes {
		tools = append(tools, "`"+p+"*`")
	}
	b.WriteString(strings.Replace(docIntro, "%TOOLVARS%", strings.Join(tools, ", "), 1))
	b.WriteString("| Setting | Environment variable | Flag | Default | Description |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, s := range Settings() {
		flag := ""
		if s.Flag != "" {
			flag = "`--" + s.Flag + "`"
		}
		def := ""
		if s.Default != "" {
			def = "`" + s.Default + "`"
		}
		help := s.Help
		if s.Secret {
			help = "**Secret.** " + help
		}
		b.WriteString("| `" + s.Key + "` | `" + s.Env + "` | " + flag + " | " + def + " | " + cell(help) + " |\n")
	}
	return b.String()
}

// cell escapes text for a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}
