// The portal at the sizes users have, on a real cairnd: 50 tenants, 1,000
// nodes, 200 services and 10,000 jobs, all made through the API's own
// commands. Every page of the portal is opened and must render within the
// server's limits: lists page, forms find what they need, no query is
// refused for its cost. Screenshots: test-output/screenshots/scale-*.png.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { gql, repoRoot, screenshot, signIn, trackErrors, useServer } from './harness.mjs';

const sizes = { tenants: 50, nodes: 1000, services: 200, jobs: 10000 };

// The services are files kept by the filestore example plugin (a Python
// program), so that all 200 deploy without agents.
function python() {
  try {
    return execFileSync('sh', ['-c', 'command -v python3'], { encoding: 'utf8' }).trim();
  } catch {
    return '';
  }
}
const py = python();
const store = mkdtempSync(join(tmpdir(), 'cairn-scale-'));
const pluginsFile = join(store, 'plugins.yaml');
writeFileSync(pluginsFile, `exec:\n  - name: filestore\n    command: [${JSON.stringify(py)}, ${JSON.stringify(join(repoRoot, 'examples/plugins/filestore/filestore.py'))}, ${JSON.stringify(store)}]\n`);
const ctx = useServer({ args: py ? ['--plugins', pluginsFile] : [] });

const noteTemplate = `apiVersion: cairn/v1
metadata: {name: note, version: 1.0.0, vendor: Example, description: A file with a greeting}
variables:
  greeting: {type: string, default: hello}
resources:
  - name: note
    plugin: filestore
    type: file
    properties: {name: note.txt, content: "\${var.greeting}"}
`;

/** Runs fn over items, n at a time. */
async function inParallel(n, items, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i], i);
      }
    }),
  );
}

const range = (n) => Array.from({ length: n }, (_, i) => i);
const pad = (i) => String(i).padStart(4, '0');

describe('the portal with 50 tenants, 1,000 nodes, 200 services and 10,000 jobs', () => {
  const made = { nodes: [], services: [], fanOut: '' };
  before(async () => {
    // As automation would: several tokens (the API's quota is per token),
    // and a request the server asks to slow down sent again a moment later.
    const started = Date.now();
    const tokens = [ctx.server.adminToken];
    for (let i = 0; i < 7; i++) {
      const t = await gql(ctx.server, ctx.server.adminToken, 'mutation { createApiToken(input: {}) { token } }');
      tokens.push(t.createApiToken.token);
    }
    let turn = 0;
    const send = async (token, q, v) => {
      for (;;) {
        try {
          return await gql(ctx.server, token, q, v);
        } catch (e) {
          if (!/RATE_LIMITED/.test(e.message)) throw e;
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    };
    const admin = (q, v) => send(tokens[turn++ % tokens.length], q, v);
    await inParallel(8, range(sizes.tenants), (i) => admin('mutation($id: ID!, $n: String!) { createTenant(input: {id: $id, name: $n}) { tenant { id } } }', { id: `t${pad(i)}`, n: `Tenant ${pad(i)}` }));
    await admin('mutation { createLocation(input: {id: "ams-1", name: "Amsterdam 1"}) { location { id } } }');
    await inParallel(16, range(sizes.nodes), async (i) => {
      const jt = await admin('mutation($l: ID) { createJoinToken(input: {locationId: $l, labels: [{key: "rack", value: "r1"}]}) { token } }', { l: i % 2 ? 'ams-1' : null });
      const en = await send('', 'mutation($t: String!, $h: String!) { enrollAgent(input: {joinToken: $t, hostname: $h}) { node { id } } }', { t: jt.createJoinToken.token, h: `node-${pad(i)}` });
      made.nodes[i] = en.enrollAgent.node.id;
    });
    if (py) {
      await admin('mutation($d: String!) { registerTemplate(input: {descriptor: $d}) { template { name } } }', { d: noteTemplate });
      await admin('mutation { publishTemplate(input: {name: "note", version: "1.0.0"}) { template { status } } }');
      await inParallel(8, range(sizes.services), async (i) => {
        const s = await admin('mutation($t: ID!, $n: String!) { createService(input: {tenantId: $t, name: $n, templateName: "note", templateVersion: "1.0.0", variables: {}}) { service { id } } }', {
          t: `t${pad(i % sizes.tenants)}`,
          n: `notes-${pad(i)}`,
        });
        made.services[i] = s.createService.service.id;
      });
    }
    // 10,000 jobs pinned to nodes (queued: no agent runs), and a fan-out
    // over every node's label (failed: none is online to take part).
    await inParallel(16, range(sizes.jobs), (i) =>
      admin('mutation($n: ID!, $c: String!) { submitJob(input: {spec: {kind: SCRIPT, script: {interpreter: "sh", body: "true"}}, target: {nodeId: $n}, commandId: $c}) { job { id } } }', {
        n: made.nodes[i % sizes.nodes],
        c: `scale-${i}`,
      }),
    );
    const fan = await admin('mutation { submitJob(input: {spec: {kind: SCRIPT, script: {interpreter: "sh", body: "uptime"}}, target: {match: "rack=r1", mode: ALL}}) { job { id } } }');
    made.fanOut = fan.submitJob.job.id;
    console.log(`# seeded ${sizes.tenants} tenants, ${sizes.nodes} nodes, ${made.services.length} services, ${sizes.jobs} jobs in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

  it('renders every page, each list in pages and within the server limits', async () => {
    const page = await ctx.browser.newPage();
    const errors = trackErrors(page);
    await signIn(page, ctx.server, ctx.server.adminToken);
    const visit = async (path, shot, ready) => {
      ready ??= 'main table, main .state.empty, main dl';
      await page.goto(`${ctx.server.url}${path}`);
      try {
        await page.locator(ready).first().waitFor({ timeout: 30000 });
      } catch (e) {
        await screenshot(page, `scale-failed-${shot}`);
        throw new Error(`${path} did not render (${ready}); see scale-failed-${shot}.png`, { cause: e });
      }
      const refused = await page.locator('main .state.error, main [role=alert]').count();
      if (refused) throw new Error(`${path} shows an error: ${await page.locator('main .state.error, main [role=alert]').first().innerText()}`);
      await screenshot(page, `scale-${shot}`);
    };
    // Lists: a page at a time, with a way to the next.
    for (const [path, shot] of [
      ['/nodes', 'nodes'],
      ['/jobs', 'jobs'],
      ['/tenants', 'tenants'],
      ['/services', 'services'],
      ['/events', 'events'],
    ]) {
      await visit(path, shot, 'main table');
      const rows = await page.locator('main table tbody tr').count();
      assert.ok(rows > 0 && rows <= 200, `${path} shows ${rows} rows at once`);
      if (path !== '/tenants' || sizes.tenants > rows) {
        await page.getByRole('button', { name: /next|more/i }).first().waitFor({ timeout: 10000 });
      }
    }
    // Names, not ids, in the lists people read.
    await visit('/nodes', 'nodes');
    const first = await page.locator('main table tbody tr').first().innerText();
    assert.match(first, /node-\d{4}/, 'the nodes list shows hostnames');
    assert.ok(!made.nodes.some((id) => first.includes(id)), 'the nodes list shows no ids');
    await visit('/jobs', 'jobs', 'main table');
    const job = await page.locator('main table tbody tr').nth(1).innerText();
    assert.match(job, /node-\d{4}/, 'the jobs list names the node of each job');
    assert.ok(!made.nodes.some((id) => job.includes(id)), 'the jobs list shows no node ids');
    for (const [path, shot, ready] of [
      [`/nodes/${made.nodes[7]}`, 'node'],
      [`/jobs/${made.fanOut}`, 'fan-out', 'main dl'],
      ['/users', 'users'],
      ['/locations', 'locations'],
      ['/locations/ams-1', 'location'],
      ['/cluster', 'cluster'],
      ['/catalog', 'catalog'],
      ['/catalog/register', 'register', 'main form'],
      ['/as-of', 'as-of', 'main form'],
      ['/verify', 'verify', 'main button'],
    ]) {
      await visit(path, shot, ready);
    }
    if (made.services.length) {
      await visit('/catalog/note/1.0.0', 'template', 'main dl, main table');
      await visit(`/services/${made.services[3]}`, 'service', 'main dl, main table');
      await page.locator('main dl').getByText('Tenant 0003').waitFor();
      await visit('/services/new?template=note&version=1.0.0', 'deploy', 'main form');
    }
    // The failed fan-out says why; the whole log verifies within the limits.
    await visit(`/jobs/${made.fanOut}`, 'fan-out', 'main dl');
    await page.getByText('No node matched the target').waitFor();
    await visit('/verify', 'verify', 'main button');
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByTestId('verification').getByText('The history is intact.').waitFor({ timeout: 60000 });
    await screenshot(page, 'scale-verified');
    // The run-a-job form finds any of the 1,000 nodes by its hostname.
    await visit('/jobs/new', 'run-job', 'main form');
    await page.getByLabel('Find a node').fill('node-0999');
    await page.waitForFunction(() => [...document.querySelectorAll('#job-nodeId option')].some((o) => o.textContent.startsWith('node-0999')), null, { timeout: 15000 });
    assert.equal(await page.getByText('The nodes could not be listed.').count(), 0);
    assert.deepEqual(errors, []);
    await page.close();
  });
});
