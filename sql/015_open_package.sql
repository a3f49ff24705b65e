-- The redemptions a license spends from one package are counted on its own row, which the
-- usage worker's statement updates anyway, as its latest day's are (014), instead of in the
-- package's row updated with every batch: one row more to write per license and batch
-- (make bench-worker with WORKER_BENCH_LICENSES=4000: bench/README.md). The package rows
-- hold what has been folded into them; license_packages is now a view that adds the open
-- count, with the same columns but spent_out, so every reader sees each package whole.
alter table license_packages rename to license_package_rows;
alter index license_packages_pkey rename to license_package_rows_pkey;
alter index license_packages_to_forfeit rename to license_package_rows_to_forfeit;
-- a row's used is what has been folded into it, less the units given back: a release of a
-- token whose spend is still open takes its unit off the row, which may go below zero until
-- the open count is folded in (license_packages.used, the sum, is what never does). A usage
-- event is never refused for good over a sum (010).
alter table license_package_rows drop constraint license_packages_used_check;

alter table licenses
  -- the package the license's latest redemptions the worker has written spent, and how many
  -- of them are not yet in its row of license_package_rows
  add column open_package_no integer,
  add column open_package_used bigint not null default 0,
  -- set by a statement that moved open_package_no on, or folded it (null otherwise): the
  -- package it closed and its count, which that statement adds to the package's row
  -- (src/usage/persist.ts, src/usage/forfeitSweep.ts)
  add column closed_package_no integer,
  add column closed_package_used bigint not null default 0;

create view license_packages as
  select p.firma_id, p.package_no, p.amount,
         p.used + coalesce((select l.open_package_used from licenses l
                            where l.firma_id = p.firma_id and l.open_package_no = p.package_no), 0) as used,
         p.forfeited, p.expires_at, p.created_at, p.note
  from license_package_rows p;

-- the package a redemption spent, as Redis named it (null in rows written before this), so
-- that the usage worker reads it back from the rows it inserted instead of joining the
-- batch's package numbers to them
alter table token_redemptions add column package_no integer;
