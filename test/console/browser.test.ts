// The console in a real browser (playwright-core driving Debian's Chromium) against the real
// service: catalog -> tool page -> a call from the generated form; the editor's diagnostics from
// the real screening on the right line; fix, run examples, create; the calls arrive in Live.
// And the documented login: the admin token typed into the login form lands on the console.
// Each page is saved as a screenshot under artifacts/console/.

import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cleanupConsole,
  ensureConsoleBuilt,
  launchBrowser,
  putTool,
  screenshot,
  startConsoleService,
  toolContext,
  until,
  UPPER,
  type Running,
} from './helpers.js';

let run: Running;
let browser: Browser;

const EVAL_SOURCE =
  '// Evaluates the text.\nexport async function execute(input: { text: string }) {\n  const out = eval(input.text);\n  return { text: String(out) };\n}\n';

beforeAll(async () => {
  await ensureConsoleBuilt();
  run = await startConsoleService();
  await putTool(run.client, toolContext('b-shout', UPPER, { description: 'Upper-cases a text.' }));
  await putTool(run.client, toolContext('b-evil', EVAL_SOURCE));
  await until(async () => {
    const res = await fetch(`${run.adminUrl}/api/catalog`);
    const body = (await res.json()) as { tools: Array<{ name: string; state: string }> };
    return body.tools.some((t) => t.name === 'b-shout' && t.state === 'runnable') &&
      body.tools.some((t) => t.name === 'b-evil')
      ? true
      : undefined;
  }, 'both tools in the catalog');
  browser = await launchBrowser();
}, 120_000);

afterAll(cleanupConsole, 60_000);

async function open(path: string, ready: string): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(`${run.adminUrl}/${path}`);
  await page.waitForSelector(`body[data-ready="${ready}"]`);
  expect(errors).toEqual([]);
  return page;
}

describe('web console in Chromium', () => {
  it('opens the catalog, opens a tool, runs an example and calls the tool from the generated form', async () => {
    const page = await open('#/catalog', 'catalog');
    const shout = page.locator('tr[data-tool="b-shout"]');
    await expect(shout.getAttribute('data-state')).resolves.toBe('runnable');
    const evil = page.locator('tr[data-tool="b-evil"]');
    await expect(evil.getAttribute('data-state')).resolves.toBe('rejected');
    await expect(evil.locator('.issues li').first().textContent()).resolves.toBe(
      '3:15 screen.eval — eval is not allowed: eval(input.text)',
    );
    await screenshot(page, '1-catalog');

    await shout.locator('a').first().click();
    await page.waitForSelector('body[data-ready="tool"]');
    await expect(page.locator('h1').textContent()).resolves.toBe('b-shout');
    await page.locator('button[data-example="0"]').click();
    await page.locator('.example-result .badge').waitFor();
    await expect(page.locator('.example-result .badge').textContent()).resolves.toBe('passed');

    await page.fill('input[name="text"]', 'hello console');
    await page.click('form.call button[type="submit"]');
    const output = page.locator('.call-result pre.output');
    await output.waitFor({ timeout: 30_000 });
    expect(JSON.parse((await output.textContent()) as string)).toEqual({ text: 'HELLO CONSOLE' });
    await expect(page.locator('.call-result .badge').textContent()).resolves.toBe('success');
    await page.locator('table.recent tbody tr').first().waitFor({ timeout: 10_000 });
    await screenshot(page, '2-tool');

    // The inspector shows the whole call.
    await page.locator('.call-result a').click();
    await page.waitForSelector('body[data-ready="inspect"]');
    await page.locator('section.timeline').waitFor();
    await expect(page.locator('h2').first().textContent()).resolves.toMatch(/^[0-9a-f-]{36}$/);
    await screenshot(page, '5-inspector');
    await page.close();
  });

  it(
    'shows the eval diagnostic on its line, then runs, creates and watches the fixed tool in Live',
    { timeout: 120_000 },
    async () => {
      const live = await open('#/live', 'live');
      await live.waitForSelector('body[data-live="connected"]');

      const page = await open('#/editor', 'editor');
      const definition = JSON.parse((await page.inputValue('textarea[name="definition"]')) as string) as Record<
        string,
        unknown
      >;
      await page.fill('textarea[name="definition"]', JSON.stringify({ ...definition, name: 'b-made' }, null, 2));
      await page.click('.cm-content');
      await page.keyboard.press('Control+A');
      await page.keyboard.insertText(EVAL_SOURCE);
      const diagnostic = page.locator('.diagnostics li[data-code="screen.eval"]');
      await diagnostic.waitFor({ timeout: 10_000 });
      await expect(diagnostic.getAttribute('data-line')).resolves.toBe('3');
      await expect(diagnostic.textContent()).resolves.toBe('3:15 screen.eval — eval is not allowed: eval(input.text)');
      // The squiggle sits on line 3, under `eval`.
      const squiggle = page.locator('.cm-content .cm-line').nth(2).locator('.cm-lintRange-error');
      await squiggle.waitFor();
      await expect(squiggle.textContent()).resolves.toBe('eval');
      await screenshot(page, '3-editor-diagnostic');

      await page.click('.cm-content');
      await page.keyboard.press('Control+A');
      await page.keyboard.insertText(UPPER);
      await page.waitForFunction(() => {
        // Runs in the page (the CSP forbids string evaluation, so a function it is).
        const doc = (
          globalThis as unknown as { document: { querySelector(s: string): { textContent: string | null } | null } }
        ).document;
        return (
          doc.querySelector('.diagnostics li.error') === null &&
          (doc.querySelector('.bar .ok')?.textContent ?? '').startsWith('no problems')
        );
      });
      await page.click('text=Run examples');
      await page.locator('.results .example').first().waitFor({ timeout: 30_000 });
      await expect(page.locator('.results .example').first().getAttribute('data-ok')).resolves.toBe('true');

      await page.click('button.primary');
      const response = page.locator('.create-response');
      await response.waitFor({ timeout: 60_000 });
      await expect(response.getAttribute('data-status')).resolves.toBe('created');
      await screenshot(page, '3-editor-created');

      // Call the new tool from its page; the calls arrive in Live.
      await page.goto(`${run.adminUrl}/#/tool/b-made`);
      await page.waitForSelector('body[data-ready="tool"]');
      for (const text of ['one', 'two']) {
        await page.fill('input[name="text"]', text);
        await page.click('form.call button[type="submit"]');
        // the previous call's output stays on the page until this call's answer replaces it
        const output = page.locator('.call-result pre.output');
        await until(
          async () =>
            (await output.count()) > 0 && (await output.textContent())?.includes(text.toUpperCase()) ? true : undefined,
          `the output of the call with ${text}`,
        );
      }
      const rows = live.locator('table.live tbody tr[data-tool="b-made"][data-status="success"]');
      await until(async () => ((await rows.count()) >= 2 ? true : undefined), 'two b-made calls in Live');
      await live.fill('input[name="tool"]', 'b-made');
      await until(
        async () => ((await live.locator('table.live tbody tr').count()) === 2 ? true : undefined),
        'the tool filter to leave only b-made',
      );
      await live.waitForTimeout(1100); // let the once-a-second charts draw for the screenshot
      await screenshot(live, '4-live');
    },
  );
});

describe('console login in Chromium (admin token set)', () => {
  const TOKEN = 'browser-login-admin-token-0123456789';

  it('types the token into the login form and lands on the console; a wrong token stays on the form', async () => {
    const guarded = await startConsoleService({ adminToken: TOKEN });
    await putTool(guarded.client, toolContext('l-shout', UPPER, { description: 'Upper-cases a text.' }));
    const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    const origins: string[] = [];
    page.on('request', (request) => {
      if (request.method() === 'POST' && request.url().endsWith('/login'))
        origins.push(request.headers()['origin'] ?? '(none)');
    });
    await page.goto(`${guarded.adminUrl}/`);
    await page.waitForSelector('form[action="/login"]');

    await page.fill('input[name="token"]', 'not-the-admin-token-at-all');
    await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
    await expect(page.locator('.err').textContent()).resolves.toBe('That is not the admin token.');

    await page.fill('input[name="token"]', TOKEN);
    await Promise.all([page.waitForNavigation(), page.click('button[type="submit"]')]);
    await page.waitForSelector('body[data-ready="catalog"]');
    await page.locator('tr[data-tool="l-shout"]').waitFor({ timeout: 30_000 });
    // Chromium sent the console's real Origin (not `null`) both times: the guard let the form through.
    expect(origins).toEqual([new URL(guarded.adminUrl).origin, new URL(guarded.adminUrl).origin]);
    await screenshot(page, '6-after-login');
    await page.screenshot({ path: '/tmp/console-after-login.png', fullPage: true });
    await page.close();
  });
});
