-- Room on each page of licenses for the usage worker's update of a row to stay on its page
-- (a HOT update: no new index entries, and WAL for the changed bytes only). Every batch
-- updates the row of each license it spent; on full pages (the default fillfactor of 100)
-- nine updates in ten moved the row to another page, writing a new entry into each of the
-- table's indexes and the whole row to the WAL. The table is small (a few hundred bytes a
-- license), so half-empty pages cost little. CLUSTER rewrites the existing pages at the new
-- fillfactor now, instead of as rows happen to move.
alter table licenses set (fillfactor = 50);
cluster licenses using licenses_pkey;
