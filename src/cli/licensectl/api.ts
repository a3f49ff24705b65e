// The admin API (documented in /admin/openapi.json) as licensectl calls it: one request, its data, or
// an ApiError carrying the API's code and message.

/** A refusal of the API ({success:false, error:{code, message}}), or no answer at all (status 0). */
export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

/** How long one request may take before it counts as no answer. */
const REQUEST_TIMEOUT_MS = 30_000;

/** The admin API's answer, as far as it can be trusted to be one. */
interface Answer {
  success?: unknown;
  data?: unknown;
  replayed?: unknown;
  warnings?: unknown;
  error?: { code?: unknown; message?: unknown };
}

/** Something the API accepted but warns about (an expiry already past): the answer's `warnings`. */
export interface Warning {
  code: string;
  field: string;
  message: string;
}

/** A success: its data, and what the API says beside it. */
export interface Success<T> {
  data: T;
  /** add-quota: the Idempotency-Key's purchase was credited before; nothing was credited now */
  replayed: boolean;
  warnings: Warning[];
}

function warningsOf(value: unknown): Warning[] {
  if (!Array.isArray(value)) return [];
  return value.filter((w): w is Warning => typeof w === 'object' && w !== null && typeof (w as Warning).message === 'string');
}

export class AdminApi {
  private readonly base: string;

  constructor(url: string, private readonly token: string) {
    this.base = url.replace(/\/+$/, '');
  }

  /** The `data` of a successful answer. */
  async call<T = unknown>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    return (await this.answer<T>(method, path, body, headers)).data;
  }

  /** A successful answer: its data, whether it is a replay, its warnings. */
  async answer<T = unknown>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Success<T>> {
    let res: Response;
    try {
      res = await fetch(`${this.base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (err as Error).message;
      throw new ApiError(0, 'CONNECTION_FAILED', `no answer from ${this.base} (${why})`);
    }
    const text = await res.text();
    let parsed: Answer | null = null;
    try {
      parsed = JSON.parse(text) as Answer | null;
    } catch {
      // not the admin API's JSON: reported below
    }
    if (res.ok && parsed?.success === true) {
      return { data: parsed.data as T, replayed: parsed.replayed === true, warnings: warningsOf(parsed.warnings) };
    }
    const code = typeof parsed?.error?.code === 'string' ? parsed.error.code : `HTTP_${res.status}`;
    const message = typeof parsed?.error?.message === 'string' ? parsed.error.message : `unexpected answer: ${text.slice(0, 200)}`;
    throw new ApiError(res.status, code, message);
  }
}

/** A license key as a path segment (the API answers 404 for anything but a UUID). */
export function licensePath(key: string, rest = ''): string {
  return `/admin/v1/licenses/${encodeURIComponent(key)}${rest}`;
}
