-- The token generation of a license: access tokens carry the generation they were issued
-- in, and sign-token refuses those of an older one. Changing the password or deactivating
-- the license raises it (src/licenses/store.ts update), so the access tokens issued before
-- stop working on the next request, on every instance (lua/includes/issueToken.lua).
alter table licenses add column token_generation bigint not null default 0;
