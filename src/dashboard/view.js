// What the page shows of check-quota's answers, the redemptions and the ledger (dashboard.js). Every
// text is set with textContent, never parsed as HTML.
import { errorOf } from './api.js';

const DAY_MS = 86_400_000;
const TABLE_ROWS = 20;
/** a package expiring within this many days is marked as such: time to spend it or buy more */
const EXPIRING_DAYS = 30;
const SIGNATURE_TYPES = { 0: 'Medula', 1: 'İBYS' };

export const $ = (id) => document.getElementById(id);
export const numberFormat = new Intl.NumberFormat('tr-TR');
const percentFormat = new Intl.NumberFormat('tr-TR', { maximumFractionDigits: 2 });
const dateFormat = new Intl.DateTimeFormat('tr-TR', { dateStyle: 'long', timeStyle: 'short' });
const timeFormat = new Intl.DateTimeFormat('tr-TR', { timeStyle: 'medium' });
const stampFormat = new Intl.DateTimeFormat('tr-TR', { dateStyle: 'short', timeStyle: 'medium' });
const dayFormat = new Intl.DateTimeFormat('tr-TR', { dateStyle: 'medium', timeStyle: 'short' });

/** Writes a text only when it changed: a refresh that changes nothing announces nothing (aria-live). */
export function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

export function show(el, text) {
  setText(el, text);
  el.hidden = text === '';
}

function setFact(id, value, text) {
  const el = $(id);
  el.dataset.value = value === null ? '' : String(value);
  setText(el, value === null ? '–' : text);
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
  setText($('gauge-value'), q.percentage === null ? '–' : `%${percentFormat.format(q.percentage)}`);
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
    setText(expiry, '–');
    setFact('days-left', null, '');
    setText($('days-left'), '');
    return;
  }
  expiry.setAttribute('datetime', iso);
  setText(expiry, dateFormat.format(new Date(iso)));
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
  setText(badge, STATUS_TEXT[status]);
  show($('quota-message'), message);
}

/** A check-quota answer, in the published shapes (docs/api.md#check-quota). false: not an answer about the license (keep what is shown). */
export function showCheckQuota(got) {
  const { status, body } = got;
  const error = errorOf(body);
  const data = (body && body.data) || {};
  const empty = { remaining: null, used: null, total: null, percentage: null };
  if (status === 200 && body && body.success) {
    setText($('org-name'), data.organizationName);
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
    setText($('org-name'), 'Lisans');
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
export function failureText(got, what, retrySeconds) {
  const published = errorOf(got.body).message || (got.body && got.body.message);
  if (got.status === 429) return `${published || 'Çok fazla istek.'} ${got.retryAfter || retrySeconds} saniye sonra yeniden denenecek (429).`;
  if (got.status === 0) return `${what}: hizmete ulaşılamadı; yeniden denenecek.`;
  return `${what}: ${published || 'beklenmeyen yanıt'} (${got.status}); yeniden denenecek.`;
}

/** A table's column headers, as index.html writes them: the labels of its cells in the narrow layout. */
const columnsOf = (table) => [...table.tHead.rows[0].cells].map((th) => th.textContent);

/** A cell, labelled with its column for the narrow layout (rows shown as cards, dashboard.css). */
function cell(row, content, columns) {
  const td = row.insertCell();
  td.dataset.label = columns[td.cellIndex];
  if (content instanceof Node) td.appendChild(content);
  else td.textContent = content;
  return td;
}

function timeOf(iso, format) {
  const time = document.createElement('time');
  time.setAttribute('datetime', iso);
  time.textContent = format.format(new Date(iso));
  return time;
}

export function drawTable(items) {
  const table = $('redemptions');
  const columns = columnsOf(table);
  const body = table.tBodies[0];
  body.replaceChildren();
  for (const item of items.slice(0, TABLE_ROWS)) {
    const row = body.insertRow();
    cell(row, timeOf(item.usedAt, stampFormat), columns);
    cell(row, `${item.imzaTipi} · ${SIGNATURE_TYPES[item.imzaTipi] ?? '?'}`, columns);
    cell(row, item.origin === null ? '—' : item.origin, columns);
    const code = document.createElement('code');
    code.textContent = item.tokenId;
    cell(row, code, columns);
    row.dataset.tokenId = item.tokenId;
  }
  $('history-empty').hidden = items.length > 0;
  $('redemptions').hidden = items.length === 0;
}

/**
 * A package's state: expired (its units left forfeited, or about to be), expiring within
 * EXPIRING_DAYS, or neither; and what to say of it beside its expiry.
 */
function packageState(p, now) {
  const days = Math.floor((Date.parse(p.expiresAt) - now) / DAY_MS);
  if (Date.parse(p.expiresAt) <= now) {
    return { state: 'expired', text: p.forfeited > 0 ? `süresi doldu, ${numberFormat.format(p.forfeited)} kontör yandı` : 'süresi doldu' };
  }
  if (p.remaining > 0 && days < EXPIRING_DAYS) {
    return { state: 'expiring', text: days === 0 ? 'bugün sona eriyor' : `${numberFormat.format(days)} gün içinde sona eriyor` };
  }
  return { state: '', text: '' };
}

/** The license's packages (the ledger's, newest first): amount, used, remaining, expiry, and whether it expires soon or has. */
export function drawPackages(packages, now = Date.now()) {
  const table = $('packages');
  const columns = columnsOf(table);
  const body = table.tBodies[0];
  body.replaceChildren();
  for (const p of packages) {
    const row = body.insertRow();
    const { state, text } = packageState(p, now);
    row.dataset.packageId = String(p.id);
    row.dataset.state = state;
    cell(row, `#${p.id}`, columns);
    cell(row, numberFormat.format(p.amount), columns).dataset.value = String(p.amount);
    cell(row, numberFormat.format(p.used), columns).dataset.value = String(p.used);
    cell(row, numberFormat.format(p.remaining), columns).dataset.value = String(p.remaining);
    const expiry = document.createElement('span');
    expiry.append(timeOf(p.expiresAt, dayFormat));
    if (text !== '') {
      const note = document.createElement('strong');
      note.className = 'package-state';
      note.textContent = ` (${text})`;
      expiry.append(note);
    }
    cell(row, expiry, columns);
  }
  $('packages-empty').hidden = packages.length > 0;
  table.hidden = packages.length === 0;
}

const ENTRY_KINDS = { purchase: 'Satın alma', forfeit: 'Süresi doldu, yandı', release: 'İade', correction: 'Düzeltme' };

/** The ledger's newest entries: purchases, forfeits (and releases, corrections), each with its package. */
export function drawEntries(items) {
  const table = $('entries');
  const columns = columnsOf(table);
  const body = table.tBodies[0];
  body.replaceChildren();
  for (const item of items) {
    const row = body.insertRow();
    row.dataset.kind = item.kind;
    cell(row, timeOf(item.at, stampFormat), columns);
    cell(row, ENTRY_KINDS[item.kind] ?? item.kind, columns);
    const amount = cell(row, `${item.amount > 0 ? '+' : ''}${numberFormat.format(item.amount)}`, columns);
    amount.dataset.value = String(item.amount);
    cell(row, item.packageId === null ? '—' : `#${item.packageId}`, columns);
  }
  $('entries').hidden = items.length === 0;
  $('entries-heading').hidden = items.length === 0;
}
