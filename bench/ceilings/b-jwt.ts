import { createVerifier } from 'fast-jwt';
import { send, serve } from './common.js';

// Ceiling (b): (a) plus fast-jwt HS256 verification of the token.
const verify = createVerifier({ key: Buffer.from(process.env.JWT_SECRET ?? ''), algorithms: ['HS256'] });
const ok = '{"success":true,"message":"Token doğrulandı, imza kotası düşüldü","usedQuota":1,"remainingQuota":1}';
const bad = '{"success":false,"message":"Geçersiz token"}';

serve('/api/license/validate', (body, res, state) => {
  const { token } = JSON.parse(body.toString('utf8')) as { token: string };
  try {
    verify(token);
    send(res, state, '200 OK', ok);
  } catch {
    send(res, state, '401 Unauthorized', bad);
  }
});
