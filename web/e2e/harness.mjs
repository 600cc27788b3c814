// The browser tests' harness: a real cairnd (embedded PostgreSQL in a fresh
// data directory, a free port), agents when their binary exists, Debian's
// Chromium driven by playwright-core, the API for setting up what a test
// needs, and screenshots under test-output/screenshots/.
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before } from 'node:test';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '..', '..');
export const screenshotDir = process.env.CAIRN_SCREENSHOTS ?? join(repoRoot, 'test-output', 'screenshots');

export const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const chromiumArgs = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** The binaries the tests run; `make` builds them into bin/. */
export const binaries = {
  cairnd: process.env.CAIRND ?? join(repoRoot, 'bin', 'cairnd'),
  agent: process.env.CAIRN_AGENT ?? join(repoRoot, 'bin', 'cairn-agent'),
};

export function freePort() {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => ok(port));
    });
  });
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Waits until fn returns a truthy value (or throws the last error at the deadline). */
export async function eventually(fn, { timeout = 30000, interval = 250, what = 'condition' } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await sleep(interval);
  }
}

/**
 * Starts cairnd serve on a free port with a fresh data directory. Returns
 * its URL, the bootstrap administrator's token when it printed one, its
 * output so far, and stop().
 */
export async function startCairnd({ binary = binaries.cairnd, timeout = 120000, args = [] } = {}) {
  if (!existsSync(binary)) throw new Error(`${binary} does not exist: build it first (make build)`);
  const dataDir = mkdtempSync(join(tmpdir(), 'cairn-e2e-'));
  // As root, the embedded PostgreSQL runs as an unprivileged user that must enter the directory.
  chmodSync(dataDir, 0o755);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = { ...process.env, CAIRN_LOG_FORMAT: 'json', CAIRN_LOG_LEVEL: 'info' };
  delete env.DATABASE_URL;
  const proc = spawn(binary, ['serve', '--listen', `127.0.0.1:${port}`, '--data-dir', dataDir, ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const onData = (d) => {
    output += d.toString();
  };
  proc.stdout.on('data', onData);
  proc.stderr.on('data', onData);
  let exited = null;
  const exit = new Promise((r) => proc.on('exit', (code, signal) => r((exited = { code, signal }))));

  const stop = async () => {
    if (!exited) {
      proc.kill('SIGTERM');
      const done = await Promise.race([exit, sleep(20000).then(() => null)]);
      if (!done) {
        proc.kill('SIGKILL');
        await exit;
      }
    }
    rmSync(dataDir, { recursive: true, force: true });
  };

  try {
    const ready = eventually(
      async () => {
        const res = await fetch(`${url}/readyz`);
        return res.ok;
      },
      { timeout, interval: 300, what: 'cairnd to be ready' },
    );
    const died = exit.then((e) => {
      throw new Error(`cairnd exited (${JSON.stringify(e)}):\n${output}`);
    });
    died.catch(() => {}); // once ready, a later exit is stop()'s business
    await Promise.race([ready, died]);
  } catch (e) {
    await stop();
    throw e;
  }
  const token = output.match(/cairn_[A-Za-z0-9]+_[A-Za-z0-9_-]+/)?.[0];
  return { url, adminToken: token, dataDir, output: () => output, stop };
}

/** Sends one GraphQL operation with a bearer token; returns data or throws with the errors. */
export async function gql(server, token, query, variables = {}) {
  const res = await fetch(`${server.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  const text = await res.text();
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    throw new Error(`POST /graphql: HTTP ${res.status}: ${text.slice(0, 200)}`);
  }
  if (body.errors?.length) {
    const err = new Error(body.errors.map((e) => `${e.extensions?.code ?? '?'}: ${e.message}`).join('; '));
    err.errors = body.errors;
    throw err;
  }
  return body.data;
}

/** Whether the server answers the viewer query for this token: the API the portal needs is there. */
export async function apiReady(server, token) {
  if (!token) return false;
  try {
    const d = await gql(server, token, '{ viewer { role permissions } }');
    return d.viewer?.role === 'ADMIN';
  } catch {
    return false;
  }
}

/** Creates a user with the role (in the tenant, for tenant roles) and returns a token of theirs. */
export async function tokenFor(server, adminToken, { name, role, tenantId }) {
  const u = await gql(
    server,
    adminToken,
    'mutation ($input: CreateUserInput!) { createUser(input: $input) { user { id } } }',
    { input: { name, role, tenantId } },
  );
  const t = await gql(
    server,
    adminToken,
    'mutation ($input: CreateApiTokenInput!) { createApiToken(input: $input) { token } }',
    { input: { userId: u.createUser.user.id } },
  );
  return t.createApiToken.token;
}

export async function createTenant(server, adminToken, id, name) {
  await gql(server, adminToken, 'mutation ($input: CreateTenantInput!) { createTenant(input: $input) { tenant { id } } }', {
    input: { id, name },
  });
  return id;
}

/**
 * Starts cairn-agent enrolled with a join token. Its flags follow the
 * agent's documented command line (--server, --join-token, --data-dir,
 * --file-root: the directory file actions may touch).
 */
export async function startAgent(server, joinToken, { hostname, fileRoot } = {}) {
  if (!existsSync(binaries.agent)) throw new Error(`${binaries.agent} does not exist: build it first (make build)`);
  const dataDir = mkdtempSync(join(tmpdir(), 'cairn-agent-e2e-'));
  const args = ['--server', server.url, '--join-token', joinToken, '--data-dir', dataDir];
  if (hostname) args.push('--hostname', hostname);
  if (fileRoot) args.push('--file-root', fileRoot);
  const proc = spawn(binaries.agent, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  proc.stdout.on('data', (d) => (output += d));
  proc.stderr.on('data', (d) => (output += d));
  let exited = false;
  const exit = new Promise((r) => proc.on('exit', () => r((exited = true))));
  return {
    output: () => output,
    async stop() {
      if (!exited) {
        proc.kill('SIGTERM');
        if (!(await Promise.race([exit, sleep(10000).then(() => false)]))) proc.kill('SIGKILL');
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A headless Chromium with a fresh profile, and a page on the server. */
export async function openBrowser() {
  if (!existsSync(chromiumPath)) throw new Error(`${chromiumPath} is missing: run web/e2e/ensure-chromium.sh`);
  const profile = mkdtempSync(join(tmpdir(), 'cairn-chromium-'));
  // The persistent context is Chromium started with --user-data-dir=profile.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: chromiumArgs,
    viewport: { width: 1366, height: 800 },
  });
  return {
    context,
    async newPage() {
      const page = await context.newPage();
      page.setDefaultTimeout(15000);
      return page;
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export async function screenshot(page, name) {
  mkdirSync(screenshotDir, { recursive: true });
  const path = join(screenshotDir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Signs in through the sign-in page with a token and waits for the app. */
export async function signIn(page, server, token) {
  await page.goto(`${server.url}/sign-in`);
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByTestId('viewer').waitFor();
}

export function trackErrors(page) {
  const errors = [];
  page.on('pageerror', (e) => {
    if (process.env.CAIRN_E2E_DEBUG) console.error(e.stack);
    errors.push(e.message);
  });
  return errors;
}

/**
 * Starts one cairnd and one browser for a test file (before/after hooks),
 * reads which root fields the server's API serves, and offers requires(),
 * which skips a test, naming what is missing, unless the server serves every
 * operation it needs and every binary it starts exists.
 */
export function useServer({ args = [] } = {}) {
  const ctx = {
    server: undefined,
    browser: undefined,
    roots: { query: new Set(), mutation: new Set(), subscription: new Set() },
    requires(t, { query = [], mutation = [], subscription = [], bins = [] }) {
      const missing = [
        ...query.filter((q) => !ctx.roots.query.has(q)).map((q) => `query ${q}`),
        ...mutation.filter((m) => !ctx.roots.mutation.has(m)).map((m) => `mutation ${m}`),
        ...subscription.filter((s) => !ctx.roots.subscription.has(s)).map((s) => `subscription ${s}`),
        ...bins.filter((b) => !existsSync(b)).map((b) => `binary ${b}`),
      ];
      if (missing.length) t.skip(`waiting for: ${missing.join(', ')}`);
      return missing.length === 0;
    },
  };
  before(async () => {
    ctx.server = await startCairnd({ args });
    if (!ctx.server.adminToken) throw new Error(`cairnd printed no administrator token on its first start:\n${ctx.server.output()}`);
    if (!(await apiReady(ctx.server, ctx.server.adminToken))) throw new Error('the administrator token does not work');
    const d = await gql(
      ctx.server,
      ctx.server.adminToken,
      '{ __schema { queryType { fields { name } } mutationType { fields { name } } subscriptionType { fields { name } } } }',
    );
    const names = (t) => new Set((t?.fields ?? []).map((f) => f.name));
    ctx.roots = { query: names(d.__schema.queryType), mutation: names(d.__schema.mutationType), subscription: names(d.__schema.subscriptionType) };
    ctx.browser = await openBrowser();
  });
  after(async () => {
    await ctx.browser?.close();
    await ctx.server?.stop();
  });
  return ctx;
}
