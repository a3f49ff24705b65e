-- A unit back when signing fails: POST /api/license/release gives a redeemed token's unit back
-- to its package (lua/release.lua decides, the usage worker writes). A token is released at
-- most once: its row here is keyed by its id, so a replayed event adds nothing, and only the
-- rows inserted make ledger entries and lower the used counts (src/usage/persist.ts).

alter table licenses
  -- releases a day the license allows (0: none): the service cannot tell a real signing
  -- failure from a claimed one, so this bounds what a client can take back
  add column releases_per_day integer not null default 0 check (releases_per_day between 0 and 1000000),
  -- units given back: used_quota + released_quota only ever grows, as Redis's u + rr does, so the
  -- worker can tell a Redis copy behind Postgres (lost writes) from one a release lowered (lua/ack.lua)
  add column released_quota bigint not null default 0 check (released_quota >= 0);

create table token_releases (
  token_id    uuid primary key,
  firma_id    text not null,
  package_no  integer,
  released_at timestamptz not null,
  reason      text
);
create index token_releases_by_license on token_releases (firma_id, released_at desc);

-- the audit trail: a released token shows as such
create or replace view sign_tokens as
  select coalesce(i.token_id, r.token_id::text) as token_id,
         coalesce(i.firma_id, r.firma_id) as firma_id,
         coalesce(i.imza_tipi, r.imza_tipi) as imza_tipi,
         case when r.token_id is null then 'issued' when x.token_id is null then 'used' else 'released' end as status,
         coalesce(i.issued_at, r.issued_at) as issued_at,
         i.expires_at,
         r.used_at,
         r.origin,
         x.released_at
  from token_issues i full join token_redemptions r on r.token_id::text = i.token_id
  left join token_releases x on x.token_id = r.token_id;
