import { describe, expect, it } from 'vitest';
import { boundsOf, pathOf } from './chart';
import { entityOfStream, entityPage, streamOfEntity } from './entities';
import { formatBytes, formatRelative, humanize } from './format';
import { emptyJobForm, jobInput } from './jobForm';
import { appendChunk } from './log';
import { buildPath, matchPath } from './router';

describe('router', () => {
  it('matches patterns and decodes parameters', () => {
    expect(matchPath('/nodes/:id', '/nodes/n%2F1')).toEqual({ id: 'n/1' });
    expect(matchPath('/nodes/:id', '/nodes/n1/')).toEqual({ id: 'n1' });
    expect(matchPath('/catalog/:name/:version', '/catalog/pg/1.4.2')).toEqual({ name: 'pg', version: '1.4.2' });
    expect(matchPath('/nodes/:id', '/nodes')).toBeNull();
    expect(matchPath('/jobs/new', '/jobs/j1')).toBeNull();
    expect(matchPath('/nodes/:id', '/nodes/%E0%A4%A')).toBeNull();
  });

  it('builds paths', () => {
    expect(buildPath('/catalog/:name/:version', { name: 'a b', version: '1.0' })).toBe('/catalog/a%20b/1.0');
    expect(() => buildPath('/nodes/:id', {})).toThrow('missing path parameter id');
  });
});

describe('chart geometry', () => {
  const pts = [
    { t: 1000, v: 50 },
    { t: 0, v: 0 },
    { t: 2000, v: 100 },
  ];
  it('bounds from zero to the maximum or the ceiling', () => {
    expect(boundsOf(pts)).toEqual({ min: 0, max: 100, from: 0, to: 2000 });
    expect(boundsOf([{ t: 0, v: 20 }], 100)).toEqual({ min: 0, max: 100, from: 0, to: 0 });
    expect(boundsOf([{ t: 0, v: 0 }])).toEqual({ min: 0, max: 1, from: 0, to: 0 });
    expect(boundsOf([])).toBeUndefined();
  });
  it('draws a path in time order, y downwards', () => {
    expect(pathOf(pts, boundsOf(pts)!, 200, 100)).toBe('M0,100 L100,50 L200,0');
    expect(pathOf([{ t: 5, v: 1 }], { min: 0, max: 2, from: 5, to: 5 }, 200, 100)).toBe('M100,50');
  });
});

describe('entities', () => {
  it('maps streams to entities and pages', () => {
    expect(entityOfStream('node', 'node-n1')).toEqual({ type: 'NODE', id: 'n1' });
    expect(entityOfStream('api_token', 'api_token-t1')).toEqual({ type: 'API_TOKEN', id: 't1' });
    expect(entityOfStream('projection', 'projection-x')).toBeUndefined();
    expect(entityPage('TEMPLATE', 'pg@1.4.2')).toEqual({ page: 'template', path: '/catalog/pg/1.4.2' });
    expect(entityPage('USER', 'u1')).toBeUndefined();
    expect(streamOfEntity('SERVICE', 's1')).toBe('service-s1');
  });
});

describe('job log', () => {
  const c = (seq: number) => ({ seq, stream: 'STDOUT' as const, data: `line ${seq}\n`, time: '2025-01-01T00:00:00Z' });
  it('keeps each chunk once, in order, across resends', () => {
    let log = appendChunk([], c(1));
    log = appendChunk(log, c(2));
    log = appendChunk(log, c(1));
    log = appendChunk(log, c(4));
    log = appendChunk(log, c(3));
    expect(log.map((x) => x.seq)).toEqual([1, 2, 3, 4]);
  });
});

describe('the run-a-job form', () => {
  it('builds a script job on a node', () => {
    const r = jobInput({ ...emptyJobForm, nodeId: 'n1', body: 'echo hi' });
    expect(r.errors).toEqual({});
    expect(r.input).toEqual({
      spec: { kind: 'SCRIPT', script: { interpreter: 'sh', body: 'echo hi' } },
      target: { nodeId: 'n1' },
      timeoutSeconds: 3600,
    });
  });
  it('builds a fan-out over a selector in a location', () => {
    const r = jobInput({ ...emptyJobForm, targetBy: 'selector', selector: ' zone in (a,b), !gpu ', location: 'ams', mode: 'ALL', maxParallel: '2', kind: 'EXEC', argv: 'uname\n-a\n' });
    expect(r.input).toEqual({
      spec: { kind: 'EXEC', exec: { argv: ['uname', '-a'] } },
      target: { match: 'zone in (a,b), !gpu', location: 'ams', mode: 'ALL', maxParallel: 2 },
      timeoutSeconds: 3600,
    });
  });
  it('builds a job on every node', () => {
    const r = jobInput({ ...emptyJobForm, targetBy: 'every', mode: 'ALL', body: 'uptime' });
    expect(r.input?.target).toEqual({ every: true, mode: 'ALL', maxParallel: 0 });
  });
  it('says what is missing', () => {
    const r = jobInput({ ...emptyJobForm, targetBy: 'selector', kind: 'ACTION', args: '[1]', timeoutSeconds: '0' });
    expect(r.input).toBeUndefined();
    expect(r.errors).toEqual({
      selector: 'Give a label selector or choose a location.',
      action: 'Name the action, e.g. system.info.',
      args: 'The arguments must be a JSON object.',
      timeoutSeconds: 'A whole number of seconds, more than 0.',
    });
  });
});

describe('format', () => {
  it('formats for people', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(8 * 1024 ** 3)).toBe('8.0 GiB');
    expect(formatRelative('2025-01-01T00:00:00Z', Date.parse('2025-01-01T00:02:00Z'))).toBe('2 min ago');
    expect(formatRelative('2025-01-01T00:00:00Z', Date.parse('2025-01-01T00:00:02Z'))).toBe('just now');
    expect(humanize('TIMED_OUT')).toBe('timed out');
  });
});

describe('server clock', () => {
  it('shows what just happened on a server whose clock is ahead as just now, not in the future', async () => {
    const { observeServerDate, serverNow } = await import('./clock');
    const local = Date.now();
    // The server is 6 s ahead of this browser.
    observeServerDate(new Date(local + 6000).toUTCString(), local);
    const recorded = new Date(local + 6000).toISOString();
    expect(formatRelative(recorded, serverNow())).toBe('just now');
    // A clock within the header's resolution is taken as right.
    observeServerDate(new Date(local).toUTCString(), local);
    expect(Math.abs(serverNow() - Date.now())).toBeLessThan(50);
  });
});
