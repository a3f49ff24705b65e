import t from 'tap';
import { reply } from '../../src/http/reply.js';
import type { Request } from '../../src/http/route.js';
import { adminGuard, adminReplies } from '../../src/routes/admin/common.js';

// The admin guard on its own (src/routes/admin/common.ts): of several named tokens, the
// handler runs only for one of them and is told whose; anything else is the 401 before the
// handler runs. (Every route's 401s against the running service: admin.*.security.)

const ADMINS = [
  { name: 'alice', token: 'alice-token-0123456789' },
  { name: 'bob', token: 'bob-token-0123456789xx' },
  { name: 'carol', token: 'carol-token-0123456789' },
];

const request = (authorization: string, clientAddress = '203.0.113.1'): Request => ({
  method: 'get', path: '/admin/v1/audit', params: [], query: '', authorization, clientAddress, clientAddressNow: undefined,
  idempotencyKey: '', accept: '', acceptEncoding: '', ifNoneMatch: '', body: null, aborted: false,
});

t.test('each token runs the handler as its admin, with the client address', async (t) => {
  const seen: unknown[] = [];
  const handler = adminGuard(ADMINS)((_req, caller) => {
    seen.push(caller);
    return reply(200, { ok: true });
  });
  for (const { name, token } of ADMINS) {
    t.not(await handler(request(`Bearer ${token}`)), adminReplies.UNAUTHORIZED, name);
  }
  t.same(seen, ADMINS.map((a) => ({ name: a.name, address: '203.0.113.1' })));
});

t.test('anything else: 401 UNAUTHORIZED, the handler never runs', async (t) => {
  let ran = 0;
  const handler = adminGuard(ADMINS)(() => {
    ran++;
    return reply(200, {});
  });
  const refused = ['', 'Bearer ', 'Bearer alice', `Bearer ${ADMINS[0]?.token}x`, `Basic ${ADMINS[0]?.token}`, `Bearer alice:${ADMINS[0]?.token}`,
    `Bearer ${ADMINS[0]?.token},${ADMINS[1]?.token}`, `Bearer ${ADMINS[2]?.token.toUpperCase()}`];
  for (const authorization of refused) t.equal(await handler(request(authorization)), adminReplies.UNAUTHORIZED, JSON.stringify(authorization));
  t.equal(ran, 0);
  t.equal(await adminGuard([])(() => reply(200, {}))(request(`Bearer ${ADMINS[0]?.token}`)), adminReplies.UNAUTHORIZED, 'no admin: nobody');
});
