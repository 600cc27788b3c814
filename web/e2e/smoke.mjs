// The portal as cairnd serves it, in a real headless Chromium: it loads, a
// visitor without a token lands on the sign-in page (also from a deep link,
// which it returns to after signing in), and the page is usable by keyboard.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { screenshot, signIn, trackErrors } from './harness.mjs';

export function smoke(ctx) {
  describe('the portal served by cairnd', () => {
    it('serves the app at / with revalidation, and its assets for good', async () => {
      const res = await fetch(`${ctx.server.url}/`);
      assert.equal(res.status, 200, 'GET / (is the portal built? make web)');
      assert.equal(res.headers.get('cache-control'), 'no-cache');
      const html = await res.text();
      assert.match(html, /<div id="root">/);
      const asset = html.match(/src="(\/assets\/[^"]+\.js)"/)?.[1];
      assert.ok(asset, 'index.html loads a script from /assets/');
      const js = await fetch(`${ctx.server.url}${asset}`);
      assert.equal(js.status, 200);
      assert.match(js.headers.get('cache-control') ?? '', /immutable/);
      assert.equal((await fetch(`${ctx.server.url}/assets/missing.js`)).status, 404);
      assert.equal((await fetch(`${ctx.server.url}/healthz`)).status, 200, 'the server’s own routes still win');
    });

    it('sends a visitor without a token to sign in, keeping the page they asked for', async () => {
      const page = await ctx.browser.newPage();
      const errors = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`${ctx.server.url}/nodes/n1?range=6h`);
      await page.getByRole('heading', { name: 'Sign in to Cairn' }).waitFor();
      const url = new URL(page.url());
      assert.equal(url.pathname, '/sign-in');
      assert.equal(url.searchParams.get('next'), '/nodes/n1?range=6h');
      // The token field has focus and a label; an empty submission is explained.
      const field = page.getByLabel('API token');
      assert.equal(await field.evaluate((el) => el === document.activeElement), true);
      await page.keyboard.press('Enter');
      await page.getByText('Paste an API token.').waitFor();
      assert.equal(await field.getAttribute('aria-invalid'), 'true');
      await screenshot(page, '01-sign-in');
      assert.deepEqual(errors, []);
      await page.close();
    });

    it('opens every page it offers an administrator without an error', async () => {
      const page = await ctx.browser.newPage();
      const errors = trackErrors(page);
      await signIn(page, ctx.server, ctx.server.adminToken);
      const nav = page.getByRole('navigation', { name: 'main' });
      const links = await nav.getByRole('link').evaluateAll((as) => as.map((a) => [a.textContent, a.getAttribute('href')]));
      assert.ok(links.length >= 3, `the navigation offers ${JSON.stringify(links)}`);
      for (const [label, href] of links) {
        await nav.getByRole('link', { name: label, exact: true }).click();
        await page.waitForURL(`**${href}`);
        await page.getByRole('heading', { level: 1 }).waitFor();
        // Wait for the page's data (or its form) rather than its loading state.
        await page.locator('main table:visible, main .state.empty:visible, main form:visible, main .notice:visible').first().waitFor();
        await page.locator('main .state.loading').first().waitFor({ state: 'detached' });
        const problems = await page.locator('main .notice.error, main .notice.forbidden').allInnerTexts();
        assert.deepEqual(problems, [], `${href} shows an error`);
      }
      assert.deepEqual(errors, []);
      await page.close();
    });
  });
}
