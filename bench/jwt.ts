import { createVerifier } from 'fast-jwt';
import { TokenService } from '../src/tokens/jwt.js';
import { hasUniqueMembers, membersInText } from '../src/tokens/jsonKeys.js';

// What verifying a sign token costs, and what the repeated-member check costs on its own:
// TokenService as it verifies now (own HS256 check, the payload decoded and parsed once,
// its members counted), fast-jwt's verifier with the options TokenService used before, and
// the ways of checking a payload for repeated members that were weighed (bench/README.md,
// JWT verification). CPU time of this process (process.cpuUsage), medians of rounds.
// `node dist/bench/jwt.js` (`JWT_BENCH_CALLS` calls per round).

const CALLS = Number(process.env.JWT_BENCH_CALLS ?? 300_000);
const ROUNDS = 7;
const SECRET = 'bench-secret-of-thirty-two-bytes-or-more-0123456789';
const ISSUER = 'license-service';

const tokens = new TokenService([{ kid: 'default', secret: SECRET }], ISSUER);
const iat = Math.floor(Date.now() / 1000);
const token = tokens.signSignToken({
  firma_id: 'Xq3vR8kLm2Pa', firma_adi: 'Örnek Eczane Ltd.', token_id: '8d1c0f5e-2b7a-4c39-9e64-0a5b3f7d2c18', imza_tipi: 0, iat, exp: iat + 3600,
});
const segment = token.split('.')[1] as string;
const text = Buffer.from(segment, 'base64url').toString('utf8');
const parsed: unknown = JSON.parse(text);
const fastJwt = createVerifier({
  key: Buffer.from(SECRET), algorithms: ['HS256'], requiredClaims: ['exp', 'iat', 'iss'], allowedIss: ISSUER, clockTolerance: 0,
});

/** The rejected scanner: every member name decoded (escapes through JSON.parse) into a Set per object. */
function uniqueBySets(json: string): boolean {
  const open: (Set<string> | null)[] = [];
  let members: Set<string> | null = null;
  let nameNext = false;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c === 34) {
      let end = i + 1;
      let escaped = false;
      for (;;) {
        const d = json.charCodeAt(end);
        if (d === 92) { escaped = true; end += 2; continue; }
        if (d === 34) break;
        end++;
      }
      if (nameNext && members !== null) {
        const name = escaped ? (JSON.parse(json.slice(i, end + 1)) as string) : json.slice(i + 1, end);
        if (members.has(name)) return false;
        members.add(name);
        nameNext = false;
      }
      i = end;
    } else if (c === 123) { open.push(members); members = new Set(); nameNext = true; }
    else if (c === 91) { open.push(members); members = null; }
    else if (c === 125 || c === 93) members = open.pop() ?? null;
    else if (c === 44 && members !== null) nameNext = true;
  }
  return true;
}

/** A reviver sees only the members that survived the parse, so it can only count them, against the text's count. */
function countedByReviver(json: string): boolean {
  let members = 0;
  JSON.parse(json, function (this: unknown, name: string, value: unknown) {
    if (name !== '' && !Array.isArray(this)) members++;
    return value;
  });
  return members === membersInText(json);
}

const cases: [string, () => unknown][] = [
  ['TokenService.verifySignToken (own HS256 check, members counted)', () => tokens.verifySignToken(token)],
  ['fast-jwt verify (the verifier used before)', () => fastJwt(token)],
  ['fast-jwt verify, then the payload decoded again and counted', () => {
    const claims = fastJwt(token) as unknown;
    return hasUniqueMembers(Buffer.from(token.slice(token.indexOf('.') + 1, token.lastIndexOf('.')), 'base64url').toString('utf8'), claims);
  }],
  ['payload: base64url decode to text', () => Buffer.from(segment, 'base64url').toString('utf8')],
  ['payload: JSON.parse', () => JSON.parse(text)],
  ['repeats: members counted in text and value (kept)', () => hasUniqueMembers(text, parsed)],
  ['repeats: names decoded into a Set per object', () => uniqueBySets(text)],
  ['repeats: JSON.parse with a counting reviver', () => countedByReviver(text)],
];

let sink: unknown;
function perCall(run: () => unknown): number {
  const before = process.cpuUsage();
  for (let i = 0; i < CALLS; i++) sink = run();
  const used = process.cpuUsage(before);
  return ((used.user + used.system) * 1000) / CALLS;
}

if (!hasUniqueMembers(text, parsed) || !uniqueBySets(text) || tokens.verifySignToken(token).claims === undefined) throw new Error('bench: the token is not accepted');
for (const [, run] of cases) perCall(run); // warm up every path before any is measured
const runs = cases.map((): number[] => []);
for (let r = 0; r < ROUNDS; r++) cases.forEach(([, run], i) => runs[i]?.push(perCall(run)));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
process.stdout.write(`payload of ${text.length} characters, ${CALLS} calls per round, median of ${ROUNDS} rounds (min–max):\n`);
cases.forEach(([what], i) => {
  const xs = runs[i] as number[];
  process.stdout.write(`${median(xs).toFixed(0).padStart(6)} ns  ${what} (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})\n`);
});
if (sink === undefined) throw new Error('bench: a case returned nothing'); // read, so no call is dropped as unused
