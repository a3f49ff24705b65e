-- A license's redemptions of its latest day are counted on its own row, which the usage
-- worker's statement updates anyway, instead of in a row of license_daily_usage upserted with
-- every batch: one row more to write per license and batch (make bench-worker with
-- WORKER_BENCH_LICENSES=4000: bench/README.md). A day is written to the table when the license's
-- redemptions move on to a later day (and a batch's redemptions of an earlier day go there
-- at once). license_daily_usage is now a view of both, with the same columns, so every
-- reader sees each day's whole count.
alter table license_daily_usage rename to license_usage_days;
alter index license_daily_usage_pkey rename to license_usage_days_pkey;

alter table licenses
  -- the latest UTC day of the license's redemptions the worker has written, and their count
  -- on that day not yet in license_usage_days
  add column usage_day date,
  add column usage_day_redeemed bigint not null default 0,
  -- set by a statement of the usage worker that moved usage_day on (null otherwise): the day
  -- it closed and its count, which that statement writes to license_usage_days (src/usage/persist.ts)
  add column closed_day date,
  add column closed_day_redeemed bigint not null default 0;

create view license_daily_usage as
  select firma_id, day, sum(redeemed)::bigint as redeemed from (
    select firma_id, day, redeemed from license_usage_days
    union all
    select firma_id, usage_day, usage_day_redeemed from licenses where usage_day is not null and usage_day_redeemed > 0
  ) d
  group by firma_id, day;
