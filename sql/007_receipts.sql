-- Signing receipts (POST /api/Signature/sign): a redemption made by sign keeps how many
-- documents its receipt names and the receipt's digest, the lower-case hex SHA-256 of the
-- receipt's payload bytes, which is the same whichever key signed it. Both are null for a
-- redemption made by validate. The usage worker writes them with the row
-- (src/usage/persist.ts), so a replayed event still writes nothing twice.
--
-- Adding nullable columns without a default rewrites nothing; the checks and the index
-- read the table once, finding only nulls. The index is partial: validate's redemptions,
-- the bulk of the table, take no entry in it.
alter table token_redemptions
  add column documents smallint check (documents > 0),
  add column receipt_sha256 text check (receipt_sha256 ~ '^[0-9a-f]{64}$'),
  add constraint token_redemptions_receipt_whole check ((documents is null) = (receipt_sha256 is null));

-- an operator confirms a receipt by its digest (docs/api.md#signing-receipts)
create unique index token_redemptions_receipt on token_redemptions (receipt_sha256) where receipt_sha256 is not null;
