-- The usage worker adds to a package's used count with every batch that spends it. The
-- forfeit sweep's index named `used` in its predicate, and Postgres cannot update a row in
-- place (a HOT update: no new index entries) when a column an index reads changes, so every
-- such update wrote new entries into both of the table's indexes. The predicate now reads a
-- stored column that changes once, when the package runs out, and the pages keep room for the
-- updated rows, and nearly every update of a package is now HOT (make bench-worker with
-- WORKER_BENCH_LICENSES=4000: bench/README.md).
alter table license_packages
  add column spent_out boolean generated always as (used >= amount) stored;
drop index license_packages_to_forfeit;
-- the forfeit sweep (src/usage/forfeitSweep.ts) finds packages expired with units left, as far
-- as the usage worker has written: each leaves this index once spent or forfeited
create index license_packages_to_forfeit on license_packages (expires_at) where forfeited = 0 and not spent_out;
-- room on each page for the row versions of these updates (rows of a few dozen bytes)
alter table license_packages set (fillfactor = 50);
alter table license_daily_usage set (fillfactor = 50);
