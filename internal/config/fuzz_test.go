package config

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// yamlQuotable reports whether s can be written as a single-quoted YAML
// scalar on one line and read back unchanged.
func yamlQuotable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		printable := r == '\t' || r >= 0x20 && r <= 0x7e || r == 0x85 || r >= 0xa0 && r <= 0xd7ff ||
			r >= 0xe000 && r <= 0xfffd && r != 0xfeff || r >= 0x10000 && r <= 0x10ffff
		if !printable {
			return false
		}
	}
	return true
}

// secretsIn lists the parts of a value that no error may repeat: a secret
// setting's whole value, and the password in a URL setting.
func secretsIn(s setting, value string) []string {
	var out []string
	if s.Secret {
		out = append(out, value)
	}
	if !strings.HasSuffix(s.Key, "url") && s.Key != "tokens.issuer" {
		return out
	}
	if u, err := url.Parse(value); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw)
		}
	} else if at := strings.LastIndexByte(value, '@'); at > 0 {
		// Unparseable, but shaped like scheme://user:password@host.
		if _, rest, ok := strings.Cut(value[:at], "://"); ok {
			if _, pw, ok := strings.Cut(rest, ":"); ok {
				out = append(out, pw)
			}
		}
	}
	return out
}

// FuzzLoadSetting sets one setting to any text, from the environment and
// from a config file. Properties: an accepted configuration validates; a
// refusal is a *SettingError naming a real setting and its variable; no
// error repeats a secret value or a URL's password; and the file and the
// environment give the same result for the same text.
func FuzzLoadSetting(f *testing.F) {
	t := table()
	for i, s := range t {
		f.Add(uint8(i), s.Default)
	}
	for _, seed := range []struct{ key, value string }{
		{"database.url", "postgres://gatehouse:hunter2secret@db:5432/gatehouse"},
		{"database.url", "postgres://gatehouse:hunter2secret@db:5432/%zz"},
		{"database.url", "mysql://gatehouse:hunter2secret@db"},
		{"sms.http_url", "https://user:hunter2secret@sms.example.com/%zz"},
		{"sms.http_url", "https://sms.example.com/send?key=1"},
		{"base_url", "https://auth.example.com/"},
		{"base_url", "https://u:hunter2secret@auth.example.com"},
		{"master_key", "hunter2secret"},
		{"master_key", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="},
		{"smtp.password", "hunter2secret"},
		{"http.trusted_proxies", "10.0.0.0/8, 192.168.1.10/32,"},
		{"http.trusted_proxies", "10.0.0.1"},
		{"http.trusted_proxies", "::ffff:10.0.0.0/104"},
		{"http.addr", "a b:80"},
		{"http.addr", ":8080"},
		{"ratelimit.send_per_ip", "5/1ns"},
		{"ratelimit.send_per_ip", " OFF "},
		{"ratelimit.send_per_ip", "2000000000/1h"},
		{"ratelimit.send_per_ip", "5 / 10m"},
		{"log.level", "DEBUG"},
		{"dev", "yes"},
		{"database.max_conns", "0x10"},
		{"tokens.refresh_grace", "1m0s"},
		{"mail.provider", "smtp"},
	} {
		for i, s := range t {
			if s.Key == seed.key {
				f.Add(uint8(i), seed.value)
			}
		}
	}
	f.Fuzz(func(t *testing.T, i uint8, value string) {
		tbl := table()
		s := tbl[int(i)%len(tbl)]
		if value == "" || strings.ContainsAny(value, "\x00") {
			return // an empty variable is ignored; the environment cannot hold NUL
		}
		fromEnv, envErr := Load(nil, "", []string{s.Env + "=" + value})
		if envErr == nil {
			if err := fromEnv.Validate(); err != nil {
				t.Fatalf("%s=%q loads, but Validate() = %v", s.Env, value, err)
			}
		} else {
			var se *SettingError
			if !errors.As(envErr, &se) || se.Env != envName(se.Key) || !known(tbl, se.Key) {
				t.Fatalf("%s=%q: error %v is not a *SettingError naming a setting", s.Env, value, envErr)
			}
			for _, secret := range secretsIn(s, value) {
				if len(secret) >= 4 && strings.Contains(envErr.Error(), secret) {
					t.Fatalf("%s=%q: error %q repeats the secret %q", s.Env, value, envErr, secret)
				}
			}
		}

		if !yamlQuotable(value) {
			return
		}
		path := filepath.Join(t.TempDir(), "gatehouse.yaml")
		parent, child, nested := strings.Cut(s.Key, ".")
		doc := s.Key + ": '" + strings.ReplaceAll(value, "'", "''") + "'\n"
		if nested {
			doc = parent + ":\n  " + child + ": '" + strings.ReplaceAll(value, "'", "''") + "'\n"
		}
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		fromFile, fileErr := Load(nil, path, nil)
		var envSE, fileSE *SettingError
		switch {
		case (envErr == nil) != (fileErr == nil):
			t.Fatalf("%s = %q: environment gives %v, file gives %v", s.Key, value, envErr, fileErr)
		case envErr == nil && !reflect.DeepEqual(fromEnv, fromFile):
			t.Fatalf("%s = %q: environment gives %+v, file gives %+v", s.Key, value, fromEnv, fromFile)
		case envErr != nil && (!errors.As(envErr, &envSE) || !errors.As(fileErr, &fileSE) || envSE.Key != fileSE.Key):
			t.Fatalf("%s = %q: environment gives %v, file gives %v", s.Key, value, envErr, fileErr)
		}
	})
}

func known(tbl []setting, key string) bool {
	for _, s := range tbl {
		if s.Key == key {
			return true
		}
	}
	return false
}
