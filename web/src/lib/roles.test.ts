import { describe, expect, it } from 'vitest';
import { can, canSee, homeFor, navFor } from './roles';

describe('pages by role', () => {
  it('gives each role its area', () => {
    const pages = (role: Parameters<typeof navFor>[0]) => navFor(role).flatMap((s) => s.items.map((i) => i.page));
    expect(pages('OPERATOR')).toEqual(['nodes', 'jobs', 'run-job', 'locations', 'cluster', 'catalog', 'services', 'tenants', 'users', 'events']);
    expect(pages('TENANT_MEMBER')).toEqual(['catalog', 'services']);
    expect(pages('TENANT_ADMIN')).toEqual(['catalog', 'services', 'users', 'events']);
    expect(pages('AUDITOR')).toEqual(['nodes', 'jobs', 'locations', 'catalog', 'services', 'tenants', 'users', 'events', 'as-of', 'verify']);
    expect(pages('VENDOR')).toEqual(['catalog']);
    expect(pages('AGENT')).toEqual([]);
  });

  it('keeps tenants out of the grid and the audit tools', () => {
    for (const page of ['nodes', 'node', 'jobs', 'run-job', 'tenants', 'verify', 'as-of'] as const) {
      expect(canSee('TENANT_MEMBER', page)).toBe(false);
      expect(canSee('TENANT_ADMIN', page)).toBe(false);
    }
    expect(canSee('TENANT_MEMBER', 'deploy')).toBe(true);
    expect(canSee('OPERATOR', 'deploy')).toBe(false);
    expect(canSee('AUDITOR', 'run-job')).toBe(false);
  });

  it('lands each role on its first page', () => {
    expect(homeFor('OPERATOR')).toBe('/nodes');
    expect(homeFor('TENANT_MEMBER')).toBe('/services');
    expect(homeFor('AUDITOR')).toBe('/events');
    expect(homeFor('VENDOR')).toBe('/catalog');
  });
});

describe('can', () => {
  it('reads the viewer’s permissions, in either spelling', () => {
    const viewer = { permissions: ['service.create', 'stopService', 'token.*'] };
    expect(can(viewer, 'service.create')).toBe(true);
    expect(can(viewer, 'service.stop')).toBe(true);
    expect(can(viewer, 'token.revoke')).toBe(true);
    expect(can(viewer, 'service.remove')).toBe(false);
    expect(can(null, 'service.create')).toBe(false);
    expect(can({ permissions: ['issueToken'] }, 'token.issue')).toBe(true);
  });

  it('lets entity.write cover every change but not reads', () => {
    const viewer = { permissions: ['service.write', 'jointoken.write'] };
    expect(can(viewer, 'service.remove')).toBe(true);
    expect(can(viewer, 'service.read')).toBe(false);
    expect(can(viewer, 'node.join_token')).toBe(true);
    expect(can(viewer, 'node.drain')).toBe(false);
  });
});
