// The quota dashboard's script (served at /dashboard/dashboard.js; the page is index.html).
// It calls the public check-quota endpoint, and with an access token the history endpoint,
// of the same origin, and asks again every data-refresh-seconds (the route derives it from
// QUOTA_CACHE_SECONDS). The access token stays in this closure: never in the URL, storage or
// the DOM. Everything shown is set with textContent, never parsed as HTML.
'use strict';

(() => {
  const DAY_MS = 86_400_000;
  /** days of the chart, today included */
  const CHART_DAYS = 14;
  /** history pages: their size, and at most how many to follow back into the chart's window */
  const PAGE_SIZE = 100;
  const MAX_PAGES = 20;
  const TABLE_ROWS = 20;
  const SIGNATURE_TYPES = { 0: 'Medula', 1: 'İBYS' };

  const $ = (id) => document.getElementById(id);
  const refreshSeconds = Math.max(1, Number(document.body.dataset.refreshSeconds) || 30);
  const numberFormat = new Intl.NumberFormat('tr-TR');
  const percentFormat = new Intl.NumberFormat('tr-TR', { maximumFractionDigits: 2 });
  const dateFormat = new Intl.DateTimeFormat('tr-TR', { dateStyle: 'long', timeStyle: 'short' });
  const timeFormat = new Intl.DateTimeFormat('tr-TR', { timeStyle: 'medium' });
  const stampFormat = new Intl.DateTimeFormat('tr-TR', { dateStyle: 'short', timeStyle: 'medium' });
  const dayFormat = new Intl.DateTimeFormat('tr-TR', { day: 'numeric', month: 'short' });

  const state = { key: '', token: '', timer: 0, generation: 0, history: null };

  // ---- talking to the service -----------------------------------------------------------

  /** One GET: {status, body, retryAfter}, or {status: 0} when no answer came. */
  async function getJson(url, headers) {
    try {
      const res = await fetch(url, { headers: { Accept: 'application/json', ...headers }, cache: 'no-store', referrerPolicy: 'no-referrer' });
      const body = await res.json().catch(() => null);
      return { status: res.status, body, retryAfter: Number(res.headers.get('Retry-After')) || 0 };
    } catch {
      return { status: 0, body: null, retryAfter: 0 };
    }
  }

  const errorOf = (body) => (body && body.error) || {};

  /** The license's redemptions back to the chart's first day (newest first), paging at most MAX_PAGES. */
  async function loadHistory(key, token, since) {
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

  // ---- what is shown --------------------------------------------------------------------

  function show(el, text) {
    el.textContent = text;
    el.hidden = text === '';
  }

  function setFact(id, value, text) {
    const el = $(id);
    el.dataset.value = value === null ? '' : String(value);
    el.textContent = value === null ? '–' : text;
  }

  const STATUS_TEXT = {
    active: 'Aktif', exhausted: 'Kota doldu', inactive: 'Aktif değil', expired: 'Süresi dolmuş', 'not-found': 'Bulunamadı', invalid: 'Geçersiz anahtar',
  };

  /** Quota figures (any may be null: an answer without them), the gauge and its ARIA values. */
  function showQuota(q) {
    setFact('remaining', q.remaining, numberFormat.format(q.remaining));
    setFact('used', q.used, numberFormat.format(q.used));
    setFact('total', q.total, numberFormat.format(q.total));
    setFact('percentage', q.percentage, `%${percentFormat.format(q.percentage)}`);
    const gauge = $('gauge');
    const share = q.percentage === null ? 0 : Math.min(100, Math.max(0, q.percentage));
    $('gauge-fill').setAttribute('stroke-dasharray', `${share} 100`);
    $('gauge-fill').dataset.level = share <= 10 ? 'low' : share <= 30 ? 'mid' : 'ok';
    $('gauge-value').textContent = q.percentage === null ? '–' : `%${percentFormat.format(q.percentage)}`;
    gauge.setAttribute('aria-valuemax', String(q.total ?? 0));
    gauge.setAttribute('aria-valuenow', String(q.remaining ?? 0));
    gauge.setAttribute('aria-valuetext', q.remaining === null ? 'bilinmiyor'
      : `${q.total} imzadan ${q.remaining} kaldı (%${percentFormat.format(q.percentage)})`);
  }

  /** Expiry date and days left (or days since it passed). */
  function showExpiry(iso, daysExpired) {
    const expiry = $('expiry');
    if (!iso) {
      expiry.removeAttribute('datetime');
      expiry.textContent = '–';
      setFact('days-left', null, '');
      $('days-left').textContent = '';
      return;
    }
    expiry.setAttribute('datetime', iso);
    expiry.textContent = dateFormat.format(new Date(iso));
    if (daysExpired !== undefined) {
      setFact('days-left', -daysExpired, `(${daysExpired} gün önce sona erdi)`);
      return;
    }
    const days = Math.floor((Date.parse(iso) - Date.now()) / DAY_MS);
    setFact('days-left', days, days === 0 ? '(bugün sona eriyor)' : `(${numberFormat.format(days)} gün kaldı)`);
  }

  function showStatus(status, message) {
    const badge = $('status');
    badge.dataset.status = status;
    badge.textContent = STATUS_TEXT[status];
    show($('quota-message'), message);
  }

  /** A check-quota answer, as the spec publishes them. false: not an answer about the license (keep what is shown). */
  function showCheckQuota(got) {
    const { status, body } = got;
    const error = errorOf(body);
    const data = (body && body.data) || {};
    const empty = { remaining: null, used: null, total: null, percentage: null };
    if (status === 200 && body && body.success) {
      $('org-name').textContent = data.organizationName;
      showStatus(data.isActive ? 'active' : 'inactive', '');
      showQuota({ remaining: data.remainingQuota, used: data.usedQuota, total: data.totalQuota, percentage: data.quotaPercentage });
      showExpiry(data.expiryDate);
    } else if (status === 429 && error.code === 'QUOTA_EXCEEDED') {
      showStatus('exhausted', error.message);
      showQuota({ remaining: 0, used: data.usedQuota, total: data.totalQuota, percentage: 0 });
      showExpiry(null);
    } else if (status === 410 && error.code === 'LICENSE_EXPIRED') {
      showStatus('expired', error.message);
      showQuota(empty);
      showExpiry(data.expiryDate, data.daysExpired);
    } else if (status === 403 && error.code === 'LICENSE_INACTIVE') {
      showStatus('inactive', error.message);
      showQuota(empty);
      showExpiry(null);
    } else if ((status === 404 && error.code === 'LICENSE_NOT_FOUND') || (status === 400 && error.code === 'INVALID_LICENSE_KEY')) {
      $('org-name').textContent = 'Lisans';
      showStatus(status === 404 ? 'not-found' : 'invalid', error.message);
    } else {
      return false;
    }
    $('quota-details').hidden = status === 404 || status === 400;
    $('quota').hidden = false;
    const stamp = (body && body.timestamp) || new Date().toISOString();
    $('updated-at').setAttribute('datetime', stamp);
    $('updated-at').textContent = timeFormat.format(new Date(stamp));
    return true;
  }

  /** The notice for an answer that says nothing about the license: rate limit, outage, no network. */
  function failureText(got, what) {
    const published = errorOf(got.body).message || (got.body && got.body.message);
    if (got.status === 429) return `${published || 'Çok fazla istek.'} ${got.retryAfter || refreshSeconds} saniye sonra yeniden denenecek (429).`;
    if (got.status === 0) return `${what}: hizmete ulaşılamadı; yeniden denenecek.`;
    return `${what}: ${published || 'beklenmeyen yanıt'} (${got.status}); yeniden denenecek.`;
  }

  /** The local calendar day of an instant, as YYYY-MM-DD. */
  function dayKey(ms) {
    const d = new Date(ms);
    return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
  }

  /** Midnight (local) of the chart's first day. */
  function chartStart() {
    const d = new Date();
    d.setHours(0, 0, 0, 0);
    d.setDate(d.getDate() - (CHART_DAYS - 1));
    return d.getTime();
  }

  const SVG = 'http://www.w3.org/2000/svg';
  function svg(name, attributes, text) {
    const el = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attributes)) el.setAttribute(k, String(v));
    if (text !== undefined) el.textContent = text;
    return el;
  }

  /** One bar per day of the window, counts above, day below; each bar titled for pointer and screen reader. */
  function drawChart(items, truncated) {
    const start = chartStart();
    const days = [];
    for (let i = 0; i < CHART_DAYS; i++) {
      const d = new Date(start);
      d.setDate(d.getDate() + i);
      days.push({ key: dayKey(d.getTime()), date: d, count: 0 });
    }
    const byKey = new Map(days.map((d) => [d.key, d]));
    let inWindow = 0;
    for (const item of items) {
      const day = byKey.get(dayKey(Date.parse(item.usedAt)));
      if (day) {
        day.count++;
        inWindow++;
      }
    }
    const max = Math.max(1, ...days.map((d) => d.count));
    const chart = $('chart');
    // drawn in the chart's own pixels (redrawn on resize), so labels keep their size at any width
    const slot = Math.max(20, Math.floor((chart.clientWidth || 560) / CHART_DAYS));
    const top = 20;
    const plot = 120;
    chart.replaceChildren();
    chart.setAttribute('viewBox', `0 0 ${slot * CHART_DAYS} ${top + plot + 24}`);
    chart.appendChild(svg('line', { class: 'axis', x1: 0, x2: slot * CHART_DAYS, y1: top + plot, y2: top + plot }));
    days.forEach((day, i) => {
      const height = day.count === 0 ? 0 : Math.max(2, Math.round((day.count / max) * plot));
      const gap = Math.min(6, Math.floor(slot / 5));
      const x = i * slot + gap;
      const bar = svg('rect', { class: 'bar', x, y: top + plot - height, width: slot - 2 * gap, height, rx: 2, 'data-day': day.key, 'data-count': day.count });
      bar.appendChild(svg('title', {}, `${dayFormat.format(day.date)}: ${day.count} kullanım`));
      chart.appendChild(bar);
      if (day.count > 0) chart.appendChild(svg('text', { class: 'bar-count', x: x + slot / 2 - gap, y: top + plot - height - 5, 'text-anchor': 'middle' }, day.count));
      chart.appendChild(svg('text', { class: 'bar-day', x: x + slot / 2 - gap, y: top + plot + 17, 'text-anchor': 'middle' }, day.date.getDate()));
    });
    const busiest = days.reduce((a, b) => (b.count > a.count ? b : a));
    $('chart-days').textContent = String(CHART_DAYS);
    $('chart-summary').textContent = `Son ${CHART_DAYS} günde ${numberFormat.format(inWindow)} kullanım`
      + (inWindow > 0 ? `; en yoğun gün ${dayFormat.format(busiest.date)} (${busiest.count})` : '')
      + (truncated ? `. Yalnızca son ${numberFormat.format(items.length)} kullanım sayıldı.` : '.');
  }

  const COLUMNS = ['Zaman', 'İmza tipi', 'Origin', 'Token'];

  /** A cell, labelled with its column for the narrow layout (rows shown as cards, dashboard.css). */
  function cell(row, content) {
    const td = row.insertCell();
    td.dataset.label = COLUMNS[td.cellIndex];
    if (content instanceof Node) td.appendChild(content);
    else td.textContent = content;
  }

  function drawTable(items) {
    const body = $('redemptions').tBodies[0];
    body.replaceChildren();
    for (const item of items.slice(0, TABLE_ROWS)) {
      const row = body.insertRow();
      const time = document.createElement('time');
      time.setAttribute('datetime', item.usedAt);
      time.textContent = stampFormat.format(new Date(item.usedAt));
      cell(row, time);
      cell(row, `${item.imzaTipi} · ${SIGNATURE_TYPES[item.imzaTipi] ?? '?'}`);
      cell(row, item.origin === null ? '—' : item.origin);
      const code = document.createElement('code');
      code.textContent = item.tokenId;
      cell(row, code);
      row.dataset.tokenId = item.tokenId;
    }
    $('history-empty').hidden = items.length > 0;
    $('redemptions').hidden = items.length === 0;
  }

  /** A history failure: a token refused (401, 403) is forgotten; anything else is tried again later. */
  function historyFailed(got) {
    const published = errorOf(got.body).message;
    if (got.status === 401 || got.status === 403) {
      forgetToken();
      const why = got.status === 401 ? 'erişim tokenının süresi dolmuş ya da geçersiz; get-token ile yeni bir token alın'
        : 'bu token başka bir lisansın';
      show($('history-message'), `${published} (${got.status}): ${why}.`);
      return;
    }
    show($('history-message'), failureText(got, 'Geçmiş alınamadı'));
  }

  function forgetToken() {
    state.token = '';
    state.history = null;
    $('token-state').hidden = true;
    $('history').hidden = true;
  }

  // ---- the refresh loop -----------------------------------------------------------------

  /** Asks for everything shown, then again in refreshSeconds (or when a 429 says). */
  async function refresh() {
    clearTimeout(state.timer);
    const generation = ++state.generation;
    const { key, token } = state;
    if (key === '') return;
    $('quota').setAttribute('aria-busy', 'true');
    const since = chartStart();
    const [quota, history] = await Promise.all([
      getJson(`/api/License/check-quota/${encodeURIComponent(key)}`, {}),
      token === '' ? null : loadHistory(key, token, since),
    ]);
    if (generation !== state.generation) return; // a newer refresh (another key) took over
    $('quota').removeAttribute('aria-busy');
    let wait = refreshSeconds;
    if (showCheckQuota(quota)) {
      show($('notice'), '');
    } else {
      show($('notice'), failureText(quota, 'Kota bilgisi alınamadı'));
      wait = Math.max(wait, quota.retryAfter);
    }
    if (history && token === state.token) {
      if (history.failed) {
        historyFailed(history.failed);
      } else {
        show($('history-message'), '');
        $('history').hidden = false; // visible first: the chart is drawn to its width
        state.history = history;
        drawChart(history.items, history.truncated);
        drawTable(history.items);
      }
    }
    state.timer = setTimeout(refresh, wait * 1000);
  }

  function useKey(key) {
    if (key !== state.key) forgetToken(); // a token is one license's
    state.key = key;
    // the key (only) in the address, for a bookmark
    const url = new URL(window.location.href);
    url.searchParams.set('key', key);
    window.history.replaceState(null, '', url);
    return refresh();
  }

  $('refresh-every').textContent = String(refreshSeconds);

  let resizing = 0;
  window.addEventListener('resize', () => {
    clearTimeout(resizing);
    resizing = setTimeout(() => {
      if (state.history && !$('history').hidden) drawChart(state.history.items, state.history.truncated);
    }, 150);
  });

  $('key-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const key = $('license-key').value.trim();
    if (key === '') {
      show($('notice'), 'Lisans anahtarını girin.');
      return;
    }
    void useKey(key);
  });

  $('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const input = $('access-token');
    const token = input.value.trim();
    input.value = ''; // kept in memory only, not in the form
    if (state.key === '') {
      show($('history-message'), 'Önce lisans anahtarını girin.');
      return;
    }
    if (token === '') {
      show($('history-message'), 'Erişim tokenını girin.');
      return;
    }
    state.token = token;
    $('token-state').hidden = false;
    show($('history-message'), '');
    void refresh();
  });

  $('forget-token').addEventListener('click', () => {
    forgetToken();
    show($('history-message'), '');
  });

  const fromUrl = new URLSearchParams(window.location.search).get('key');
  if (fromUrl) {
    $('license-key').value = fromUrl;
    void useKey(fromUrl.trim());
  }
})();
