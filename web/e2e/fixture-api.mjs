// A stand-in for cairnd in the page tests: serves the built portal and
// answers its GraphQL operations by name with fixed data, so that every page
// can be rendered and driven in a real browser without the server. Tests
// against a real cairnd are in smoke.test.mjs and flows.test.mjs.
import { readFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, normalize } from 'node:path';
import { repoRoot } from './harness.mjs';

const dist = join(repoRoot, 'web', 'static', 'dist');
const now = Date.now();
const ago = (s) => new Date(now - s * 1000).toISOString();

const viewers = {
  op: { id: 't-op', userId: 'u-op', name: 'Olga Operator', role: 'OPERATOR', tenantId: null, nodeId: null, expiresAt: null, permissions: ['node.read', 'node.drain', 'node.decommission', 'node.join_token', 'job.read', 'job.submit', 'job.cancel', 'template.read', 'service.read', 'tenant.read', 'tenant.create', 'tenant.update', 'user.read', 'user.create', 'user.update', 'location.read', 'location.create', 'location.update', 'event.read'] },
  acme: { id: 't-acme', userId: 'u-acme', name: 'Ada at Acme', role: 'TENANT_MEMBER', tenantId: 'acme', nodeId: null, expiresAt: null, permissions: ['service.read', 'service.create', 'service.start', 'service.stop', 'service.remove', 'template.read', 'tenant.read', 'job.read', 'event.read'] },
  aud: { id: 't-aud', userId: 'u-aud', name: 'Avery Auditor', role: 'AUDITOR', tenantId: null, nodeId: null, expiresAt: null, permissions: ['node.read', 'job.read', 'template.read', 'service.read', 'tenant.read', 'user.read', 'token.read', 'location.read', 'event.read'] },
};

// The same operator against a server that serves only the event history and
// the audit queries (as the API does while its read-model queries are wired in).
viewers['op-early'] = { ...viewers.op, id: 't-op-early' };

const allRoots = {
  query: ['viewer', 'nodes', 'serverNode', 'node', 'jobs', 'job', 'templates', 'template', 'services', 'service', 'planServiceUpdate', 'tenants', 'users', 'apiTokens', 'locations', 'location', 'events', 'event', 'head', 'entityAsOf', 'entityDiff', 'verifyChain', 'cluster'],
  mutation: ['drainNode', 'undrainNode', 'decommissionNode', 'createJoinToken', 'submitJob', 'cancelJob', 'registerTemplate', 'publishTemplate', 'deprecateTemplate', 'createService', 'retryService', 'updateService', 'startService', 'stopService', 'removeService', 'createTenant', 'suspendTenant', 'resumeTenant', 'createUser', 'disableUser', 'enableUser', 'createApiToken', 'revokeApiToken', 'createLocation', 'retireLocation', 'setLocationReserve'],
  subscription: ['events', 'nodeChanged', 'jobChanged', 'jobLog', 'serviceChanged'],
};
const earlyRoots = {
  query: ['viewer', 'events', 'event', 'head', 'entityAsOf', 'entityDiff', 'verifyChain'],
  mutation: ['createTenant', 'createUser', 'createApiToken', 'createLocation', 'drainNode', 'createJoinToken'],
  subscription: ['events'],
};
const schemaOf = (roots) => {
  const t = (names) => ({ fields: names.map((name) => ({ name })) });
  return { __schema: { queryType: t(roots.query), mutationType: t(roots.mutation), subscriptionType: t(roots.subscription) } };
};

const label = (key, value) => ({ key, value });
const location = { id: 'ams1', name: 'Amsterdam 1' };
const res = (cpu, memGiB, diskGiB = 0) => ({ cpu, memoryBytes: memGiB * 2 ** 30, diskBytes: diskGiB * 2 ** 30 });
const nodeCapacity = (cpu, memGiB, fill, allocations) => ({ allocatable: res(32, 64, 900), allocated: res(cpu, memGiB, 10), reserve: null, locationReserve: res(1, 2), allocations, fill });
const locationCapacity = {
  allocatable: res(64, 128, 1800),
  allocated: res(20.5, 52, 20),
  reserve: res(1, 2),
  nodes: 2,
  schedulableNodes: 1,
  runningTotal: 2,
  fullest: [
    { nodeId: 'n1', hostname: 'edge-01', status: 'ONLINE', capacity: nodeCapacity(18.5, 48, 0.75, 7) },
    { nodeId: 'n2', hostname: 'edge-02', status: 'DISCONNECTED', capacity: nodeCapacity(2, 4, 0.0625, 1) },
  ],
  running: [
    { resourceId: 'r1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6', resourceType: 'process', serviceId: 's1', serviceName: 'shop', nodeId: 'n1', hostname: 'edge-01', request: res(0.5, 1), allocatedAt: ago(3600) },
    { resourceId: 'r9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4', resourceType: 'directory', serviceId: 's1', serviceName: 'shop', nodeId: 'n2', hostname: 'edge-02', request: res(0, 0), allocatedAt: ago(7200) },
  ],
};
const nodes = [
  { id: 'n1', hostname: 'edge-01', status: 'ONLINE', cordoned: false, labels: [label('zone', 'a'), label('role', 'web')], locationId: 'ams1', location, connectedAt: ago(3600), disconnectedAt: null, enrolledAt: ago(86400), updatedAt: ago(60) },
  { id: 'n2', hostname: 'edge-02', status: 'DISCONNECTED', cordoned: false, labels: [label('zone', 'b')], locationId: 'ams1', location, connectedAt: ago(7200), disconnectedAt: ago(300), enrolledAt: ago(86400), updatedAt: ago(300) },
  { id: 'n3', hostname: 'db-01', status: 'DRAINING', cordoned: true, labels: [label('role', 'db')], locationId: null, location: null, connectedAt: ago(600), disconnectedAt: null, enrolledAt: ago(4000), updatedAt: ago(30) },
];
const job = (id, status, extra = {}) => ({
  id, parentId: null, status,
  spec: { kind: 'SCRIPT', action: null, args: null, exec: null, script: { interpreter: 'sh', body: 'uptime\ndf -h' } },
  target: { nodeId: 'n1', node: { hostname: 'edge-01' }, selector: [], mode: null, maxParallel: 0 },
  nodeId: 'n1', submitter: 'u-op', submitterName: 'Olga Operator', attempt: 1, submittedAt: ago(120), startedAt: ago(118), finishedAt: status === 'RUNNING' ? null : ago(100), ...extra,
});
const jobs = [job('j-2', 'RUNNING'), job('j-1', 'SUCCEEDED')];
const conn = (items, cursorOf = (x) => x.id) => ({ edges: items.map((n) => ({ cursor: cursorOf(n), node: n })), pageInfo: { hasNextPage: false, endCursor: items.length ? cursorOf(items[items.length - 1]) : null }, totalCount: items.length });
const stats = Array.from({ length: 60 }, (_, i) => ({ time: ago(3600 - i * 60), cpuPercent: 20 + 15 * Math.sin(i / 6), memoryUsedBytes: (3 + Math.sin(i / 9)) * 2 ** 30, memoryAvailableBytes: 5 * 2 ** 30, load1: 0.5 + Math.abs(Math.sin(i / 5)), load5: 0.7, load15: 0.6 }));
const template = {
  id: 'webapp@1.2.0', name: 'webapp', version: '1.2.0', vendor: 'acme-labs', category: 'web', description: 'A small web application behind a reverse proxy', status: 'PUBLISHED', registeredAt: ago(86400 * 3),
  digest: 'sha256:8f3c0e5c2b1d4a6f9e7d8c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f', descriptor: { apiVersion: 'cairn/v1', metadata: { name: 'webapp', version: '1.2.0' } },
  publishedAt: ago(86400 * 2), deprecatedAt: null, deprecationReason: null, allowedActions: ['deprecate'],
  variables: [
    { name: 'domain', type: 'STRING', description: 'Public host name', default: null, required: true, sensitive: false, pattern: '^[a-z0-9.-]+$', minLength: 3, maxLength: 63, minimum: null, maximum: null, enum: null },
    { name: 'replicas', type: 'INTEGER', description: 'Instances behind the proxy', default: 2, required: false, sensitive: false, pattern: null, minLength: null, maxLength: null, minimum: 1, maximum: 5, enum: null },
    { name: 'size', type: 'STRING', description: null, default: 'small', required: false, sensitive: false, pattern: null, minLength: null, maxLength: null, minimum: null, maximum: null, enum: ['small', 'large'] },
    { name: 'tls', type: 'BOOLEAN', description: 'Serve HTTPS', default: true, required: false, sensitive: false, pattern: null, minLength: null, maxLength: null, minimum: null, maximum: null, enum: null },
    { name: 'admin_password', type: 'STRING', description: 'Password of the admin user', default: null, required: true, sensitive: true, pattern: null, minLength: 8, maxLength: null, minimum: null, maximum: null, enum: null },
  ],
  flavors: [{ name: 'ha', description: 'Three replicas, large', variables: { replicas: 3, size: 'large' } }],
};
const templates = [template, { ...template, id: 'webapp@1.1.0', version: '1.1.0', status: 'DEPRECATED' }, { ...template, id: 'pg@15.4.0', name: 'postgres', version: '15.4.0', category: 'database', description: 'PostgreSQL with backups' }];
const svc = (id, tenantId, name, status) => ({ id, tenantId, tenant: { name: tenantId === 'acme' ? 'Acme' : 'Globex' }, name, templateName: 'webapp', templateVersion: '1.2.0', status, requestedAt: ago(5000), updatedAt: ago(200) });
const services = [svc('s-1', 'acme', 'shop', 'RUNNING'), svc('s-2', 'acme', 'blog', 'STOPPED'), svc('s-9', 'globex', 'intranet', 'RUNNING')];
const event = (n, type, streamId, extra = {}) => ({
  cursor: String(n), position: n, streamId, streamType: streamId.split('-')[0], version: 1, type, time: ago(3000 - n * 10),
  metadata: { commandId: `c-${n}`, correlationId: `corr-${Math.ceil(n / 3)}`, causationId: null, actor: 'u-op', actorName: 'Olga Operator', tenantId: streamId.startsWith('service') ? 'acme' : null }, ...extra,
});
const events = [event(1, 'node.enrolled', 'node-n1'), event(2, 'node.connected', 'node-n1'), event(3, 'job.submitted', 'job-j-1'), event(4, 'service.registration_requested', 'service-s-1'), event(5, 'service.registered', 'service-s-1'), event(6, 'service.started', 'service-s-1')];

function serviceDetail(s) {
  return {
    ...s, tenant: { id: s.tenantId, name: s.tenantId === 'acme' ? 'Acme' : 'Globex' }, variables: { domain: 'shop.example.test', replicas: 2, size: 'small', tls: true, admin_password: null },
    failedIn: null, cause: null, remaining: [], outputs: { url: 'https://shop.example.test' }, version: 4,
    allowedActions: s.status === 'RUNNING' ? ['stop', 'update'] : s.status === 'STOPPED' ? ['start', 'remove', 'update'] : [],
    revision: 2, blueprint: s.id === 's-1' ? 'shop-prod' : null,
    resources: [
      { id: `${s.id}.dir`, name: 'site-root', plugin: 'agent', type: 'directory', status: s.status === 'RUNNING' ? 'RUNNING' : 'STOPPED', dependsOn: [], outputs: { path: '/srv/shop' }, error: null, failedIn: null, updatedAt: ago(300) },
      { id: `${s.id}.proc`, name: 'web', plugin: 'agent', type: 'process', status: s.status === 'RUNNING' ? 'RUNNING' : 'STOPPED', dependsOn: [`${s.id}.dir`], outputs: { pid: 4242 }, error: null, failedIn: null, updatedAt: ago(250),
        health: [{ name: 'http-ok', healthy: false, detail: 'answered 503, not 200', since: ago(120) }] },
    ],
    history: conn(events.filter((e) => e.streamId === `service-${s.id}`), (e) => e.cursor),
  };
}

const err = (code, message, extra = {}) => ({ errors: [{ message, extensions: { code, ...extra } }] });

// The pages kept live ask where the read models were, to subscribe after it.
const liveOps = new Set(['Nodes', 'Node', 'Jobs', 'Job', 'Services', 'Service']);
function withReadModelsCursor(op, res) {
  if (liveOps.has(op) && res.data) res.data.readModelsCursor = events[events.length - 1].cursor;
  return res;
}

/** Answers one operation for a viewer; `calls` records mutations for the tests. */
function answer(viewer, op, vars, calls) {
  const tenantOnly = (list) => (viewer.tenantId ? list.filter((s) => s.tenantId === viewer.tenantId) : list);
  switch (op) {
    case 'Capabilities':
      return { data: schemaOf(viewer.id === 't-op-early' ? earlyRoots : allRoots) };
    case 'SignIn':
    case 'Viewer':
      return { data: { viewer } };
    case 'NodeNames':
      return { data: { nodes: conn(nodes.filter((n) => !vars.filter?.hostname || n.hostname.includes(vars.filter.hostname)).map(({ id, hostname, status }) => ({ id, hostname, status }))) } };
    case 'Nodes': {
      if (viewer.tenantId) return err('FORBIDDEN', 'the role tenant_member may not read nodes');
      let list = nodes;
      const f = vars.filter ?? {};
      if (f.status) list = list.filter((n) => f.status.includes(n.status));
      if (f.hostname) list = list.filter((n) => n.hostname.includes(f.hostname));
      return { data: { nodes: conn(list) } };
    }
    case 'Node': {
      const n = nodes.find((x) => x.id === vars.id);
      if (!n) return { data: { node: null } };
      return { data: { node: { ...n, drainReason: n.cordoned ? 'kernel upgrade' : null, factsAt: ago(900), version: 7, allowedActions: ['drain', 'decommission', 'set_labels'], facts: { cpu: { model: 'AMD EPYC 7313P', cores: 16, threads: 32 }, memoryBytes: 64 * 2 ** 30, disks: [{ device: '/dev/nvme0n1p2', mountpoint: '/', filesystem: 'ext4', sizeBytes: 960 * 2 ** 30 }], network: [{ name: 'eth0', mac: '02:00:00:00:00:01', addresses: ['10.0.0.11/24'], mtu: 1500 }], os: { name: 'debian', version: '12', kernel: '6.1.0-18-amd64', arch: 'amd64' } }, jobs: conn(jobs) } } };
    }
    case 'NodeStats':
      return { data: { node: { id: vars.id, statistics: stats } } };
    case 'Locations':
      return { data: { locations: conn([{ ...location, description: 'Rack row C', status: 'ACTIVE', createdAt: ago(86400 * 30), capacity: locationCapacity }]) } };
    case 'LocationNames':
      return { data: { locations: conn([{ ...location, status: 'ACTIVE' }]) } };
    case 'Location':
      if (vars.id !== location.id) return { data: { location: null } };
      return { data: { location: { ...location, description: 'Rack row C', status: 'ACTIVE', createdAt: ago(86400 * 30), capacity: locationCapacity } } };
    case 'SetLocationReserve':
      calls.push({ op, vars });
      return { data: { setLocationReserve: { cursor: '98', duplicate: false } } };
    case 'Jobs':
      return { data: { jobs: conn(jobs) } };
    case 'Job': {
      const j = jobs.find((x) => x.id === vars.id);
      if (!j) return { data: { job: null } };
      return { data: { job: { ...j, timeoutSeconds: 3600, queue: null, tenantId: null, node: { id: 'n1', hostname: 'edge-01' }, result: j.status === 'SUCCEEDED' ? { exitCode: 0, output: null, error: null, cpuTimeMs: 12, peakMemoryBytes: 3 * 2 ** 20 } : null, cancelReason: null, lostReason: null, counts: null, allowedActions: j.status === 'RUNNING' ? ['cancel'] : [], children: conn([]) } } };
    }
    case 'SubmitJob':
      calls.push({ op, vars });
      return { data: { submitJob: { cursor: '99', duplicate: false, job: { id: 'j-2', status: 'QUEUED' } } } };
    case 'Templates': {
      let list = templates;
      const f = vars.filter ?? {};
      if (f.name) list = list.filter((t) => t.name === f.name);
      if (f.status) list = list.filter((t) => f.status.includes(t.status));
      return { data: { templates: conn(list) } };
    }
    case 'Template':
      return { data: { template: templates.find((t) => t.name === vars.name && t.version === vars.version) ?? null } };
    case 'Services':
      return { data: { services: conn(tenantOnly(services).filter((s) => !vars.filter?.status || vars.filter.status.includes(s.status))) } };
    case 'Service': {
      const s = tenantOnly(services).find((x) => x.id === vars.id);
      return { data: { service: s ? serviceDetail(s) : null } };
    }
    case 'CreateService': {
      calls.push({ op, vars });
      const v = vars.input.variables ?? {};
      if (v.domain === 'taken.example.test') return err('INVALID_INPUT', 'variables.domain: is already used by another service', { field: 'variables.domain' });
      return { data: { createService: { cursor: '100', duplicate: false, service: { id: 's-1', status: 'REGISTERING', allowedActions: [] } } } };
    }
    case 'PlanServiceUpdate': {
      const v = vars.input.variables ?? {};
      const changes = [
        { name: 'proxy', resourceId: 'r-proxy', plugin: 'agent', type: 'process', action: 'KEEP', reasons: [], properties: [] },
        ...(v.replicas !== undefined ? [{ name: 'app[0]', resourceId: 'r-app0', plugin: 'agent', type: 'process', action: 'UPDATE', reasons: ['its properties change'], properties: [{ path: 'env.REPLICAS', old: '2', new: String(v.replicas) }] }] : []),
      ];
      const noChange = v.replicas === undefined && vars.input.templateVersion === '1.2.0';
      return { data: { planServiceUpdate: { revision: 2, fromVersion: '1.2.0', toVersion: vars.input.templateVersion ?? '1.2.0',
        variables: v.replicas !== undefined ? [{ name: 'replicas', old: 2, new: v.replicas }] : [], changes, creates: 0, updates: noChange ? 0 : 1, replaces: 0, destroys: 0, noChange } } };
    }
    case 'UpdateService':
      calls.push({ op, vars });
      return { data: { updateService: { cursor: '102', duplicate: false, service: { id: vars.input.serviceId, status: 'UPDATING', allowedActions: [] },
        plan: { revision: 2, fromVersion: '1.2.0', toVersion: '1.2.0', variables: [], changes: [], creates: 0, updates: 1, replaces: 0, destroys: 0, noChange: false } } } };
    case 'StopService':
    case 'StartService':
    case 'RemoveService':
      calls.push({ op, vars });
      return { data: { [op.charAt(0).toLowerCase() + op.slice(1)]: { cursor: '101', duplicate: false, service: { id: vars.input.serviceId, status: 'STOPPING', allowedActions: [] } } } };
    case 'Tenants':
      return { data: { tenants: conn([{ id: 'acme', name: 'Acme', status: 'ACTIVE', suspendReason: null, createdAt: ago(86400 * 9) }, { id: 'globex', name: 'Globex', status: 'SUSPENDED', suspendReason: 'unpaid invoice', createdAt: ago(86400 * 20) }]) } };
    case 'Users':
      return { data: { users: conn([{ id: 'u-op', name: 'Olga Operator', role: 'OPERATOR', tenantId: null, status: 'ACTIVE', createdAt: ago(86400 * 40) }, { id: 'u-acme', name: 'Ada at Acme', role: 'TENANT_MEMBER', tenantId: 'acme', status: 'ACTIVE', createdAt: ago(86400 * 8) }]) } };
    case 'ApiTokens':
      return { data: { apiTokens: conn([{ id: 'tk1', userId: 'u-acme', role: 'TENANT_MEMBER', tenantId: 'acme', status: 'ACTIVE', expiresAt: new Date(now + 86400e3 * 20).toISOString(), issuedAt: ago(86400 * 10), revokedAt: null, revokeReason: null }]) } };
    case 'Events': {
      let list = events;
      const f = vars.filter ?? {};
      if (f.types) list = list.filter((e) => f.types.includes(e.type));
      if (f.streamIds) list = list.filter((e) => f.streamIds.includes(e.streamId));
      if (vars.after) list = list.filter((e) => Number(e.cursor) > Number(vars.after));
      const page = list.slice(0, vars.first ?? 100);
      return { data: { events: { edges: page.map((e) => ({ cursor: e.cursor, node: e })), pageInfo: { hasNextPage: page.length < list.length, endCursor: page.at(-1)?.cursor ?? null } } } };
    }
    case 'LatestEvents': {
      let list = events;
      const f = vars.filter ?? {};
      if (f.streamIds) list = list.filter((e) => f.streamIds.includes(e.streamId));
      const page = list.slice(Math.max(0, list.length - (vars.last ?? 100)));
      return { data: { events: { edges: page.map((e) => ({ cursor: e.cursor, node: e })), pageInfo: { hasPreviousPage: page.length < list.length, startCursor: page[0]?.cursor ?? null } } } };
    }
    case 'Head':
      return { data: { head: events[events.length - 1].cursor } };
    case 'Event': {
      const e = events.find((x) => x.cursor === vars.cursor);
      return { data: { event: e ? { ...e, schemaVersion: 1, payload: { hostname: 'edge-01', labels: { zone: 'a' } }, prevHash: '0'.repeat(64), hash: 'b5d4045c3f466fa91fe2cc6abe79232a1a57cdf104f7a26e716e0a1e2789df78' } : null } };
    }
    case 'EntityAsOf':
      return { data: { entityAsOf: { type: vars.entity.type, id: vars.entity.id, version: 2, cursor: '2', time: ago(2980), state: { hostname: 'edge-01', status: 'online' } } } };
    case 'VerifyChain':
      return { data: { verifyChain: { ok: true, streams: 4, events: events.length, firstBreak: null, breaks: [] } } };
    case 'Cluster':
      return {
        data: {
          cluster: {
            replicas: [
              { id: 'cp-1-4121-9f3a1c', address: '10.0.0.11:8080', version: 'v1.4.0', startedAt: ago(7200), lastSeen: ago(1), gone: false, owns: ['dispatch', 'orchestrator'], self: true },
              { id: 'cp-2-3877-0b8e42', address: '10.0.0.12:8080', version: 'v1.4.0', startedAt: ago(3600), lastSeen: ago(40), gone: true, owns: [], self: false },
            ],
          },
        },
      };
    default:
      return err('INTERNAL', `the page-test API does not answer ${op}`);
  }
}

const types = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml' };

export function startFixtureApi() {
  if (!existsSync(join(dist, 'index.html'))) throw new Error(`${dist} is not built: run npm run build in web/`);
  const calls = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    if (url.pathname === '/graphql' && req.method === 'POST') {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        const { query, variables } = JSON.parse(body);
        const op = /(?:query|mutation)\s+(\w+)/.exec(query)?.[1] ?? '';
        const token = (req.headers.authorization ?? '').replace(/^Bearer /, '');
        const viewer = viewers[token];
        res.setHeader('content-type', 'application/json');
        if (!viewer) {
          res.statusCode = 401;
          res.end(JSON.stringify(err('UNAUTHENTICATED', 'token expired')));
          return;
        }
        res.end(JSON.stringify(withReadModelsCursor(op, answer(viewer, op, variables ?? {}, calls))));
      });
      return;
    }
    const file = normalize(join(dist, url.pathname));
    const path = file.startsWith(dist) && existsSync(file) && extname(file) ? file : join(dist, 'index.html');
    res.setHeader('content-type', types[extname(path)] ?? 'application/octet-stream');
    res.end(readFileSync(path));
  });
  // No subscriptions here: WebSocket upgrades are refused, and the portal shows it is reconnecting.
  server.on('upgrade', (_req, socket) => socket.destroy());
  return new Promise((ok) =>
    server.listen(0, '127.0.0.1', () => ok({ url: `http://127.0.0.1:${server.address().port}`, calls, stop: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) })),
  );
}
