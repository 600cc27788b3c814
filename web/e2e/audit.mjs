// The audit flows in a real headless Chromium against a real cairnd: an
// auditor filters the history, opens an event, reads the entity as of then
// and verifies the chains; a tenant administrator's history never shows
// another tenant's events. Screenshots: test-output/screenshots/flow-*.png.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createTenant, eventually, gql, screenshot, signIn, tokenFor, trackErrors } from './harness.mjs';

export function audit(ctx) {
  const requires = (t, needs) => ctx.requires(t, needs);

  describe('tenant', () => {
    it("never shows another tenant's history", async (t) => {
      if (!requires(t, { query: ['events', 'event'], mutation: ['createTenant', 'createUser', 'createApiToken'] })) return;
      await createTenant(ctx.server, ctx.server.adminToken, 'umbrella', 'Umbrella');
      await createTenant(ctx.server, ctx.server.adminToken, 'hooli', 'Hooli');
      const u = await tokenFor(ctx.server, ctx.server.adminToken, { name: 'Uma at Umbrella', role: 'TENANT_ADMIN', tenantId: 'umbrella' });
      const h = await tokenFor(ctx.server, ctx.server.adminToken, { name: 'Hal at Hooli', role: 'TENANT_ADMIN', tenantId: 'hooli' });
      // Each tenant administrator acts in their own tenant, so each tenant has events of its own.
      await gql(ctx.server, u, 'mutation { createUser(input: { name: "umbrella-insider", role: TENANT_MEMBER, tenantId: "umbrella" }) { user { id } } }');
      await gql(ctx.server, h, 'mutation { createUser(input: { name: "hooli-insider", role: TENANT_MEMBER, tenantId: "hooli" }) { user { id } } }');
      const page = await ctx.browser.newPage();
      const errors = trackErrors(page);
      await signIn(page, ctx.server, u);
      await page.getByRole('navigation', { name: 'main' }).getByRole('link', { name: 'Event history' }).click();
      await page.waitForURL('**/events');
      await page.getByTestId('events').waitFor();
      const shown = await page.getByTestId('events').innerText();
      assert.match(shown, /user\./, 'the tenant administrator sees its own tenant’s events');
      // Every event shown belongs to the tenant: open each and check its metadata.
      const cursors = await page.getByTestId('events').locator('tbody a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
      for (const href of cursors) {
        const e = await gql(ctx.server, ctx.server.adminToken, 'query ($c: Cursor!) { event(cursor: $c) { metadata { tenantId } payload } }', { c: decodeURIComponent(href.split('/').pop()) });
        assert.equal(e.event.metadata.tenantId, 'umbrella', `event ${href} of another tenant is shown`);
        assert.doesNotMatch(JSON.stringify(e.event.payload), /hooli/);
      }
      await page.goto(`${ctx.server.url}/events?tenant=hooli`);
      await page.getByTestId('events').or(page.locator('.state.empty')).first().waitFor();
      assert.doesNotMatch(await page.locator('main').innerText(), /hooli-insider/);
      await screenshot(page, 'flow-tenant-events');
      assert.deepEqual(errors, []);
      await page.close();
    });
  });

  describe('auditor', () => {
    it('filters events, opens one, reads the entity as of then, runs verification', async (t) => {
      if (!requires(t, { query: ['events', 'event', 'entityAsOf', 'verifyChain'], mutation: ['createTenant', 'createUser', 'createApiToken'] })) return;
      await createTenant(ctx.server, ctx.server.adminToken, 'audited', 'Audited Ltd');
      await gql(ctx.server, ctx.server.adminToken, 'mutation { renameTenant(input: { tenantId: "audited", name: "Audited Limited" }) { cursor } }').catch(() => {});
      const token = await tokenFor(ctx.server, ctx.server.adminToken, { name: 'Avery Auditor', role: 'AUDITOR' });
      const page = await ctx.browser.newPage();
      const errors = trackErrors(page);
      await signIn(page, ctx.server, token);
      await page.waitForURL('**/events');
      await page.getByTestId('events').waitFor();
      await screenshot(page, 'flow-auditor-events');
      // Filter by stream: only the tenant's own events remain, and the address keeps the filter.
      await page.getByLabel('Stream ids').fill('tenant-audited');
      await page.getByLabel('Stream ids').press('Enter');
      await page.waitForURL(/stream=tenant-audited/);
      await eventually(async () => {
        const streams = await page.getByTestId('events').locator('tbody tr td:nth-child(3)').allInnerTexts();
        return streams.length > 0 && streams.every((s) => s.trim() === 'tenant-audited');
      }, { what: 'the filtered events' });
      await screenshot(page, 'flow-auditor-events-filtered');
      await page.getByTestId('events').locator('tbody a').first().click();
      await page.getByTestId('event-hash').waitFor();
      assert.match(await page.getByTestId('event-hash').innerText(), /^[0-9a-f]{64}$/);
      await page.getByRole('heading', { name: 'Payload' }).waitFor();
      await screenshot(page, 'flow-auditor-event');
      await page.getByRole('link', { name: 'state right after this event' }).click();
      await page.getByTestId('as-of').waitFor();
      assert.match(await page.getByTestId('as-of').innerText(), /audited/i);
      await screenshot(page, 'flow-auditor-as-of');
      // Following the history: a new event shows up without a reload.
      await page.goto(`${ctx.server.url}/events?streamType=tenant&follow=1`);
      await page.getByText('Waiting for new events that match the filters').waitFor();
      await eventually(() => page.evaluate(() => document.querySelector('.live-live') !== null), { what: 'the live connection' });
      await createTenant(ctx.server, ctx.server.adminToken, 'latecomer', 'Latecomer');
      await page.getByRole('region', { name: 'New events' }).getByText('tenant-latecomer').waitFor({ timeout: 15000 });
      await screenshot(page, 'flow-auditor-follow');
      await page.getByRole('navigation', { name: 'main' }).getByRole('link', { name: 'Chain verification' }).click();
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.getByTestId('verification').getByText('The history is intact.').waitFor({ timeout: 30000 });
      await screenshot(page, 'flow-auditor-verify');
      assert.deepEqual(errors, []);
      await page.close();
    });
  });
}
