// The quota dashboard's script (served at /dashboard/dashboard.js; the page is index.html).
// It calls the public check-quota endpoint, and with an access token the history and ledger
// endpoints, of the same origin, and asks again every data-refresh-seconds (the route derives it from
// QUOTA_CACHE_SECONDS). The access token stays in this module's memory: never in the URL,
// storage or the DOM.
import { getJson, errorOf, loadHistory, loadLedger } from './api.js';
import { chartStart, drawChart } from './chart.js';
import { $, drawEntries, drawPackages, drawTable, failureText, show, showCheckQuota } from './view.js';

const refreshSeconds = Math.max(1, Number(document.body.dataset.refreshSeconds) || 30);
const state = { key: '', token: '', timer: 0, generation: 0, history: null };

/** A history or ledger failure: a token refused (401, 403) is forgotten; anything else is tried again later. */
function historyFailed(got) {
  const published = errorOf(got.body).message;
  if (got.status === 401 || got.status === 403) {
    forgetToken();
    const why = got.status === 401 ? 'erişim tokenının süresi dolmuş ya da geçersiz; get-token ile yeni bir token alın'
      : 'bu token başka bir lisansın';
    show($('history-message'), `${published} (${got.status}): ${why}.`);
    return;
  }
  show($('history-message'), failureText(got, 'Geçmiş alınamadı', refreshSeconds));
}

function forgetToken() {
  state.token = '';
  state.history = null;
  $('token-state').hidden = true;
  $('history').hidden = true;
  $('ledger').hidden = true;
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
  const [quota, history, ledger] = await Promise.all([
    getJson(`/api/License/check-quota/${encodeURIComponent(key)}`, {}),
    token === '' ? null : loadHistory(key, token, since),
    token === '' ? null : loadLedger(key, token),
  ]);
  if (generation !== state.generation) return; // a newer refresh (another key) took over
  $('quota').removeAttribute('aria-busy');
  let wait = refreshSeconds;
  if (showCheckQuota(quota)) {
    show($('notice'), '');
  } else {
    show($('notice'), failureText(quota, 'Kota bilgisi alınamadı', refreshSeconds));
    wait = Math.max(wait, quota.retryAfter);
  }
  if (history && ledger && token === state.token) {
    // both share the license's limit and its token: one failure says it for both
    const failed = history.failed || ledger.failed;
    if (failed) {
      historyFailed(failed);
      if (failed.status === 429) wait = Math.max(wait, failed.retryAfter);
    } else {
      show($('history-message'), '');
      $('history').hidden = false; // visible first: the chart is drawn to its width
      state.history = history;
      drawChart(history.items, history.truncated);
      drawTable(history.items);
      drawPackages(ledger.data.packages);
      drawEntries(ledger.data.items);
      $('ledger').hidden = false;
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
