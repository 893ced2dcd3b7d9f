-- +goose Up
-- An app's own versions of the messages Gatehouse sends, per message name,
-- channel (email, sms) and locale (a language tag such as de or fr-CA).
-- E-mail has a subject, a text and an optional HTML part; SMS a text only.
CREATE TABLE message_templates (
    app_id     TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    channel    TEXT NOT NULL,
    locale     TEXT NOT NULL,
    subject    TEXT NOT NULL DEFAULT '',
    body_text  TEXT NOT NULL,
    body_html  TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (app_id, name, channel, locale)
);

-- A magic link sent by SMS is a short link ({base_url}/m/{code}): the keyed
-- hash of its code, and the magic-link token it stands for, sealed with the
-- master key (the token is needed again to build the consent link).
ALTER TABLE challenges ADD COLUMN short_hash TEXT;
ALTER TABLE challenges ADD COLUMN short_token_sealed TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX challenges_short_hash ON challenges (short_hash);

-- +goose Down
DROP INDEX challenges_short_hash;
ALTER TABLE challenges DROP COLUMN short_token_sealed;
ALTER TABLE challenges DROP COLUMN short_hash;
DROP TABLE message_templates;
