-- Kontör as it is sold: each purchase is a package with its own expiry, redemptions spend the
-- package that expires first, and a package that expires with units left forfeits them. Every
-- change to a license's balance is an entry of an append-only ledger; spending stays in the
-- redemption rows and is kept as daily totals, which outlive the partitions retention drops.
--
-- Redis decides, Postgres records (docs/api.md#packages-and-the-ledger): which
-- package funds a redemption and when a package forfeits are decided by the redemption
-- scripts, in the order of the usage stream, and the usage worker writes what they decided.
-- So a package expiring in the millisecond of a redemption funds it or forfeits the unit,
-- never both. The license's figures keep their meaning:
--   total_quota = purchases + corrections - forfeits, used_quota = spent - released.

alter table licenses
  -- units of expired packages that were never spent (total_quota is already net of them)
  add column forfeited_quota bigint not null default 0 check (forfeited_quota >= 0),
  -- packages made so far: a package's number is the next one, taken under the license's row lock
  add column packages_made integer not null default 0;

create table license_packages (
  firma_id   text not null references licenses (firma_id),
  -- 1, 2, 3... per license, in the order of purchase
  package_no integer not null,
  amount     bigint not null check (amount > 0),
  -- as the usage worker has written them (Redis runs ahead by the worker lag)
  used       bigint not null default 0 check (used >= 0),
  forfeited  bigint not null default 0 check (forfeited >= 0),
  expires_at timestamptz not null,
  created_at timestamptz not null default now(),
  note       text,
  -- no check that used + forfeited <= amount: a usage event must never be refused for good
  -- over it (the ledger test checks the sums instead)
  primary key (firma_id, package_no)
);

create table license_ledger (
  id            bigint generated always as identity primary key,
  firma_id      text not null,
  at            timestamptz not null default clock_timestamp(),
  kind          text not null check (kind in ('purchase', 'forfeit', 'release', 'correction')),
  -- signed: what the entry adds to the balance (a forfeit is negative)
  amount        bigint not null,
  -- total_quota - used_quota once the entry is written, as Postgres counts them
  balance_after bigint not null,
  package_no    integer,
  -- the admin's name, "system" (a forfeit), "holder" (a release), "migration"
  actor         text not null,
  note          text
);
create index license_ledger_by_license on license_ledger (firma_id, id desc);
-- a package forfeits once, whatever the replays of its event
create unique index license_ledger_one_forfeit on license_ledger (firma_id, package_no) where kind = 'forfeit';

create function license_ledger_append_only() returns trigger language plpgsql as $$
begin
  raise exception 'license_ledger is append-only: % refused', tg_op using errcode = '42501';
end
$$;
create trigger license_ledger_no_change before update or delete on license_ledger
  for each row execute function license_ledger_append_only();
create trigger license_ledger_no_truncate before truncate on license_ledger
  for each statement execute function license_ledger_append_only();

-- Redemptions per license and UTC day, kept by the usage worker in the statement that writes
-- the redemption rows (src/usage/persist.ts)
create table license_daily_usage (
  firma_id text not null,
  day      date not null,
  redeemed bigint not null default 0,
  primary key (firma_id, day)
);

-- Existing licenses: what they hold becomes one package, expiring with the license, opened
-- by a correction entry (no purchase history was kept before), and their redemptions
-- become daily totals.
insert into license_packages (firma_id, package_no, amount, used, expires_at, note)
  select firma_id, 1, total_quota, least(used_quota, total_quota), expiry_date, 'opening balance'
  from licenses where total_quota > 0;
update licenses set packages_made = 1 where total_quota > 0;
insert into license_ledger (firma_id, kind, amount, balance_after, package_no, actor, note)
  select firma_id, 'correction', total_quota, greatest(total_quota - used_quota, 0), 1, 'migration', 'opening balance'
  from licenses where total_quota > 0;
insert into license_daily_usage (firma_id, day, redeemed)
  select firma_id, (used_at at time zone 'UTC')::date, count(*) from token_redemptions group by 1, 2;
-- used_quota counts redemptions older versions kept no row of: on the day of this migration
insert into license_daily_usage as d (firma_id, day, redeemed)
  select l.firma_id, (now() at time zone 'UTC')::date, l.used_quota - coalesce(r.n, 0)
  from licenses l left join (select firma_id, count(*) as n from token_redemptions group by 1) r on r.firma_id = l.firma_id
  where l.used_quota > coalesce(r.n, 0)
  on conflict (firma_id, day) do update set redeemed = d.redeemed + excluded.redeemed;

-- the forfeit sweep (src/usage/forfeitSweep.ts) finds packages expired with units left, as far
-- as the usage worker has written: each leaves this index once spent or forfeited
create index license_packages_to_forfeit on license_packages (expires_at) where forfeited = 0 and used < amount;
