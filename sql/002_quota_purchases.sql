-- Quota purchases made with an Idempotency-Key (POST /admin/v1/licenses/{key}/quota): a
-- retried purchase finds its key here and credits nothing more.
create table quota_purchases (
  idempotency_key text primary key,
  license_key     text not null,
  add             bigint not null,
  created_at      timestamptz not null default now()
);
