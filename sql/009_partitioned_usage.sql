-- The usage tables become partitioned by the token's issue day, so that RETENTION_DAYS can
-- drop whole days: a DROP of a partition frees its space at once and writes no WAL per row,
-- where a DELETE of 0.3 TB a day would leave vacuum the same again to do.
--
-- Both are partitioned by range of token_id, which stays their primary key (a partitioned
-- table's unique keys must contain its partition key: here the key is the partition key), so
-- a token is one row of each table, whatever its events' times, as before: the worker's
-- inserts keep their `on conflict (token_id) do nothing`, and two workers inserting one token
-- at once still wait on one another's key, one inserting, the other adding nothing. Token ids
-- are UUIDs of version 7 (src/tokens/tokenId.ts): their first 48 bits are the issue time in
-- ms, and uuids compare bytewise, so a UTC day is the range from the uuid of its first
-- millisecond (the ms as 12 hex digits, then zeros: 019ac000-0000-0000-0000-000000000000) to
-- that of the next day's. A redemption comes minutes after its token's issue, so it sits in
-- the partition of that issue day too. token_issues.token_id is text (ids of the first schema
-- are not all UUIDs): its key is compared in the "C" collation, bytewise, as the uuids are,
-- whatever the database's collation. The usage worker makes the days ahead and drops the
-- old ones (src/usage/partitions.ts).
--
-- A DEFAULT partition takes any row no range holds: an id of a day not made (a clock days
-- off), and ids that are no v7 UUID: the service issued random v4 UUIDs before the v7 ids
-- (and the first schema other ids), whose first 48 bits are no time, so most of them sort past
-- every day. An insert never fails for lack of a partition.
--
-- Existing rows stay where they are: each old table is renamed and attached as the partition
-- of everything (MINVALUE) up to the end of the migration's UTC day (<table>_before), so the
-- tokens issued later today, while this version starts, fit too; the worker's days begin the
-- day after. Copying instead would rewrite the tables and their WAL, hours for large ones.
-- Before attaching, the rows whose ids sort past that end (the older ids that are no v7
-- UUID, found through the key's index) move to DEFAULT, and a CHECK of the range is added:
-- adding it reads the table once, and ATTACH then trusts it and reads nothing more (without
-- it, ATTACH would read the table once itself: one read either way, but the CHECK names what
-- was checked when it fails). The old key's index becomes the partition's key, as it is on
-- token_id. token_issues' key is rebuilt once, for its collation ("C"); the receipt index is
-- built once (below). All this runs in the migration's transaction, so a failure leaves the
-- old tables.
--
-- The receipt digest: an index, no longer unique (unique on a partitioned table only with
-- the token id). A receipt's payload names its token (jti), and a token is one row, so one
-- digest is one redemption.

-- the view names the old tables by oid: made again below on the partitioned ones
drop view sign_tokens;

do $migration$
declare
  -- the uuid of the first millisecond of the day after today (UTC): what sorts before it is
  -- the old tables'
  ms int8 := (extract(epoch from date_trunc('day', now() at time zone 'UTC') + interval '1 day') * 1000)::int8;
  hex text := lpad(to_hex(ms), 12, '0');
  before_end text := substr(hex, 1, 8) || '-' || substr(hex, 9, 4) || '-0000-0000-000000000000';
begin
  -- ---- token_redemptions ----
  alter table token_redemptions rename to token_redemptions_before;
  alter index token_redemptions_pkey rename to token_redemptions_before_pkey;
  alter index token_redemptions_history rename to token_redemptions_before_history;
  alter index token_redemptions_receipt rename to token_redemptions_before_receipt;

  -- the checks named as sql/007 named them: ATTACH matches a partition's checks by name
  create table token_redemptions (
    token_id       uuid not null,
    firma_id       text not null,
    imza_tipi      smallint not null,
    used_at        timestamptz not null,
    issued_at      timestamptz,
    origin         text,
    documents      smallint constraint token_redemptions_documents_check check (documents > 0),
    receipt_sha256 text constraint token_redemptions_receipt_sha256_check check (receipt_sha256 ~ '^[0-9a-f]{64}$'),
    constraint token_redemptions_receipt_whole check ((documents is null) = (receipt_sha256 is null)),
    constraint token_redemptions_pkey primary key (token_id)
  ) partition by range (token_id);
  create index token_redemptions_history on token_redemptions (firma_id, used_at desc);
  create index token_redemptions_receipt on token_redemptions (receipt_sha256) where receipt_sha256 is not null;
  create table token_redemptions_default partition of token_redemptions default;

  with moved as (delete from token_redemptions_before where token_id >= before_end::uuid returning *)
  insert into token_redemptions_default (token_id, firma_id, imza_tipi, used_at, issued_at, origin, documents, receipt_sha256)
    select token_id, firma_id, imza_tipi, used_at, issued_at, origin, documents, receipt_sha256 from moved;
  execute format('alter table token_redemptions_before add constraint token_redemptions_before_range check (token_id < %L::uuid)', before_end);
  execute format('alter table token_redemptions attach partition token_redemptions_before for values from (minvalue) to (%L)', before_end);
  alter table token_redemptions_before drop constraint token_redemptions_before_range;
  -- ATTACH built the partition's index of the (no longer unique) receipt digest
  drop index token_redemptions_before_receipt;

  -- ---- token_issues ----
  alter table token_issues rename to token_issues_before;
  alter index token_issues_pkey rename to token_issues_before_pkey;
  alter index token_issues_by_license rename to token_issues_before_by_license;

  create table token_issues (
    token_id   text collate "C" not null,
    firma_id   text not null,
    imza_tipi  smallint not null,
    issued_at  timestamptz,
    expires_at timestamptz,
    constraint token_issues_pkey primary key (token_id)
  ) partition by range (token_id);
  create index token_issues_by_license on token_issues (firma_id, issued_at desc);
  create table token_issues_default partition of token_issues default;

  -- the partition's column must have the table's collation: no rewrite, the key rebuilt
  -- (then it finds the rows to move)
  alter table token_issues_before alter column token_id type text collate "C";
  with moved as (delete from token_issues_before where token_id >= before_end returning *)
  insert into token_issues_default (token_id, firma_id, imza_tipi, issued_at, expires_at)
    select token_id, firma_id, imza_tipi, issued_at, expires_at from moved;
  execute format('alter table token_issues_before add constraint token_issues_before_range check (token_id < %L)', before_end);
  execute format('alter table token_issues attach partition token_issues_before for values from (minvalue) to (%L)', before_end);
  alter table token_issues_before drop constraint token_issues_before_range;
end
$migration$;

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
