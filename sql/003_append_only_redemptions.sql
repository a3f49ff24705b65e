-- Redemptions become rows of their own, written once and never changed: the usage worker
-- appends them (insert ... on conflict do nothing, so a replayed event adds nothing)
-- instead of updating the token's issued row, which moved the row into the history index
-- and left a dead row behind for vacuum. Issued tokens keep their table (renamed); the
-- audit trail keeps its name and shape as a view: every issued token, with its status.

create table token_redemptions (
  -- uuid, not text: 16 bytes in the heap and in both indexes instead of 37 (sign tokens'
  -- ids are UUIDs; an event with any other id is refused, a dead letter)
  token_id   uuid primary key,
  firma_id   text not null,
  imza_tipi  smallint not null,
  used_at    timestamptz not null,
  -- the token's iat, as the redemption carried it (the issued row may be missing after a Redis loss)
  issued_at  timestamptz,
  origin     text
);

-- (ids that are no UUID were never issued by the service: they stay in the issued table only)
insert into token_redemptions (token_id, firma_id, imza_tipi, used_at, issued_at, origin)
  select token_id::uuid, firma_id, imza_tipi, coalesce(used_at, issued_at, now()), issued_at, origin
  from sign_tokens
  where status = 'used' and token_id ~ '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

-- the history reads a license's redemptions newest first (src/licenses/store.ts redemptions);
-- redemptions of the same millisecond are put in token order after the index scan, which
-- keeps the token id out of the index (smaller entries, less to write per redemption)
create index token_redemptions_history on token_redemptions (firma_id, used_at desc);

drop index sign_tokens_history;
alter table sign_tokens rename to token_issues;
alter index sign_tokens_pkey rename to token_issues_pkey;
alter table token_issues drop column status, drop column used_at, drop column origin;

create view sign_tokens as
  select coalesce(i.token_id, r.token_id::text) as token_id,
         coalesce(i.firma_id, r.firma_id) as firma_id,
         coalesce(i.imza_tipi, r.imza_tipi) as imza_tipi,
         case when r.token_id is null then 'issued' else 'used' end as status,
         coalesce(i.issued_at, r.issued_at) as issued_at,
         i.expires_at,
         r.used_at,
         r.origin
  from token_issues i full join token_redemptions r on r.token_id::text = i.token_id;
