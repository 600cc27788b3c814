// The operator's and the tenant's flows in a real headless Chromium against
// a real cairnd with real agents: what issue 7 asks to be shown. Each flow
// checks first that the server serves the operations it needs and that the
// binaries it starts exist; a flow whose server side has not landed yet is
// skipped, saying what it waits for. Screenshots: test-output/screenshots/flow-*.png.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { binaries, createTenant, eventually, gql, screenshot, signIn, startAgent, tokenFor, trackErrors } from './harness.mjs';

export function flows(ctx) {
  const requires = (t, needs) => ctx.requires(t, needs);

  describe('operator', () => {
    it('sees a node enroll live, runs a job on it and sees its log lines arrive', async (t) => {
      if (!requires(t, { query: ['nodes', 'node', 'job'], mutation: ['createJoinToken', 'submitJob', 'createUser', 'createApiToken'], subscription: ['nodeChanged', 'jobLog'], bins: [binaries.agent] })) return;
      const token = await tokenFor(ctx.server, ctx.server.adminToken, { name: 'Olga Operator', role: 'OPERATOR' });
      const page = await ctx.browser.newPage();
      const errors = trackErrors(page);
      await signIn(page, ctx.server, token);
      await page.waitForURL('**/nodes');
      const join = await gql(ctx.server, token, 'mutation { createJoinToken(input: { labels: [{ key: "zone", value: "e2e" }] }) { token } }');
      const agent = await startAgent(ctx.server, join.createJoinToken.token, { hostname: 'e2e-node-1' });
      t.after(() => agent.stop());
      // The row appears without a reload, through the nodeChanged subscription.
      const row = page.locator('[data-node="e2e-node-1"]');
      try {
        await row.waitFor({ timeout: 60000 });
        await row.locator('[data-status="ONLINE"]').waitFor({ timeout: 60000 });
      } catch (e) {
        // Say whether the node enrolled at all, and what the page and the agent said.
        await screenshot(page, 'flow-operator-no-node');
        const listed = await gql(ctx.server, token, '{ nodes { edges { node { hostname status } } } }').catch((x) => x.message);
        throw new Error(`e2e-node-1 did not appear online at ${page.url()}; the API lists ${JSON.stringify(listed)}\npage errors: ${JSON.stringify(errors)}\nagent:\n${agent.output()}`, { cause: e });
      }
      await screenshot(page, 'flow-operator-nodes');
      await row.getByRole('link', { name: 'e2e-node-1' }).click();
      await page.getByRole('heading', { name: /e2e-node-1/ }).waitFor();
      await screenshot(page, 'flow-operator-node');
      await page.getByRole('link', { name: 'Run a job…' }).click();
      // The node list of the form is one the server serves (a page of 500
      // within the complexity limit), with the node by its name.
      await page.waitForFunction(() => [...document.querySelectorAll('#job-nodeId option')].some((o) => o.textContent.startsWith('e2e-node-1')), null, { timeout: 30000 });
      assert.equal(await page.getByText('The nodes could not be listed.').count(), 0);
      await page.getByLabel(/^Script/).fill('echo first line; sleep 3; echo second line; sleep 3; echo last line');
      await page.getByRole('button', { name: 'Run' }).click();
      await page.waitForURL(/\/jobs\/[^/]+$/);
      const log = page.getByTestId('job-log');
      // Lines arrive while the job runs, before it has finished.
      await log.getByText('first line').waitFor({ timeout: 30000 });
      const early = await log.innerText();
      assert.doesNotMatch(early, /last line/, 'the first line arrived before the job ended');
      await log.getByText('last line').waitFor({ timeout: 30000 });
      await page.locator('[data-status="SUCCEEDED"]').first().waitFor({ timeout: 30000 });
      await screenshot(page, 'flow-operator-job');
      assert.deepEqual(errors, []);
      await page.close();
    });
  });

  describe('operator, fan-out', () => {
    it('runs a job on every node of a label and reads their output together, each line tagged with its node', async (t) => {
      if (!requires(t, { query: ['job'], mutation: ['createJoinToken', 'submitJob'], subscription: ['jobLog'], bins: [binaries.agent] })) return;
      const admin = ctx.server.adminToken;
      const agents = [];
      t.after(() => Promise.all(agents.map((a) => a.stop())));
      for (const hostname of ['fan-1', 'fan-2']) {
        const join = await gql(ctx.server, admin, 'mutation { createJoinToken(input: { labels: [{ key: "pool", value: "fan" }] }) { token } }');
        agents.push(await startAgent(ctx.server, join.createJoinToken.token, { hostname }));
      }
      await eventually(
        async () => {
          const d = await gql(ctx.server, admin, '{ nodes(filter: { labels: [{ key: "pool", value: "fan" }], status: [ONLINE] }) { edges { node { id } } } }');
          return d.nodes.edges.length === 2;
        },
        { timeout: 60000, what: 'both fan-out agents online' },
      );
      const sub = await gql(
        ctx.server,
        admin,
        'mutation { submitJob(input: { spec: { kind: SCRIPT, script: { interpreter: "sh", body: "echo first line; sleep 1; echo second line" } }, target: { selector: [{ key: "pool", value: "fan" }], mode: ALL } }) { job { id } } }',
      );
      const page = await ctx.browser.newPage();
      const errors = trackErrors(page);
      await signIn(page, ctx.server, admin);
      await page.goto(`${ctx.server.url}/jobs/${sub.submitJob.job.id}`);
      const log = page.getByTestId('fan-out-log');
      for (const line of ['[fan-1] first line', '[fan-2] first line', '[fan-1] second line', '[fan-2] second line']) {
        await log.getByText(line, { exact: false }).waitFor({ timeout: 60000 });
      }
      await screenshot(page, 'flow-operator-fan-out');
      assert.deepEqual(errors, []);
      await page.close();
    });
  });

  // The agent's only file root: the template's directory is made in it.
  const fileRoot = mkdtempSync(join(tmpdir(), 'cairn-e2e-files-'));
  after(() => rmSync(fileRoot, { recursive: true, force: true }));
  const descriptor = JSON.stringify({
    apiVersion: 'cairn/v1',
    metadata: { name: 'e2e-site', version: '1.0.0', category: 'web', vendor: 'e2e', description: 'A directory with a page in it' },
    variables: {
      site: { type: 'string', required: true, description: 'Site name', validation: { pattern: '^[a-z][a-z0-9-]*$', maxLength: 30 } },
      copies: { type: 'integer', default: 1, validation: { minimum: 1, maximum: 3 } },
      secret: { type: 'string', sensitive: true, default: 'not-so-secret' },
    },
    resources: [{ name: 'root', plugin: 'agent', type: 'directory', properties: { path: `${fileRoot}/\${var.site}` }, placement: { labels: { zone: 'e2e-services' } } }],
    outputs: { path: { value: '${resource.root.outputs.path}' } },
  });

  let published;

  /** Registers and publishes the test's template once. */
  async function publishTemplate() {
    if (!published) {
      await gql(ctx.server, ctx.server.adminToken, 'mutation ($d: String!) { registerTemplate(input: { descriptor: $d }) { template { id } } }', { d: descriptor });
      await gql(ctx.server, ctx.server.adminToken, 'mutation { publishTemplate(input: { name: "e2e-site", version: "1.0.0" }) { template { id } } }');
      published = true;
    }
  }

  describe('tenant', () => {
    it('deploys a template through the form, sees it reach running live, stops and removes it', async (t) => {
      if (
        !requires(t, {
          query: ['templates', 'template', 'services', 'service'],
          mutation: ['registerTemplate', 'publishTemplate', 'createService', 'stopService', 'removeService', 'createJoinToken'],
          subscription: ['serviceChanged'],
          bins: [binaries.agent],
        })
      )
        return;
      // A zone of its own: the operator flow's node, stopped by now, may still be listed online.
      const invite = await gql(ctx.server, ctx.server.adminToken, 'mutation { createJoinToken(input: { labels: [{ key: "zone", value: "e2e-services" }] }) { token } }');
      const agent = await startAgent(ctx.server, invite.createJoinToken.token, { hostname: 'e2e-node-2', fileRoot });
      t.after(() => agent.stop());
      await publishTemplate();
      await createTenant(ctx.server, ctx.server.adminToken, 'acme', 'Acme');
      const token = await tokenFor(ctx.server, ctx.server.adminToken, { name: 'Ada at Acme', role: 'TENANT_MEMBER', tenantId: 'acme' });
      const page = await ctx.browser.newPage();
      const errors = trackErrors(page);
      await signIn(page, ctx.server, token);
      await page.getByRole('link', { name: 'Catalog' }).click();
      await page.getByRole('link', { name: 'e2e-site' }).click();
      await page.getByRole('link', { name: 'Deploy…' }).click();
      await page.getByLabel('Service name').fill('shop');
      await page.getByLabel(/^site\b/).fill('Not Valid');
      await page.getByRole('button', { name: 'Deploy' }).click();
      await page.getByText('must match the pattern').waitFor();
      assert.equal(await page.getByLabel(/^secret\b/).getAttribute('type'), 'password');
      await page.getByLabel(/^site\b/).fill('shop');
      await screenshot(page, 'flow-tenant-deploy');
      await page.getByRole('button', { name: 'Deploy' }).click();
      await page.waitForURL(/\/services\/[^/]+$/);
      // No reload from here on: the status follows the serviceChanged subscription.
      const serviceId = decodeURIComponent(page.url().split('/').pop());
      // On a timeout, say where the service got to and what the agent said.
      const reach = async (status, timeout) => {
        try {
          await page.locator(`h1 [data-status="${status}"]`).waitFor({ timeout });
        } catch (e) {
          await screenshot(page, `flow-tenant-not-${status.toLowerCase()}`);
          const s = await gql(ctx.server, ctx.server.adminToken, 'query ($id: ID!) { service(id: $id) { status failedIn cause resources { status error } } }', { id: serviceId }).catch((x) => x.message);
          throw new Error(`the service did not reach ${status} at ${page.url()}: ${JSON.stringify(s)}\npage errors: ${JSON.stringify(errors)}\nagent:\n${agent.output()}`, { cause: e });
        }
      };
      await reach('REGISTERED', 90000);
      assert.ok(existsSync(join(fileRoot, 'shop')), "the agent made the service's directory on its node");
      await page.getByRole('button', { name: 'Start' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Start' }).click();
      await reach('RUNNING', 60000);
      await screenshot(page, 'flow-tenant-service-running');
      await page.getByRole('button', { name: 'Stop' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Stop' }).click();
      await reach('STOPPED', 60000);
      await page.getByRole('button', { name: 'Remove' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
      await reach('REMOVED', 60000);
      assert.ok(!existsSync(join(fileRoot, 'shop')), 'removing the service removed its directory');
      await screenshot(page, 'flow-tenant-service-removed');
      assert.deepEqual(errors, []);
      await page.close();
    });

    it("never shows another tenant's services", async (t) => {
      if (!requires(t, { query: ['services', 'service'], mutation: ['createService', 'registerTemplate', 'publishTemplate'] })) return;
      await createTenant(ctx.server, ctx.server.adminToken, 'globex', 'Globex').catch(() => {});
      await createTenant(ctx.server, ctx.server.adminToken, 'initech', 'Initech').catch(() => {});
      const g = await tokenFor(ctx.server, ctx.server.adminToken, { name: 'Gus at Globex', role: 'TENANT_MEMBER', tenantId: 'globex' });
      const i = await tokenFor(ctx.server, ctx.server.adminToken, { name: 'Ivy at Initech', role: 'TENANT_MEMBER', tenantId: 'initech' });
      await publishTemplate();
      const created = await gql(
        ctx.server,
        i,
        'mutation { createService(input: { name: "initech-private", templateName: "e2e-site", templateVersion: "1.0.0", variables: { site: "initech" } }) { service { id } } }',
      );
      const hidden = created.createService.service.id;
      const page = await ctx.browser.newPage();
      await signIn(page, ctx.server, g);
      await page.goto(`${ctx.server.url}/services?removed=1`);
      await page.getByTestId('services').or(page.locator('.state.empty')).first().waitFor();
      assert.equal(await page.getByText('initech-private').count(), 0, "another tenant's service is listed");
      await page.goto(`${ctx.server.url}/services/${encodeURIComponent(hidden)}`);
      await page.getByRole('heading', { name: 'Service not found' }).waitFor();
      assert.equal(await page.getByText('initech-private').count(), 0);
      await screenshot(page, 'flow-tenant-isolation');
      await page.close();
    });
  });
}
