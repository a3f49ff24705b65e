-- Webhooks (docs/api.md#webhooks): a license may name a URL that the usage worker tells of
-- quota.low, quota.exhausted and license.expiring, each request signed with the secret.
-- The secret is never shown by the admin API; a URL is never without a secret.
alter table licenses
  add column webhook_url text,
  add column webhook_secret text,
  add constraint licenses_webhook_signed check (webhook_url is null or webhook_secret is not null);

-- The outbox: one row per event, written in the same statement that caused it (the usage
-- worker's batch: src/usage/persist.ts) or by the worker's expiry scan
-- (src/webhooks/detect.ts), then delivered by the worker (src/webhooks/delivery.ts).
-- event_key names the event and its occasion, so "at most once per event and threshold
-- crossing" is this primary key: inserts are "on conflict do nothing".
--   quota.low:<firma>:p<packages made>        a purchase re-arms a threshold, so it is
--   quota.exhausted:<firma>:p<packages made>  crossed at most once per package made (before
--                                             packages expired: <total quota>, which a
--                                             forfeit may bring back to an earlier value)
--   license.expiring:<firma>:<expiry ms>   once per expiry date
create table webhook_events (
  event_key       text primary key,
  -- what the receiver sees as the event's id (X-Webhook-Id, "id" of the body)
  id              uuid not null unique default gen_random_uuid(),
  firma_id        text not null,
  type            text not null,
  -- the event's data as it was when it happened (the body's "data")
  payload         jsonb not null,
  created_at      timestamptz not null default now(),
  -- delivery: attempts made (raised when a worker claims the row) and when the next is
  -- due; a claim moves it past the attempt's timeout, so no other worker takes the row
  -- meanwhile, and a worker that died while sending leaves it to the next one then
  attempts        integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  delivered_at    timestamptz,
  -- set after the last allowed attempt failed: kept, counted, replayable (npm run webhook-events)
  failed_at       timestamptz,
  last_status     integer,
  last_error      text
);

-- what the delivery loop asks for: events neither delivered nor failed, by due time
create index webhook_events_due on webhook_events (next_attempt_at)
  where delivered_at is null and failed_at is null;
create index webhook_events_failed on webhook_events (failed_at) where failed_at is not null;

-- the worker's expiry scan (src/webhooks/expiring.ts): licenses with a webhook by expiry
create index licenses_webhook_expiry on licenses (expiry_date) where webhook_url is not null;
