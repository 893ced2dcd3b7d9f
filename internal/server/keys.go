package server

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gatehouse-auth/gatehouse/internal/config"
)

// masterKey finds the master key: the setting, the file setting, or, in
// development mode only, the data directory's master.key (generated on the
// first start). Outside development mode a key is never taken from the data
// directory unless master_key_file names it: a production server must not
// quietly run on a key left there by a development run (and backed up with
// the data it protects).
func masterKey(cfg config.Config) ([]byte, error) {
	if cfg.MasterKey != "" {
		k, err := config.DecodeMasterKey(cfg.MasterKey)
		if err != nil {
			return nil, &config.SettingError{Key: "master_key", Env: "GATEHOUSE_MASTER_KEY", Reason: err.Error()}
		}
		return k, nil
	}
	path := cfg.MasterKeyFile
	if path == "" {
		path = filepath.Join(cfg.DataDir, "master.key")
		_, err := os.Stat(path)
		switch {
		case errors.Is(err, os.ErrNotExist) && cfg.Dev:
			return generateMasterKey(path)
		case !cfg.Dev && err == nil:
			abs, aerr := filepath.Abs(path)
			if aerr != nil {
				abs = path
			}
			return nil, &config.SettingError{Key: "master_key", Env: "GATEHOUSE_MASTER_KEY",
				Reason: fmt.Sprintf("found %s, a key --dev generated, but outside --dev the data directory's key is used only when configured: "+
					"to keep using it, set master_key_file to %s (GATEHOUSE_MASTER_KEY_FILE or --master-key-file); "+
					"else set master_key or master_key_file to your key, or pass --dev for a development data directory", abs, abs)}
		case !cfg.Dev:
			return nil, &config.SettingError{Key: "master_key", Env: "GATEHOUSE_MASTER_KEY",
				Reason: "no master key; set master_key or master_key_file, or use --dev"}
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &config.SettingError{Key: "master_key_file", Env: "GATEHOUSE_MASTER_KEY_FILE", Reason: err.Error()}
	}
	k, err := config.DecodeMasterKey(string(b))
	if err != nil {
		return nil, &config.SettingError{Key: "master_key_file", Env: "GATEHOUSE_MASTER_KEY_FILE",
			Reason: fmt.Sprintf("%s does not hold a base64 32-byte key", path)}
	}
	return k, nil
}

func generateMasterKey(path string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		// Another process made it first; use theirs.
		b, rerr := os.ReadFile(path)
		if rerr != nil {
			return nil, rerr
		}
		return config.DecodeMasterKey(string(b))
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n"); err != nil {
		_ = f.Close()
		return nil, err
	}
	return key, f.Close()
}
