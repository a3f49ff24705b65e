-- A purchase made with an Idempotency-Key is identified by every field of it, not by its
-- amount alone: a retry that names another expiry or note is another purchase, refused as a
-- reused key (422) instead of being answered "already credited" for the first one. The
-- fields are kept as the request sent them (null: not sent; an omitted expiresAt means the
-- license's expiry, which a later change of the license would move). Rows recorded before
-- this version kept the amount alone: `whole` is false for them, and a retry of one of those
-- is compared by license and amount, as it was when it was made.
alter table quota_purchases
  add column expires_at timestamptz,
  add column note text,
  add column whole boolean not null default false;
