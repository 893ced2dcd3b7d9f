package store_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/gatehouse-auth/gatehouse/internal/store"
)

// released lists every migration that has landed, with the SHA-256 of its
// file. Migrations are append-only: once landed, a file never changes (a
// database that applied it would never apply the change), and a change to
// the schema is a new file with the next number, written for both engines.
// Add the hash of a new file here in the change that adds it.
var released = map[string]string{
	"postgres/00001_foundation.sql":   "72fe887e42238872140a72df685e2126761fe62a396da717748d9c9f08d6ea9e",
	"postgres/00002_signin.sql":       "d592fb8053d6f2af3e860be4f1e2a866fd6d139bad79c1c3839256950adb7721",
	"postgres/00003_webhooks.sql":     "5fc43946eb422883da855b7c4b85bf9de7b729b5806d949522e21fa61aa38f2f",
	"postgres/00004_link_consent.sql": "858a79e1512824fed47036b0c7442540987bfc5846f8a77101f3fca7c0e99cf3",
	"sqlite/00001_foundation.sql":     "0f1f5a1c700cc4c8c3e6eb6e2ca551a3f6d135b8005d5fe8ad920f0db60ed4c1",
	"sqlite/00002_signin.sql":         "481630c044b776e952f08183f7799ac1f5dd0081bdd45bb4382e94eb6d5a2981",
	"sqlite/00003_webhooks.sql":       "cac90e1d011537d7b5859b7ecf35bf26d9a91e41d29779aae5bc0c9f775ad805",
	"sqlite/00004_link_consent.sql":   "858a79e1512824fed47036b0c7442540987bfc5846f8a77101f3fca7c0e99cf3",

	"postgres/00005_code_failures.sql": "dab142e9401767f72d1aa53ca29849572af2267382e63bd230e883513a258569",
	"sqlite/00005_code_failures.sql":   "c3aa817fcbf0d0e98fa864162283b7495334c62761d325f376095dc5978fd282",

	"postgres/00006_passkeys.sql": "6869eddc828a26b585a71060ca763c76b532e4f53d2bb62b459d0446a6762121",
	"sqlite/00006_passkeys.sql":   "daae2f8a5ec3d4ae87853531ac5de07d17bd4defb0015e9c99a086143a459fc3",

	"postgres/00007_challenges_mfa.sql": "001c2cfa7bfa682d350dc63cb1f9268309e14eae29f969bed6a79ac300554b0d",
	"sqlite/00007_challenges_mfa.sql":   "91d15fe318da0a2cd0de7e4e1582ed53ad1193e87de923adaf19f97d594ffd20",

	"postgres/00008_backends.sql": "00ffbb327c487c92cfc7ebbb1dba9edd2124f7447616dfccee2df9570c463277",
	"sqlite/00008_backends.sql":   "ceb5b23fc219fbb179e834ca548fcff660cc2746e7c3df350e2728890a46b15d",

	"postgres/00009_message_providers.sql":      "5cb975e4f79d2f459bebbb900445652ca747aefdabca0aea06722f869eb7ad47",
	"sqlite/00009_message_providers.sql":        "6b95cf673d1329f865767ac1330e160e0af6cec2420e6d5515aea068b62f7e68",
	"postgres/00010_sms_guards.sql":             "4766ff34a2658580f78b9a060f917deec64b3815dc7fb95e4881ae00f8ee34d2",
	"sqlite/00010_sms_guards.sql":               "cae6ddbbcf5cff339bd5c7a5662cb80d4fbe6ea80d6d47586690fd9327f0d0ff",
	"postgres/00011_message_templates.sql":      "39ee30627fafc64a886a36b91d6ae7ea2b9cf4e7225268411e3a54d5235ce167",
	"sqlite/00011_message_templates.sql":        "4e1c54bb36c5e2191cfcd3038731b878274adfe3be1eba50cfc336fb99fd3aab",
	"postgres/00012_invitation_short_links.sql": "cc19b116686fe8cfe1a2410dc4c840e507b951f87fd42536524d924bf210b8a6",
	"sqlite/00012_invitation_short_links.sql":   "cc19b116686fe8cfe1a2410dc4c840e507b951f87fd42536524d924bf210b8a6",

	"postgres/00013_passkey_ceremony_subjects.sql": "ce5db8a782fbcdf2d1ed1c4493f187f548b68dfae101a94032315bcafc5a4f91",
	"postgres/00014_queued_messages.sql":           "505f547bb180df6a091dcb5a96c33dffaa744ad97ff9c4806d4b0357acfbc039",
	"postgres/00015_pending_indexes.sql":           "02606aa76ec6381640a12fb5122cfd6fd730259e7f5396bfab7edd5f26670eaf",
	"postgres/00016_inline_messages.sql":           "2b9fa980112afadaf2829d7d52b47ba81dc373970589e0d15fbb097cab6a5773",
	"postgres/00017_oauth_providers.sql":           "e9cdfb36c1b8eb14cf73f08fa0c52ac23626a5ca52c6dfb8b3e19ac05727c672",
	"postgres/00018_oauth_signin.sql":              "938eaff08067df00ecd1de2adb056a8b357ed8c08f8cf3ec687893b16d301fe9",
	"postgres/00019_audit_log.sql":                 "9b3c170c5a12681390d9828990ecaa9f5a238fba40d81f24377f818d6fffa648",
	"sqlite/00013_passkey_ceremony_subjects.sql":   "ce5db8a782fbcdf2d1ed1c4493f187f548b68dfae101a94032315bcafc5a4f91",
	"sqlite/00014_queued_messages.sql":             "9003806f573a1150a13ea605c02dbd1220c1526ee6f03248be56fc8230bb0b09",
	"sqlite/00015_pending_indexes.sql":             "904883d582cbb34078a8e5ffde8ad1e1f296725d3c65abe1ff5adf37fa7852f5",
	"sqlite/00017_oauth_providers.sql":             "979ad920e1f41e4b5075f294e20be87d76e02772afd18693cef87a029e9a69f9",
	"sqlite/00018_oauth_signin.sql":                "64629928f1177d2d9ca2f1b73e09b935ec0ead63eaac1019af2af757fcb0d3e5",
	"sqlite/00019_audit_log.sql":                   "a01b9d37d541d4dc3c7cbfa5f9c8fcc54e7e26e18cbd038eb01174e9796609f6",
	"postgres/00020_console.sql":                   "1ddf3ff7913cad10a8fda6e5d7ef94aa356e198fc4784fc514cb66c97b9f2852",
	"postgres/00021_console_indexes.sql":           "bd05459d25c1959630b70cecd4a4cd30da3ae26326201cb6f22ffdb111e38686",
	"sqlite/00020_console.sql":                     "fd3296e97f70ec3040b29478730a0c27f630936906474d0c3285756f995178a2",
	"sqlite/00021_console_indexes.sql":             "e1b7f0cc33002cbf68db610865f2dd55768e6fc8fb88af0fda835d4ebf2f1661",
	"postgres/00022_console_activity.sql":          "103bf59b6bbbb92ff876da4e9c1dc1c8277f45adf4332d1c3a7df432bc22223e",
	"sqlite/00022_console_activity.sql":            "2068b06e80112a42c372dccc4dda77e6808c5d54832a9e8b2f9acd6261e71358",
	"postgres/00023_mfa_default.sql":               "7e8c77eb4631ad5385a4584f4c4e3e19e2e1684dc210e1902f140beb1095be97",
	"sqlite/00023_mfa_default.sql":                 "e5075af8171ccd192921f0b0c08ae398b94bfad373a2843e1c25bcb2d9bd3c17",
	"postgres/00024_user_names.sql":                "2cb165af870cd368c077e5f7d0017b3200a16039e3427f188c7146a498f7dccb",
	"sqlite/00024_user_names.sql":                  "0a785b22d21888e46e1c2fcf18ddddfaee961833a34f89e36f8b924d14efb5b4",
	"postgres/00025_app_branding.sql":              "414fb082020afa6239a3f376fed554586a1806da6947aae41e6ed2027e47e233",
	"sqlite/00025_app_branding.sql":                "414fb082020afa6239a3f376fed554586a1806da6947aae41e6ed2027e47e233",
	"postgres/00026_lookup_indexes.sql":            "c9cea4a9b35cec91a9dc6e25cdafdee7f211b52926849b55a6d0bf8e267be76f",
	"sqlite/00026_lookup_indexes.sql":              "cf5e63d06d93cd219113c6b951272d146abde2c66b02ccc2add4a14c7b22ba27",
	"postgres/00027_sign_in_app_locks.sql":         "2d6550b98f5fab877fa0bcf37b34c435861fb46fbd19ddd6bd9e0fedb4ed4e1c",
	"sqlite/00027_sign_in_app_locks.sql":           "e72cee6828b5e93d1091917bac3431e504faf2780636e30fc2537ed950049746",
	"postgres/00028_sparse_unique_indexes.sql":     "7e9bffa61c549bcf9887a412850dfeb09a819a04780d533b0f28d6d67b731fcc",
	"sqlite/00028_sparse_unique_indexes.sql":       "ad9b76c9f3426fa60dc9ff465cbd37428f086971cacdbe30915175d38b0bbb36",
	"postgres/00029_sign_up_workspace_lock.sql":    "f7310ef90c1dcba76d74b8018149e53b5068f8d7b5f98428110b49fe5087e1a4",
	"sqlite/00029_sign_up_workspace_lock.sql":      "e5aae23024017aba9db33a65304f3dec6b700820a5c0b85a7dce40e4dce09441",
	"postgres/00030_sign_in_heap_only.sql":         "c11472fcdce30e698f7b77b75feeb57a3432805aa41fa85ffd9b68f79d384864",
	"sqlite/00030_sign_in_heap_only.sql":           "0aa0b91d5225c648f2a7d6c3bc1c0564d6be0547103350422f1e57e008a4c01f",
}

// TestMigrationsAreAppendOnly fails when a landed migration file changes or
// disappears, and when a new file has no recorded hash yet.
func TestMigrationsAreAppendOnly(t *testing.T) {
	files, err := store.MigrationFiles()
	if err != nil {
		t.Fatalf("MigrationFiles: %v", err)
	}
	if len(files) < len(released) {
		t.Errorf("%d migration files; want at least the %d landed", len(files), len(released))
	}
	for name, b := range files {
		sum := sha256.Sum256(b)
		switch want, ok := released[name]; {
		case !ok:
			t.Errorf("migration %s has no recorded hash: add %q: %q to released in this file (and never change the file again)",
				name, name, hex.EncodeToString(sum[:]))
		case want != hex.EncodeToString(sum[:]):
			t.Errorf("landed migration %s has changed (sha256 %s; landed as %s): put the change in a new migration instead",
				name, hex.EncodeToString(sum[:]), want)
		}
	}
	for name := range released {
		if _, ok := files[name]; !ok {
			t.Errorf("landed migration %s is gone: migrations are never deleted", name)
		}
	}
}
