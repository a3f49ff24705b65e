import { createVerifier } from 'fast-jwt';
import { Redis } from 'ioredis';
import { batchCall, redeemLayout } from '../../src/redis/batchScripts.js';
import { Outcome } from '../../src/redis/outcomes.js';
import { runScript, type ScriptClient } from '../../src/redis/scriptCall.js';
import { attachScripts } from '../../src/redis/library.js';
import { KeySpace } from '../../src/redis/keys.js';
import { send, serve } from './common.js';

// Ceiling (c): (b) plus one FCALL of lua/redeem.lua itself (same keys, same commands,
// same arguments) per request: the one-round-trip design with nothing around it.
const verify = createVerifier({ key: Buffer.from(process.env.JWT_SECRET ?? ''), algorithms: ['HS256'] });
const keys = new KeySpace(process.env.REDIS_PREFIX ?? 'lic');
const limit = Number(process.env.RATE_VALIDATE_PER_MIN ?? 0);
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { enableAutoPipelining: false });
attachScripts(redis);
const scripts = redis as unknown as ScriptClient;

const bad = '{"success":false,"message":"Geçersiz token"}';

serve('/api/license/validate', (body, res, state) => {
  const { token } = JSON.parse(body.toString('utf8')) as { token: string };
  let c: { firma_id: string; token_id: string; imza_tipi: number; iat: number; exp: number };
  try {
    c = verify(token);
  } catch {
    send(res, state, '401 Unauthorized', bad);
    return;
  }
  const k = keys.forLicense(c.firma_id);
  const now = Date.now();
  // a batch of one, laid out by the service's own builder
  const item = {
    keys: k, markers: k.markers(c.exp * 1000).key, limit, host: '', tokenId: c.token_id, firmaId: c.firma_id,
    imzaTipi: c.imza_tipi, iatMs: c.iat * 1000, origin: null, idempotency: null, receiptPrefix: '',
  };
  runScript(scripts, batchCall(redeemLayout, [item], now, 60000, now + 750)).then(([r]) => {
    if (r![0] === Outcome.DONE) {
      send(res, state, '200 OK', `{"success":true,"message":"Token doğrulandı, imza kotası düşüldü","usedQuota":${r![1]},"remainingQuota":${r![2]}}`);
    } else {
      send(res, state, '400 Bad Request', `{"success":false,"code":${r![0]}}`);
    }
  }, () => send(res, state, '503 Service Unavailable', '{"success":false}'));
});
