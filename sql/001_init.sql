-- Licenses: what was sold. used_quota is what the usage worker has persisted; the Redis
-- copy runs ahead of it by the worker lag.
create table licenses (
  firma_id          text primary key,
  license_key       text not null unique,
  organization_name text not null,
  password_hash     text not null,
  total_quota       bigint not null check (total_quota >= 0),
  used_quota        bigint not null default 0 check (used_quota >= 0),
  expiry_date       timestamptz not null,
  is_active         boolean not null default true,
  domains           text[] not null default '{}',
  version           bigint not null default 1,
  created_at        timestamptz not null default now(),
  updated_at        timestamptz not null default now()
);

-- Every issued sign token: the audit trail. No foreign key on purpose: the worker must
-- never be wedged by one event it cannot write.
create table sign_tokens (
  token_id    text primary key,
  firma_id    text not null,
  imza_tipi   smallint not null,
  status      text not null check (status in ('issued', 'used')),
  issued_at   timestamptz,
  expires_at  timestamptz,
  used_at     timestamptz,
  origin      text
);

create index sign_tokens_history on sign_tokens (firma_id, used_at desc, token_id desc)
  where status = 'used';
