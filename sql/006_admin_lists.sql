-- The admin lists (src/licenses/listing.ts) read keyset pages over these indexes, so a page
-- costs the same whatever its depth and however many tokens a license has.

-- GET /admin/v1/licenses: every license, oldest first
create index licenses_by_creation on licenses (created_at, firma_id);

-- GET /admin/v1/licenses/{key}/tokens: a license's issued tokens, newest first; tokens of
-- the same instant are put in id order after the index scan (as token_redemptions_history
-- does), keeping the id out of an index the worker writes with every issued token
create index token_issues_by_license on token_issues (firma_id, issued_at desc);
