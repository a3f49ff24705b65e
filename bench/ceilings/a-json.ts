import { send, serve } from './common.js';

// Ceiling (a): uWS reads the JSON body and answers a constant JSON body.
const ok = '{"success":true,"message":"Token doğrulandı, imza kotası düşüldü","usedQuota":1,"remainingQuota":1}';

serve('/api/license/validate', (body, res, state) => {
  JSON.parse(body.toString('utf8'));
  send(res, state, '200 OK', ok);
});
