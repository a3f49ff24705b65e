-- The admin audit log: one row per admin change of a license (create, change, credited
-- purchase), written in the transaction of the change itself (src/licenses/audit.ts), so
-- there is never a change without its row nor a row of a change that did not happen.
-- Secrets (the password, its hash, the webhook secret) are never written here: where one
-- changed, its value reads "changed". No foreign key: the log outlives whatever it names.

create table admin_audit (
  id              bigint generated always as identity primary key,
  -- when the change was made: the record is written holding the license's row lock, so one
  -- license's records follow each other in time as they do in id
  at              timestamptz not null default clock_timestamp(),
  license_key     text not null,
  action          text not null check (action in ('create', 'update', 'add-quota')),
  -- the fields that changed, as the admin API names them: before (null for a create) and after
  before          jsonb,
  after           jsonb not null,
  -- the admin's name (ADMIN_TOKENS) and the client address the service saw (TRUST_PROXY applied)
  admin           text not null,
  address         text not null,
  idempotency_key text
);

-- GET /admin/v1/audit reads newest first in the order records were written (id: the primary
-- key), of every license or of one, since an instant or not
create index admin_audit_by_license on admin_audit (license_key, id desc);
create index admin_audit_by_time on admin_audit (at);

-- Append-only, enforced by Postgres itself: whoever connects, a row once written is never
-- changed or removed (a trigger, since the service's own role owns the table and could
-- grant itself back any privilege revoked).
create function admin_audit_append_only() returns trigger language plpgsql as $$
begin
  raise exception 'admin_audit is append-only: % refused', tg_op using errcode = '42501';
end
$$;

create trigger admin_audit_no_change before update or delete on admin_audit
  for each row execute function admin_audit_append_only();
create trigger admin_audit_no_truncate before truncate on admin_audit
  for each statement execute function admin_audit_append_only();
