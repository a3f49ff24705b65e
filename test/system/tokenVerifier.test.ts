import fc from 'fast-check';
import t from 'tap';
import { TokenService } from '../../src/tokens/jwt.js';
import { FUZZ_SEED } from '../helpers/fuzz.js';
import { craftJwt, hmac, ISSUER, jwtOfTexts, nowSeconds, PUBLISHED_HEADER, withMembersFirst } from '../helpers/jwt.js';

// TokenService's verifier on its own (src/tokens/jwt.ts), property by property: which token
// headers it accepts (the service's own, byte for byte; kid-less ones whose members are
// exactly alg HS256 and, optionally, typ JWT), that it refuses every header or payload
// repeating a member name at any depth, however the repeat is spelled, and that a token has
// one spelling only. Through HTTP: test/system/tokenHeaders.test.ts.

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const settings = { seed: FUZZ_SEED, numRuns: RUNS };
const SECRET = 'token-verifier-test-secret-0123456789abcdef';
const tokens = new TokenService([{ kid: 'k1', secret: SECRET }, { kid: 'k0', secret: `${SECRET}-old` }], ISSUER);
const SERVICE_HEADER = '{"alg":"HS256","typ":"JWT","kid":"k1"}';

/** Valid sign claims, fresh. */
function signClaims(): Record<string, unknown> {
  const iat = nowSeconds();
  return { firma_id: 'Xq3vR8kLm2Pa', firma_adi: 'Örnek Eczane', token_id: 'tok-1', imza_tipi: 0, iat, exp: iat + 300, typ: 'sign', iss: ISSUER };
}
const accepted = (token: string): boolean => tokens.verifySignToken(token).claims !== undefined;

// ---- a JSON model whose objects may repeat names, and its spellings --------------------------

/** A member name: what it decodes to, and how the text spells it (escapes included). */
type Name = readonly [decoded: string, spelled: string];
type Json = { leaf: string } | { items: Json[] } | { members: [Name, Json][]; ws: string };

const NAMES: Name[] = [
  ['a', '"a"'], ['a', '"\\u0061"'], ['b', '"b"'], ['ab', '"a\\u0062"'],
  ['"', '"\\""'], ['"', '"\\u0022"'], ['\\', '"\\\\"'], ['é', '"é"'], ['é', '"\\u00e9"'], ['é', '"\\u00E9"'], ['/', '"\\/"'], ['/', '"/"'],
  ['__proto__', '"__proto__"'], ['exp', '"exp"'], ['exp', '"\\u0065xp"'], ['typ', '"typ"'], ['', '""'], ['a:b', '"a:b"'], ['0', '"0"'],
];
/** Leaves, strings that look like names, escapes or separators included. */
const LEAVES = [...[null, true, false, 0, -1500, 'x', 'a"b', '\\', ':', '":', 'a\\":', '{}', '"a":1'].map((v) => JSON.stringify(v)), '"\\u0061"'];
const WS = ['', ' ', '\n', '\t ', '\r\n  '];

const { json } = fc.letrec<{ json: Json; array: Json; object: Json }>((tie) => ({
  json: fc.oneof({ depthSize: 'small', withCrossShrink: true }, fc.constantFrom(...LEAVES).map((leaf) => ({ leaf })), tie('array'), tie('object')),
  array: fc.array(tie('json'), { maxLength: 3 }).map((items) => ({ items })),
  object: fc.record({ members: fc.array(fc.tuple(fc.constantFrom(...NAMES), tie('json')), { maxLength: 4 }), ws: fc.constantFrom(...WS) }),
}));

function textOf(v: Json): string {
  if ('leaf' in v) return v.leaf;
  if ('items' in v) return `[${v.items.map(textOf).join(',')}]`;
  const { ws } = v;
  return `{${ws}${v.members.map(([[, spelled], value]) => `${spelled}${ws}:${ws}${textOf(value)}`).join(`${ws},${ws}`)}${ws}}`;
}

function repeats(v: Json): boolean {
  if ('leaf' in v) return false;
  if ('items' in v) return v.items.some(repeats);
  const names = v.members.map(([[decoded]]) => decoded);
  return new Set(names).size !== names.length || v.members.some(([, value]) => repeats(value));
}

/** The sign claims as members (some names escaped), among random extra members, shuffled. */
const payload = fc
  .tuple(fc.array(fc.tuple(fc.constantFrom(...NAMES), json), { maxLength: 4 }), fc.constantFrom(...WS), fc.boolean())
  .chain(([extra, ws, escape]) => {
    const claims = Object.entries(signClaims()).map(([name, value]): [Name, Json] => [
      [name, escape ? `"\\u${name.charCodeAt(0).toString(16).padStart(4, '0')}${name.slice(1)}"` : JSON.stringify(name)],
      { leaf: JSON.stringify(value) },
    ]);
    const all = [...claims, ...extra];
    return fc.shuffledSubarray(all, { minLength: all.length, maxLength: all.length }).map((members): Json => ({ members, ws }));
  });

t.test('a payload is accepted exactly when no object in it repeats a name, however spelled', async (t) => {
  let withRepeats = 0;
  fc.assert(fc.property(payload, fc.constantFrom(SERVICE_HEADER, JSON.stringify(PUBLISHED_HEADER)), (p, header) => {
    const text = textOf(p);
    JSON.parse(text); // the model writes JSON
    const repeated = repeats(p);
    if (repeated) withRepeats++;
    return accepted(jwtOfTexts(header, text, SECRET)) === !repeated;
  }), settings);
  t.ok(withRepeats > RUNS / 10 && withRepeats < RUNS * 0.9, `both kinds generated: ${withRepeats} of ${RUNS} with a repeat`);
});

t.test('headers: the service\'s own byte for byte; kid-less ones with exactly alg HS256 and, optionally, typ JWT', async (t) => {
  const HEADER_NAMES: Name[] = [['alg', '"alg"'], ['alg', '"\\u0061lg"'], ['typ', '"typ"'], ['kid', '"kid"'], ['crit', '"crit"'],
    ['jku', '"jku"'], ['jwk', '"jwk"'], ['x5u', '"x5u"'], ['x5c', '"x5c"'], ['cty', '"cty"'], ['b64', '"b64"'], ['zip', '"zip"']];
  const VALUES = ['"HS256"', '"\\u0048S256"', '"hs256"', '"none"', '"HS512"', '"JWT"', '"jwt"', '"k1"', '"k0"', '["exp"]', 'false', 'null', '{}'];
  const member = (names: Name[], values: string[]) => fc.tuple(fc.constantFrom(...names), fc.constantFrom(...values).map((leaf): Json => ({ leaf })));
  // mostly near the accepted ones: alg and typ, each often right, and now and then something more
  const header = fc
    .tuple(
      fc.option(member(HEADER_NAMES.slice(0, 2), [...Array<string>(12).fill('"HS256"'), ...VALUES]), { nil: undefined, freq: 5 }),
      fc.option(member(HEADER_NAMES.slice(2, 3), [...Array<string>(12).fill('"JWT"'), ...VALUES]), { nil: undefined, freq: 2 }),
      fc.oneof({ weight: 3, arbitrary: fc.constant([]) }, { weight: 2, arbitrary: fc.array(member(HEADER_NAMES, VALUES), { minLength: 1, maxLength: 3 }) }),
      fc.constantFrom('', '', ' ', '\n'),
    )
    .chain(([alg, typ, extra, ws]) => {
      const all = [alg, typ, ...extra].filter((m) => m !== undefined);
      return fc.shuffledSubarray(all, { minLength: all.length, maxLength: all.length }).map((members): Json => ({ members, ws }));
    });
  let acceptedCount = 0;
  fc.assert(fc.property(header, (h) => {
    const text = textOf(h);
    const parsed = JSON.parse(text) as Record<string, unknown>;
    const names = Object.keys(parsed);
    const kidless = !repeats(h) && parsed.alg === 'HS256' && names.every((n) => n === 'alg' || (n === 'typ' && parsed.typ === 'JWT'));
    const expected = text === SERVICE_HEADER || (kidless && Buffer.from(text).toString('base64url').length <= 128);
    if (expected) acceptedCount++;
    return accepted(jwtOfTexts(text, JSON.stringify(signClaims()), SECRET)) === expected;
  }), settings);
  t.ok(acceptedCount > RUNS / 10 && acceptedCount < RUNS * 0.9, `both kinds generated: ${acceptedCount} of ${RUNS} accepted`);
});

t.test('the kid-less spellings JWT libraries write are accepted; the key is the signing one', async (t) => {
  const claims = JSON.stringify(signClaims());
  for (const header of ['{"alg":"HS256","typ":"JWT"}', '{"typ":"JWT","alg":"HS256"}', '{"alg":"HS256"}', '{"alg": "HS256", "typ": "JWT"}',
    '{\n  "alg": "HS256",\n  "typ": "JWT"\n}', '{"\\u0061lg":"HS256"}']) {
    t.ok(accepted(jwtOfTexts(header, claims, SECRET)), `${header}: accepted with the signing key`);
    t.notOk(accepted(jwtOfTexts(header, claims, `${SECRET}-old`)), `${header}: refused with a key that verifies but does not sign`);
  }
  t.ok(accepted(jwtOfTexts('{"alg":"HS256","typ":"JWT","kid":"k0"}', claims, `${SECRET}-old`)), 'the other key verifies tokens naming it');
  const wide = `{"alg":"HS256",${' '.repeat(70)}"typ":"JWT"}`;
  t.ok(Buffer.from(wide).toString('base64url').length > 128, 'a header segment over 128 characters...');
  t.notOk(accepted(jwtOfTexts(wide, claims, SECRET)), '...is not read');
});

t.test('a token has one spelling: no padding, no other alphabet, no stray bits', async (t) => {
  const claims = { ...signClaims(), firma_adi: '??>>~~ Ö' }; // base64url of it holds "_" and "-"
  const good = craftJwt(PUBLISHED_HEADER, claims, SECRET);
  t.ok(accepted(good), 'the token as base64url writes it');
  const [h, p, s] = good.split('.') as [string, string, string];
  t.match(p, /[-_]/, 'its payload segment has "-" or "_"');
  const resigned = (header: string, payloadSegment: string): string => `${header}.${payloadSegment}.${hmac(`${header}.${payloadSegment}`, SECRET)}`;
  const std = p.replace(/-/g, '+').replace(/_/g, '/');
  t.notOk(accepted(resigned(h, std)), 'payload in the standard base64 alphabet, signed: refused');
  t.notOk(accepted(resigned(h, `${p}=`)), 'payload with a padding character, signed: refused');
  t.notOk(accepted(`${h}.${p}.${s}=`), 'signature padded: refused');
  const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  const last = ALPHABET.indexOf(s.slice(-1));
  const stray = `${s.slice(0, -1)}${ALPHABET[last + 1]}`; // the 43rd character's two low bits are not part of the MAC
  t.same(Buffer.from(stray, 'base64url'), Buffer.from(s, 'base64url'), 'a signature with stray bits decodes to the same MAC...');
  t.notOk(accepted(`${h}.${p}.${stray}`), '...and is refused');
  const header28 = '{"alg":"HS256","typ":"JWT"} '; // 28 bytes: the segment's last character has stray bits
  const seg = Buffer.from(header28).toString('base64url');
  const strayHeader = `${seg.slice(0, -1)}${ALPHABET[ALPHABET.indexOf(seg.slice(-1)) + 1]}`;
  t.same(Buffer.from(strayHeader, 'base64url'), Buffer.from(seg, 'base64url'), 'a header segment with stray bits decodes to the same header...');
  t.ok(accepted(resigned(seg, p)), 'the header as base64url writes it is accepted');
  t.notOk(accepted(resigned(strayHeader, p)), '...and the one with stray bits, signed, is refused');
});

t.test('time claims: expired before refused, repeats before expiry, nbf honoured', async (t) => {
  const now = nowSeconds();
  const expired = { ...signClaims(), iat: now - 400, exp: now - 100 };
  t.same(tokens.verifySignToken(craftJwt(PUBLISHED_HEADER, expired, SECRET)), { expired: true }, 'kid-less, expired: expired');
  const repeatedExpired = withMembersFirst(JSON.stringify(expired), '"imza_tipi":1');
  t.same(tokens.verifySignToken(jwtOfTexts(JSON.stringify(PUBLISHED_HEADER), repeatedExpired, SECRET)), { expired: false },
    'expired and repeating a member: invalid, not expired');
  t.same(tokens.verifySignToken(craftJwt(PUBLISHED_HEADER, { ...expired, iss: 'other' }, SECRET)), { expired: false },
    'expired, another issuer: invalid');
  t.notOk(accepted(craftJwt(PUBLISHED_HEADER, { ...signClaims(), nbf: now + 60 }, SECRET)), 'nbf a minute ahead: refused');
  t.notOk(accepted(craftJwt(PUBLISHED_HEADER, { ...signClaims(), nbf: 'now' }, SECRET)), 'nbf not a number: refused');
  t.ok(accepted(craftJwt(PUBLISHED_HEADER, { ...signClaims(), nbf: now - 1 }, SECRET)), 'nbf passed: accepted');
  t.notOk(accepted(craftJwt(PUBLISHED_HEADER, { ...signClaims(), iat: '0' }, SECRET)), 'iat not a number: refused');
});
