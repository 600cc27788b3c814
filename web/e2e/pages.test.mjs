// Every page of the portal in a real headless Chromium, against a stand-in
// API with fixed answers (fixture-api.mjs): each role's pages render, forms
// are generated and checked, actions send the right commands, and the
// sign-in and not-allowed paths behave. Screenshots of the main pages go to
// test-output/screenshots/pages-*.png.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startFixtureApi } from './fixture-api.mjs';
import { openBrowser, screenshot } from './harness.mjs';

let api;
let browser;

before(async () => {
  api = await startFixtureApi();
  browser = await openBrowser();
});
after(async () => {
  await browser?.close();
  await api?.stop();
});

async function signedIn(token, path = '/') {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${api.url}/sign-in`);
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('viewer').waitFor();
  if (path !== '/') await page.goto(`${api.url}${path}`);
  page.errors = errors;
  return page;
}

describe('operator', () => {
  it('lands on the nodes, filters them through the address, opens one', async () => {
    const page = await signedIn('op');
    assert.equal(new URL(page.url()).pathname, '/nodes');
    const rows = page.getByTestId('nodes').locator('tbody tr');
    await rows.first().waitFor();
    assert.equal(await rows.count(), 3);
    await screenshot(page, 'pages-operator-nodes');
    await page.getByRole('checkbox', { name: 'online' }).check();
    await page.waitForURL(/status=ONLINE/);
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=nodes] tbody tr').length === 1);
    await page.getByRole('link', { name: 'edge-01' }).click();
    await page.getByRole('heading', { name: /edge-01/ }).waitFor();
    await page.getByText('AMD EPYC 7313P').waitFor();
    const cpu = page.getByRole('img', { name: /^CPU/ });
    await cpu.waitFor();
    assert.equal(await page.getByRole('button', { name: 'Drain' }).count(), 1);
    // Readable axes: round values with their unit, several times of day.
    const ticks = await cpu.locator('text.tick').allTextContents();
    assert.ok(ticks.includes('100 %') && ticks.includes('50 %'), `CPU ticks ${ticks}`);
    assert.ok(ticks.filter((t) => /\d\d:\d\d/.test(t)).length >= 3, `time ticks ${ticks}`);
    // Hovering shows the exact value and time of the nearest sample.
    const box = await cpu.boundingBox();
    await page.mouse.move(box.x + box.width * 0.6, box.y + box.height / 2);
    const tip = page.locator('.chart-tip').first();
    await tip.waitFor();
    assert.match(await tip.innerText(), /cpu: \d+ %/);
    await screenshot(page, 'pages-operator-node');
    // A shared link shows the same view.
    await page.getByRole('button', { name: '24h' }).click();
    await page.waitForURL(/range=24h/);
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  it('checks the run-a-job form and submits a script', async () => {
    const page = await signedIn('op', '/jobs/new?node=n1');
    await page.getByRole('button', { name: 'Run' }).click();
    await page.getByText('Write the script.').waitFor();
    assert.equal(await page.getByLabel(/^Script/).evaluate((el) => el === document.activeElement), true);
    await page.getByLabel(/^Script/).fill('echo hello');
    await page.getByRole('button', { name: 'Run' }).click();
    await page.waitForURL(/\/jobs\/j-2$/);
    const call = api.calls.find((c) => c.op === 'SubmitJob');
    assert.deepEqual(call.vars.input.spec, { kind: 'SCRIPT', script: { interpreter: 'sh', body: 'echo hello' } });
    assert.deepEqual(call.vars.input.target, { nodeId: 'n1' });
    // A set of nodes: a location and a set-based selector, every one of them.
    await page.goto(`${api.url}/jobs/new`);
    await page.getByRole('radio', { name: 'Nodes by location or labels' }).check();
    await page.getByLabel('Location', { exact: true }).selectOption('ams1');
    await page.getByLabel(/^Label selector/).fill('zone in (a,b), !gpu');
    await page.getByRole('radio', { name: 'All of them' }).check();
    await page.getByLabel(/^Script/).fill('uptime');
    await page.getByRole('button', { name: 'Run' }).click();
    await page.waitForURL(/\/jobs\/j-2$/);
    const sets = api.calls.filter((c) => c.op === 'SubmitJob');
    assert.deepEqual(sets[sets.length - 1].vars.input.target, { match: 'zone in (a,b), !gpu', location: 'ams1', mode: 'ALL', maxParallel: 0 });
    assert.ok(call.vars.input.commandId, 'a command id makes the submission idempotent');
    await page.getByTestId('job-log').waitFor();
    await screenshot(page, 'pages-operator-job');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  it('shows jobs, tenants, users, locations and the catalog', async () => {
    const page = await signedIn('op');
    for (const [path, heading, shot] of [
      ['/jobs', 'Jobs', 'pages-operator-jobs'],
      ['/tenants', 'Tenants', 'pages-operator-tenants'],
      ['/users', 'Users', 'pages-operator-users'],
      ['/locations', 'Locations', 'pages-operator-locations'],
      ['/cluster', 'Cluster', 'pages-operator-cluster'],
      ['/catalog', 'Catalog', 'pages-operator-catalog'],
      ['/catalog/webapp/1.2.0', 'webapp', 'pages-operator-template'],
    ]) {
      await page.getByRole('navigation', { name: 'main' }).getByRole('link', { name: heading === 'webapp' ? 'Catalog' : heading }).click();
      if (heading === 'webapp') await page.getByRole('link', { name: 'webapp' }).first().click();
      await page.waitForURL(`**${path}`);
      await page.getByRole('heading', { level: 1, name: new RegExp(heading) }).waitFor();
      await page.locator('main table, main .state.empty').first().waitFor();
      await screenshot(page, shot);
    }
    // The cluster page names each replica, what it owns and which is gone.
    await page.goto(`${api.url}/cluster`);
    const replicas = page.getByTestId('replica');
    await replicas.first().waitFor();
    assert.equal(await replicas.count(), 2);
    assert.match(await replicas.first().innerText(), /dispatch, orchestrator/);
    assert.match(await replicas.nth(1).innerText(), /Gone/i);
    // A location shows its capacity, its nodes by fill and what runs there.
    await page.goto(`${api.url}/locations`);
    await page.getByRole('link', { name: 'Amsterdam 1' }).click();
    await page.waitForURL('**/locations/ams1');
    await page.getByRole('heading', { level: 1, name: /Amsterdam 1/ }).waitFor();
    await page.getByRole('img', { name: /Nodes by fill: edge-01 75 %, edge-02 6 %/ }).waitFor();
    assert.match(await page.getByLabel('capacity').innerText(), /20\.5 of 64 CPU/);
    assert.equal(await page.locator('main table tbody tr').count(), 2);
    await screenshot(page, 'pages-operator-location');
    await page.getByText('Reserve per node…').click();
    await page.getByLabel('Memory (GiB)').fill('4');
    await page.getByRole('button', { name: 'Set reserve' }).click();
    await page.waitForFunction(() => true);
    const reserve = await (async () => {
      for (let i = 0; i < 50; i++) {
        const c = api.calls.find((x) => x.op === 'SetLocationReserve');
        if (c) return c;
        await new Promise((r) => setTimeout(r, 50));
      }
      return null;
    })();
    assert.deepEqual(reserve?.vars.input.reserve, { cpu: 1, memoryBytes: 4 * 2 ** 30, diskBytes: 0 });
    // Operators read users but not tokens.
    await page.goto(`${api.url}/users`);
    await page.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
    assert.equal(await page.getByRole('heading', { name: /API tokens/ }).count(), 0);
    assert.deepEqual(page.errors, []);
    await page.close();
  });
});

describe('tenant', () => {
  it('deploys through a form generated from the variables', async () => {
    const page = await signedIn('acme');
    assert.equal(new URL(page.url()).pathname, '/services');
    await page.goto(`${api.url}/services/new?template=webapp&version=1.2.0`);
    await page.getByLabel('Service name').waitFor();
    // Types, defaults and masking come from the descriptor.
    assert.equal(await page.getByLabel('replicas').inputValue(), '2');
    assert.equal(await page.getByLabel('replicas').getAttribute('type'), 'number');
    assert.equal(await page.getByLabel('tls').isChecked(), true);
    assert.equal(await page.getByLabel('admin_password').getAttribute('type'), 'password');
    await page.getByText('Must be at least 3 characters; at most 63 characters; matches ^[a-z0-9.-]+$.').waitFor();
    // A flavor fills in its values.
    await page.getByLabel('Flavor').selectOption('ha');
    assert.equal(await page.getByLabel('replicas').inputValue(), '3');
    // Invalid input is explained at each field, in the server's words.
    await page.getByLabel('Service name').fill('shop');
    await page.getByLabel('domain').fill('Shop!');
    await page.getByLabel('replicas').fill('9');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await page.getByText('must match the pattern "^[a-z0-9.-]+$"').waitFor();
    await page.getByText('must be at most 5').waitFor();
    await page.getByText('is required').waitFor();
    await screenshot(page, 'pages-tenant-deploy-invalid');
    // The server's refusal lands on the field it names.
    await page.getByLabel('domain').fill('taken.example.test');
    await page.getByLabel('replicas').fill('3');
    await page.getByLabel('admin_password').fill('correct horse');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await page.getByText('is already used by another service').waitFor();
    await page.getByLabel('domain').fill('shop.example.test');
    await page.getByRole('button', { name: 'Deploy' }).click();
    await page.waitForURL(/\/services\/s-1$/);
    const call = api.calls.filter((c) => c.op === 'CreateService').at(-1);
    assert.deepEqual(call.vars.input.variables, { domain: 'shop.example.test', replicas: 3, size: 'large', tls: true, admin_password: 'correct horse' });
    assert.equal(call.vars.input.flavor, 'ha');
    assert.equal(call.vars.input.tenantId, undefined, 'a tenant deploys for its own tenant');
    await page.getByTestId('resources').waitFor();
    await screenshot(page, 'pages-tenant-service');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  it('stops a service after confirming', async () => {
    const page = await signedIn('acme', '/services/s-1');
    await page.getByRole('button', { name: 'Stop' }).click();
    const dialog = page.getByRole('dialog', { name: 'Stop shop?' });
    await dialog.waitFor();
    await screenshot(page, 'pages-tenant-confirm-stop');
    await dialog.getByRole('button', { name: 'Stop' }).click();
    await dialog.waitFor({ state: 'hidden' });
    assert.equal(api.calls.filter((c) => c.op === 'StopService').at(-1)?.vars.input.serviceId, 's-1');
    await page.close();
  });

  it('plans an update, reads the plan, and applies it after confirming', async () => {
    const page = await signedIn('acme', '/services/s-1');
    assert.equal(await page.getByTestId('blueprint').innerText(), 'shop-prod');
    assert.match(await page.getByTestId('health').innerText(), /check http-ok fails: answered 503/);
    assert.match(await page.getByTestId('desired').innerText(), /running — webapp 1\.2\.0, revision 2/);
    assert.match(await page.getByTestId('observed').innerText(), /1 failing health check/);
    // Resources by their names in the descriptor, ids on hover.
    const resources = await page.getByTestId('resources').innerText();
    assert.match(resources, /site-root/);
    assert.doesNotMatch(resources, /s-1\.dir/);
    // The history, newest first.
    const rows = page.getByTestId('events').locator('tbody tr');
    await rows.first().waitFor();
    assert.match(await rows.first().innerText(), /service\.started/);
    assert.match(await rows.last().innerText(), /service\.registration_requested/);
    await page.getByRole('button', { name: 'Update…' }).click();
    await page.getByLabel('Variables to change').fill('{"replicas": 3}');
    await page.getByRole('button', { name: 'Plan the update' }).click();
    const plan = page.getByTestId('update-plan');
    await plan.waitFor();
    const text = await plan.innerText();
    assert.match(text, /1 to update in place/);
    assert.match(text, /app\[0\]/);
    assert.match(text, /env\.REPLICAS/);
    assert.doesNotMatch(text, /proxy/, 'resources kept are not listed');
    await screenshot(page, 'pages-tenant-update-plan');
    await page.getByRole('button', { name: 'Apply the update' }).click();
    const dialog = page.getByRole('dialog', { name: 'Update shop to revision 3?' });
    await dialog.getByRole('button', { name: 'Apply the update' }).click();
    await dialog.waitFor({ state: 'hidden' });
    const call = api.calls.filter((c) => c.op === 'UpdateService').at(-1);
    assert.deepEqual(call?.vars.input.variables, { replicas: 3 });
    assert.equal(call?.vars.input.serviceId, 's-1');
    assert.deepEqual(page.errors, []);
    await page.close();
  });

  it('sees neither the grid nor the audit tools', async () => {
    const page = await signedIn('acme', '/nodes');
    await page.getByRole('heading', { name: 'Not allowed' }).waitFor();
    const nav = await page.getByRole('navigation', { name: 'main' }).innerText();
    assert.doesNotMatch(nav, /Nodes|Jobs|Event history|Chain verification/);
    await page.goto(`${api.url}/services`);
    await page.getByTestId('services').waitFor();
    assert.equal(await page.getByTestId('services').locator('tbody tr').count(), 2);
    await screenshot(page, 'pages-tenant-services');
    await page.close();
  });
});

describe('auditor', () => {
  it('filters events, opens one, reads an entity as of then, verifies the chains', async () => {
    const page = await signedIn('aud');
    assert.equal(new URL(page.url()).pathname, '/events');
    await page.getByTestId('events').waitFor();
    await page.getByLabel('Event types').fill('service.registered, service.started');
    await page.getByLabel('Event types').press('Enter');
    await page.waitForURL(/type=service.registered&type=service.started/);
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=events] tbody tr').length === 2);
    // Actors read as names; the id is one hover away.
    const actor = page.getByTestId('events').getByText('Olga Operator').first();
    await actor.waitFor();
    assert.equal(await actor.getAttribute('title'), 'u-op');
    assert.equal(await page.getByTestId('events').getByText('u-op', { exact: true }).count(), 0);
    await screenshot(page, 'pages-auditor-events');
    await page.getByRole('link', { name: 'service.registered' }).click();
    await page.getByTestId('event-hash').waitFor();
    await screenshot(page, 'pages-auditor-event');
    await page.getByRole('link', { name: 'state right after this event' }).click();
    await page.getByTestId('as-of').waitFor();
    await screenshot(page, 'pages-auditor-as-of');
    await page.getByRole('link', { name: 'Chain verification' }).click();
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByTestId('verification').getByText('The history is intact.').waitFor();
    await screenshot(page, 'pages-auditor-verify');
    assert.deepEqual(page.errors, []);
    await page.close();
  });
});

describe('a server that serves part of the API', () => {
  it('offers only the pages whose operations it serves', async () => {
    const page = await signedIn('op-early');
    assert.equal(new URL(page.url()).pathname, '/events', 'the operator lands on the first page served');
    const nav = await page.getByRole('navigation', { name: 'main' }).innerText();
    assert.match(nav, /Event history/);
    assert.doesNotMatch(nav, /Nodes|Jobs|Catalog|Services|Tenants/);
    await page.goto(`${api.url}/nodes`);
    await page.getByRole('heading', { name: 'Not available on this server' }).waitFor();
    await page.close();
  });
});

describe('sign-in', () => {
  it('refuses an unknown token and sends an expired session back to sign in', async () => {
    const page = await browser.newPage();
    await page.goto(`${api.url}/sign-in`);
    await page.getByLabel('API token').fill('cairn_nope_nope');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('This token was not accepted').waitFor();
    // A token that stops working mid-session ends it, keeping the page to return to.
    await page.evaluate(() => sessionStorage.setItem('cairn.token', 'expired'));
    await page.goto(`${api.url}/catalog`);
    await page.waitForURL(/\/sign-in\?next=%2Fcatalog/);
    await page.getByText('You were signed out').waitFor();
    await page.close();
  });
});
