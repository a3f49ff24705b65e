import { Type } from '@sinclair/typebox';
import { HoldBack, heldBack } from '../http/holdBack.js';
import type { Reply } from '../http/reply.js';
import type { Route } from '../http/route.js';
import type { RouteDoc } from '../openapi/routeDoc.js';
import type { RouteContext } from './context.js';
import { codedErrors } from './replies.js';

// GET /.well-known/jwks.json: the Ed25519 public keys of license tokens and receipts, for
// verifying them offline. Built once at start (the keys change only with a restart), as bytes:
// the server writes a Uint8Array body as it is (Content-Type JSON, as for a string body),
// with no UTF-8 encoding per answer. An instance without signing keys publishes the empty
// set, {"keys":[]}: it signs nothing.
//
// Answered from memory, it is still a request the core must read and answer: unchecked, a
// flood of it (200 connections in a closed loop) raised another license's validate p99 2.6 to
// 15 times. So it is held back as the health probes are: past JWKS_PER_SECOND answers a
// second per process, each waits JWKS_HOLD_MS (0.75 to 1.25 s, HoldBack) and a closed-loop
// flood asks about once a second per connection. Legitimate traffic stays far below: clients
// cache the set an hour (CACHE) and the SDK asks again at most once a minute, on a kid it
// does not know (docs/sdk.md); 20 a second per process is 72,000 clients fetching hourly,
// each answered at once. A held answer is the same answer (status, body, headers), late.
const JWKS_PER_SECOND = 20;
const JWKS_HOLD_MS = 1_000;

/**
 * Cached for an hour by clients and shared caches: a key is added a restart ahead of signing
 * with it (docs/operations.md#signing-keys), so a copy an hour old still holds the signing key.
 */
const CACHE: readonly [string, string] = ['Cache-Control', 'public, max-age=3600'];

/**
 * The empty set is asked again every time: the keys an operator adds sign from the restart
 * on, with no published set of an hour before to hold them.
 */
const EMPTY: Reply = { status: '200 OK', body: Buffer.from('{"keys":[]}'), headers: [['Cache-Control', 'no-cache']] };

const Jwk = Type.Object({
  kty: Type.Literal('OKP'),
  crv: Type.Literal('Ed25519'),
  x: Type.String({ pattern: '^[A-Za-z0-9_-]{43}$', description: 'the public key, base64url' }),
  kid: Type.String({ pattern: '^[A-Za-z0-9_-]{43}$', description: 'the key\'s RFC 7638 thumbprint: the kid of the JWS it signs' }),
  alg: Type.Literal('EdDSA'),
  use: Type.Literal('sig'),
}, { additionalProperties: false });

const doc: RouteDoc = {
  summary: 'The public keys of license tokens and signing receipts (JWKS)',
  description: 'Ed25519 keys (RFC 8037) as a JSON Web Key Set: license tokens and receipts are JWS with alg EdDSA whose kid ' +
    'names one of them. The first key signs; the others are published so that what they signed still verifies. Fetch once ' +
    'and cache; fetch again on a kid not in the set. An instance without signing keys (SIGNING_KEYS_FILE or SIGNING_KEYS) ' +
    'publishes no key, {"keys":[]}, with Cache-Control no-cache (its license validation and sign answer 503). ' +
    `Past ${JWKS_PER_SECOND} requests a second per process, each is held about a second before it is answered, so a flood slows itself down.`,
  tags: ['public'],
  auth: 'none',
  neverUnavailable: true,
  responses: {
    200: {
      description: 'the key set (public, max-age=3600); empty on an instance without signing keys (no-cache)',
      schema: Type.Object({ keys: Type.Array(Jwk) }, { additionalProperties: false }),
      examples: [{
        summary: 'one key',
        value: { keys: [{ kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k', alg: 'EdDSA', use: 'sig' }] },
      }, { summary: 'no signing keys (SIGNING_KEYS_FILE or SIGNING_KEYS unset)', value: { keys: [] } }],
      headers: ['Cache-Control'],
    },
  },
};

/** GET /.well-known/jwks.json */
export function jwksRoute(ctx: RouteContext): Route {
  const answer: Reply = ctx.artefacts === null ? EMPTY : { status: '200 OK', body: Buffer.from(ctx.artefacts.jwksBody), headers: [CACHE] };
  const handler = heldBack(new HoldBack(JWKS_PER_SECOND, JWKS_HOLD_MS), () => answer);
  return { method: 'get', path: '/.well-known/jwks.json', errors: codedErrors, cors: true, doc, handler };
}
