package server

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/config"
)

// TestMasterKeySources: development mode uses (or makes) DATA_DIR/master.key;
// outside it a key there is refused unless master_key_file names it, and the
// refusal says which file it found and which settings to use.
func TestMasterKeySources(t *testing.T) {
	raw := bytes.Repeat([]byte{7}, 32)
	encoded := base64.StdEncoding.EncodeToString(raw)
	other := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))
	withKey := func(t *testing.T) string {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "master.key"), []byte(encoded+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return dir
	}

	t.Run("dev reads the data directory's key", func(t *testing.T) {
		k, err := masterKey(config.Config{Dev: true, DataDir: withKey(t)})
		if err != nil || !bytes.Equal(k, raw) {
			t.Errorf("masterKey = %x, %v; want the file's key", k, err)
		}
	})
	t.Run("dev generates a key", func(t *testing.T) {
		dir := t.TempDir()
		k, err := masterKey(config.Config{Dev: true, DataDir: dir})
		if err != nil || len(k) != 32 {
			t.Fatalf("masterKey = %x, %v; want a new 32-byte key", k, err)
		}
		if again, err := masterKey(config.Config{Dev: true, DataDir: dir}); err != nil || !bytes.Equal(again, k) {
			t.Errorf("second start = %x, %v; want the same key", again, err)
		}
	})
	t.Run("production refuses the data directory's key", func(t *testing.T) {
		dir := withKey(t)
		_, err := masterKey(config.Config{DataDir: dir})
		var se *config.SettingError
		if !errors.As(err, &se) {
			t.Fatalf("masterKey = %v; want a *config.SettingError", err)
		}
		path := filepath.Join(dir, "master.key")
		for _, want := range []string{"found " + path, "set master_key_file to " + path, "GATEHOUSE_MASTER_KEY_FILE",
			"--master-key-file", "master_key", "--dev"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		if strings.Contains(err.Error(), encoded) {
			t.Errorf("error %q quotes the key", err)
		}
	})
	t.Run("production with an empty data directory", func(t *testing.T) {
		dir := t.TempDir()
		_, err := masterKey(config.Config{DataDir: dir})
		if err == nil || !strings.Contains(err.Error(), "no master key") {
			t.Errorf("masterKey = %v; want no master key", err)
		}
		if _, serr := os.Stat(filepath.Join(dir, "master.key")); !os.IsNotExist(serr) {
			t.Errorf("a key file was made outside development mode (%v)", serr)
		}
	})
	t.Run("production keeps the key when master_key_file names it", func(t *testing.T) {
		dir := withKey(t)
		k, err := masterKey(config.Config{DataDir: dir, MasterKeyFile: filepath.Join(dir, "master.key")})
		if err != nil || !bytes.Equal(k, raw) {
			t.Errorf("masterKey = %x, %v; want the file's key", k, err)
		}
	})
	t.Run("master_key wins over a key in the data directory", func(t *testing.T) {
		for _, dev := range []bool{false, true} {
			k, err := masterKey(config.Config{Dev: dev, DataDir: withKey(t), MasterKey: other})
			if err != nil || bytes.Equal(k, raw) || len(k) != 32 {
				t.Errorf("dev=%v: masterKey = %x, %v; want master_key's key", dev, k, err)
			}
		}
	})
}
