-- +goose Up
-- The hosted pages' branding of an app (issue 27): a JSON object of the
-- validated values (tenant.Branding: colours as #rrggbb, color_scheme
-- auto/light/dark, a font of the allow-list); '{}' is the default look.
ALTER TABLE apps ADD COLUMN branding TEXT NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE apps DROP COLUMN branding;
