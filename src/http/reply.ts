/** What a handler answers: a status line, a JSON body and maybe extra headers. */
export interface Reply {
  status: string;
  body: string;
  headers?: readonly (readonly [string, string])[];
}

export const STATUS: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  410: '410 Gone',
  413: '413 Payload Too Large',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

export function reply(status: number, body: unknown, headers?: Reply['headers']): Reply {
  return { status: STATUS[status] ?? `${status} Unknown`, body: JSON.stringify(body), headers };
}

/** Whole seconds until a rate-limit window resets: the Retry-After header and retryAfter. */
export function retrySeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

export function retryHeaders(seconds: number): Reply['headers'] {
  return [['Retry-After', String(seconds)]];
}

/**
 * How one endpoint words its errors: the spec gives get-token and check-quota an error code,
 * validate a Turkish message. The HTTP layer uses it for the failures it answers itself.
 */
export interface ErrorShape {
  (status: number, code: string, message: string): Reply;
}

export const codeShape: ErrorShape = (status, code, message) =>
  reply(status, { success: false, error: { code, message } });

export const messageShape: ErrorShape = (status, _code, message) => reply(status, { success: false, message });

export const timestampedCodeShape: ErrorShape = (status, code, message) =>
  reply(status, { success: false, error: { code, message }, timestamp: new Date().toISOString() });
