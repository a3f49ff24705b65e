/** Header name and value pairs, written in order. */
export type Headers = readonly (readonly [string, string])[];

/** What a handler answers: a status line, a body (JSON unless contentType says otherwise) and maybe extra headers. */
export interface Reply {
  status: string;
  body: string | Uint8Array;
  headers?: Headers;
  /** the Content-Type when the body is not JSON (/metrics, /docs, /dashboard) */
  contentType?: string;
  /** a 304: no body, so neither Content-Type nor Content-Length (src/http/static.ts) */
  noBody?: boolean;
}

export const STATUS: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  304: '304 Not Modified',
  308: '308 Permanent Redirect',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  410: '410 Gone',
  413: '413 Payload Too Large',
  422: '422 Unprocessable Entity',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

export function reply(status: number, body: unknown, headers?: Headers): Reply {
  return { status: STATUS[status] ?? `${status} Unknown`, body: JSON.stringify(body), headers };
}

/** An answer whose body is not JSON: text, a page, a script, a style sheet. */
export function rawReply(status: number, body: string | Uint8Array, contentType: string, headers?: Headers): Reply {
  return { status: STATUS[status] ?? `${status} Unknown`, body, headers, contentType };
}

/** Whole seconds until a rate-limit window resets: the Retry-After header and retryAfter. */
export function retrySeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

export function retryHeaders(seconds: number): Headers {
  return [['Retry-After', String(seconds)]];
}

/** Failures the HTTP layer answers by itself, before a handler runs or when one fails. */
export type TransportFailure = 'NOT_FOUND' | 'METHOD_NOT_ALLOWED' | 'PAYLOAD_TOO_LARGE' | 'SERVICE_UNAVAILABLE' | 'ORIGIN_NOT_ALLOWED';

/**
 * How an endpoint words those failures, in its published error shape (the routes' reply
 * tables, src/routes/replies.ts). The HTTP layer adds the headers (Allow, Retry-After).
 */
export type TransportErrors = (failure: TransportFailure) => Reply;
