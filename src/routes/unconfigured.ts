import { Type } from '@sinclair/typebox';
import type { RouteContext } from './context.js';

// What an instance serves without, named by /readyz and /healthz without failing them: a
// deployment upgraded without signing keys serves everything but license validation and sign
// (503), and its probes say why while the load balancer keeps sending it traffic.

/** The member of /readyz's and /healthz's answers, present only when the keys are missing. */
export const SigningKeysMissing = Type.Optional(Type.Literal('missing', {
  description: 'present only when this instance has no signing keys (SIGNING_KEYS_FILE or SIGNING_KEYS unset): license '
    + 'validation and POST /api/Signature/sign answer 503, everything else is served; not a failure (docs/operations.md#signing-keys)',
}));

/** The members each answer adds, built once per route: none when every setting is there. */
export function unconfigured(ctx: Pick<RouteContext, 'artefacts'>): { signingKeys?: 'missing' } {
  return ctx.artefacts === null ? { signingKeys: 'missing' } : {};
}
