import { existsSync } from 'node:fs';
import axe from 'axe-core';
import { chromium, type Browser, type Page } from 'playwright-core';
import t from 'tap';
import { DOCS_CSP, REFERENCE_CSP } from '../../src/openapi/viewer.js';
import { startHarness } from '../helpers/harness.js';

// The documentation for everyone: headless Chromium (Debian's, driven by playwright-core as
// in openapi.browser.test.ts) opens the pages as a user would, and axe-core checks them
// against WCAG 2.0, 2.1 and 2.2 A and AA: the reference pages (/docs, /admin/docs) as they
// open, and Swagger UI (/docs/interactive) in each state a reader reaches: the page as it
// opens, an operation expanded (its examples), its schemas, "Try it out", the Authorize
// dialog. No violation of impact serious or critical is allowed. axe is injected into a
// page loaded with the Content-Security-Policy bypassed (the policy would rightly refuse the
// checker's script); a second load, under the policy, must report no violation of it, and
// on Swagger UI go through the same states and render every operation of the document.

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync'];
const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];
/** the operation expanded: it has a request body, several responses and examples of each */
const OPERATION = '#operations-public-postApiV1AuthGetToken';

type TestT = Parameters<Parameters<typeof t.test>[0]>[0];

interface Operation {
  tags: string[];
  operationId: string;
}

/** axe's verdict on the page as it is now. */
async function axeRun(page: Page): Promise<axe.AxeResults> {
  return page.evaluate((tags) => (window as unknown as { axe: typeof axe }).axe.run(document, { runOnly: { type: 'tag', values: tags } }), WCAG_TAGS);
}

/** An element axe faults: its selector, and for contrast the colours and their ratio. */
function nodeOf(node: axe.NodeResult): string {
  const contrast = node.any[0]?.data as { fgColor?: string; bgColor?: string; contrastRatio?: number } | undefined;
  const target = JSON.stringify(node.target);
  return contrast?.contrastRatio === undefined ? target : `${target} (${contrast.fgColor} on ${contrast.bgColor}: ${contrast.contrastRatio}:1)`;
}

/** Asserts no serious or critical violation; the message lists each one's rule, impact and elements. */
async function noSeriousViolation(t: TestT, page: Page, state: string): Promise<axe.AxeResults> {
  const results = await axeRun(page);
  const serious = results.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  const lines = serious.map((v) => `${v.id} (${v.impact}, ${v.nodes.length}): ${v.nodes.slice(0, 5).map(nodeOf).join(' ')}`);
  t.same(lines, [], `${state}: no serious or critical axe violation${lines.length > 0 ? `\n${lines.join('\n')}` : ''}`);
  return results;
}

/** The rules axe applied to some element and found satisfied (so an empty violation list is not an empty check). */
function passed(results: axe.AxeResults): string[] {
  return results.passes.map((r) => r.id);
}

/** The states a reader reaches, in order; each callback leaves the page in its state. */
const STATES: [string, (page: Page) => Promise<void>][] = [
  ['the page as it opens', async (page) => {
    await page.waitForSelector('.opblock', { timeout: 30_000 });
  }],
  ['an operation expanded', async (page) => {
    await page.locator(`${OPERATION} .opblock-summary-control`).click();
    await page.locator(`${OPERATION} .examples-select-element`).first().waitFor({ timeout: 15_000 });
  }],
  ['its schemas', async (page) => {
    for (const tab of await page.locator(`${OPERATION} button.tablinks[data-name="model"]`).all()) await tab.click();
    // "Expand all" of each schema, until none is left (each shows those of nested schemas)
    for (let pass = 0; pass < 5; pass++) {
      const clicked = await page.$$eval(`${OPERATION} .json-schema-2020-12-expand-deep-button`,
        (els) => els.filter((e) => e.textContent === 'Expand all').map((e) => (e as HTMLElement).click()).length);
      if (clicked === 0) break;
      await page.waitForTimeout(200);
    }
    await page.locator(`${OPERATION} .json-schema-2020-12-property`).first().waitFor({ timeout: 15_000 });
  }],
  ['"Try it out" on it', async (page) => {
    await page.locator(`${OPERATION} button.try-out__btn`).click();
    await page.locator(`${OPERATION} textarea.body-param__text`).waitFor({ timeout: 15_000 });
  }],
  ['the Authorize dialog', async (page) => {
    await page.locator('.auth-wrapper .btn.authorize').click();
    await page.locator('.modal-ux').waitFor({ timeout: 15_000 });
  }],
];

async function browserTests(): Promise<void> {
  const h = await startHarness(t, 'docs-a11y');
  const browser: Browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  t.teardown(() => browser.close());
  const spec = (await h.request('GET', '/openapi.json')).body as { paths: Record<string, Record<string, Operation>> };
  const operations = Object.values(spec.paths).flatMap((item) => Object.values(item));

  t.test('the reference pages: no serious or critical axe violation; under their policy, none of it', async (t) => {
    for (const path of ['/docs', '/admin/docs']) {
      const checked = await browser.newContext({ bypassCSP: true });
      const page = await checked.newPage();
      t.equal((await page.goto(`${h.url}${path}`, { timeout: 30_000 }))?.status(), 200, `${path}: 200`);
      await page.addScriptTag({ content: axe.source });
      const results = await noSeriousViolation(t, page, path);
      for (const rule of ['color-contrast', 'link-name', 'list', 'bypass', 'document-title', 'html-has-lang']) t.ok(passed(results).includes(rule), `${path}: ${rule} checked and met`);
      await checked.close();
      const plain = await browser.newContext();
      const under = await plain.newPage();
      const violations: string[] = [];
      under.on('console', (msg) => {
        if (msg.type() === 'error') violations.push(msg.text());
      });
      const res = await under.goto(`${h.url}${path}`, { timeout: 30_000 });
      t.equal(res?.headers()['content-security-policy'], REFERENCE_CSP, `${path} carries its policy`);
      t.equal(await under.evaluate(() => getComputedStyle(document.body).fontFamily.includes('system-ui')), true, `${path}: its style sheet loads under it`);
      t.same(violations, [], `${path}: nothing refused`);
      await plain.close();
    }
  });

  t.test('Swagger UI, axe: no serious or critical violation in any state', async (t) => {
    const context = await browser.newContext({ bypassCSP: true }); // for axe's script only; the policy is checked below
    t.teardown(() => context.close());
    const page = await context.newPage();
    t.equal((await page.goto(`${h.url}/docs/interactive`, { timeout: 30_000 }))?.status(), 200, '/docs/interactive: 200');
    const seen = new Map<string, axe.AxeResults>();
    for (const [state, reach] of STATES) {
      await reach(page);
      if (seen.size === 0) await page.addScriptTag({ content: axe.source });
      seen.set(state, await noSeriousViolation(t, page, state));
    }
    // the rules Swagger UI used to break, applied and satisfied where they apply
    const opened = passed(seen.get('an operation expanded') as axe.AxeResults);
    for (const rule of ['color-contrast', 'select-name', 'nested-interactive', 'target-size']) t.ok(opened.includes(rule), `an operation expanded: ${rule} checked and met`);
    t.ok(passed(seen.get('its schemas') as axe.AxeResults).includes('button-name'), 'its schemas: button-name checked and met');
    t.ok(passed(seen.get('"Try it out" on it') as axe.AxeResults).includes('label'), '"Try it out": label checked and met');
  });

  t.test('Swagger UI under its own Content-Security-Policy: every operation rendered, the same states, no violation', async (t) => {
    const context = await browser.newContext();
    t.teardown(() => context.close());
    const page = await context.newPage();
    await page.addInitScript(() => { // an init script runs outside the page's policy
      const violations: string[] = [];
      (window as unknown as { violations: string[] }).violations = violations;
      document.addEventListener('securitypolicyviolation', (e) => violations.push(`${e.violatedDirective} ${e.blockedURI}`));
    });
    const errors: string[] = [];
    page.on('pageerror', (err) => errors.push(String(err)));
    page.on('console', (msg) => {
      if (msg.type() === 'error') errors.push(msg.text());
    });
    const res = await page.goto(`${h.url}/docs/interactive`, { timeout: 30_000 });
    t.equal(res?.headers()['content-security-policy'], DOCS_CSP, 'the page carries its policy');
    t.notMatch(DOCS_CSP, /unsafe-|blob:|https?:|\*/, 'no unsafe-inline or unsafe-eval, no blob:, no other host');
    for (const [, reach] of STATES) await reach(page);

    const rendered = await page.$$eval('.opblock', (els) => els.map((e) => e.id));
    t.same(rendered.sort(), operations.map((op) => `operations-${op.tags[0]}-${op.operationId}`).sort(), `all ${operations.length} operations of the document are rendered`);
    t.ok(await page.locator(`${OPERATION} .json-schema-2020-12-property`).count() > 0, 'the expanded operation shows its schemas');
    t.ok(await page.locator(`${OPERATION} .examples-select-element option`).count() > 1, 'and its examples');
    t.same(await page.evaluate(() => (window as unknown as { violations: string[] }).violations), [], 'no Content-Security-Policy violation');
    t.same(errors, [], 'no script error, nothing refused');
  });
}

if (!existsSync(CHROMIUM)) {
  t.fail(`${CHROMIUM} is missing: the browser test needs Debian's chromium; install it with \`sudo apt-get install -y chromium\` (make test does it when it may)`);
} else {
  await browserTests();
}
