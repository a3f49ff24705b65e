-- A release can reach Postgres before the redemption it gives back: the two are events of one
-- stream, but another worker's batch, or the redemption left pending under a worker that
-- stopped mid-batch (claimed only once idle), can be written after the release. The license's
-- used count then goes below zero until the redemption is written; refusing the release for
-- that buried it as a dead letter, and Postgres kept a unit the holder had been given back.
-- A usage event is never refused for good over a sum (010, 015): the check goes. The sum
-- itself cannot stay below zero: every release has its redemption, written sooner or later.
alter table licenses drop constraint if exists licenses_used_quota_check;
