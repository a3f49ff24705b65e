// Talking to the service: check-quota, history and the ledger, same origin (dashboard.js).

/** history pages: their size, and at most how many to follow back into the chart's window */
const PAGE_SIZE = 100;
const MAX_PAGES = 20;
/** the ledger's newest entries shown (one page: the packages and totals come with every page) */
const LEDGER_ENTRIES = 20;

/** One GET: {status, body, retryAfter}, or {status: 0} when no answer came. */
export async function getJson(url, headers) {
  try {
    const res = await fetch(url, { headers: { Accept: 'application/json', ...headers }, cache: 'no-store', referrerPolicy: 'no-referrer' });
    const body = await res.json().catch(() => null);
    return { status: res.status, body, retryAfter: Number(res.headers.get('Retry-After')) || 0 };
  } catch {
    return { status: 0, body: null, retryAfter: 0 };
  }
}

export const errorOf = (body) => (body && body.error) || {};

/** The license's redemptions back to the chart's first day (newest first), paging at most MAX_PAGES. */
export async function loadHistory(key, token, since) {
  const items = [];
  let cursor = null;
  for (let page = 1; ; page++) {
    const query = `?limit=${PAGE_SIZE}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const got = await getJson(`/api/License/history/${encodeURIComponent(key)}${query}`, { Authorization: `Bearer ${token}` });
    if (got.status !== 200 || !got.body || !got.body.data) return { failed: got };
    items.push(...got.body.data.items);
    cursor = got.body.data.nextCursor;
    const last = items[items.length - 1];
    if (!cursor || !last || Date.parse(last.usedAt) < since) return { items, truncated: false };
    if (page === MAX_PAGES) return { items, truncated: true };
  }
}

/** The license's packages and its newest ledger entries: {data} or {failed}. */
export async function loadLedger(key, token) {
  const got = await getJson(`/api/License/ledger/${encodeURIComponent(key)}?limit=${LEDGER_ENTRIES}`, { Authorization: `Bearer ${token}` });
  if (got.status !== 200 || !got.body || !got.body.data) return { failed: got };
  return { data: got.body.data };
}
