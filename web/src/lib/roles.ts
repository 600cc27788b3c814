// What each role sees. The role decides the pages (docs/api.md lists what
// each role may read); the viewer's permissions decide the actions offered on
// them. The server checks both again: hiding is for clarity, not safety.
import type { Role, Viewer } from '../api/types';
import { everything, type Capabilities } from './capabilities';
import { serves, type PageId } from './pages';

const operatorPages: PageId[] = ['nodes', 'node', 'jobs', 'job', 'run-job', 'tenants', 'locations', 'location', 'catalog', 'template', 'register-template', 'services', 'service', 'events', 'event', 'cluster'];
const tenantPages: PageId[] = ['catalog', 'template', 'services', 'service', 'deploy'];
const auditorPages: PageId[] = ['events', 'event', 'as-of', 'verify', 'nodes', 'node', 'jobs', 'job', 'services', 'service', 'tenants', 'locations', 'location', 'catalog', 'template'];

const pagesByRole: Record<Role, ReadonlySet<PageId>> = {
  ADMIN: new Set<PageId>([...operatorPages, ...auditorPages, 'users', 'deploy']),
  OPERATOR: new Set<PageId>([...operatorPages, 'users']),
  TENANT_ADMIN: new Set<PageId>([...tenantPages, 'users', 'events', 'event']),
  TENANT_MEMBER: new Set(tenantPages),
  VENDOR: new Set<PageId>(['catalog', 'template', 'register-template']),
  AUDITOR: new Set<PageId>([...auditorPages, 'users']),
  AGENT: new Set(),
};

/** Roles that may read API tokens (the operator manages users, not their tokens). */
export function readsTokens(role: Role): boolean {
  return role === 'ADMIN' || role === 'TENANT_ADMIN' || role === 'AUDITOR';
}

export function canSee(role: Role, page: PageId): boolean {
  return pagesByRole[role]?.has(page) ?? false;
}

export interface NavItem {
  page: PageId;
  label: string;
  path: string;
}

export interface NavSection {
  title: string;
  items: NavItem[];
}

const sections: { title: string; items: NavItem[] }[] = [
  {
    title: 'Grid',
    items: [
      { page: 'nodes', label: 'Nodes', path: '/nodes' },
      { page: 'jobs', label: 'Jobs', path: '/jobs' },
      { page: 'run-job', label: 'Run a job', path: '/jobs/new' },
      { page: 'locations', label: 'Locations', path: '/locations' },
      { page: 'cluster', label: 'Cluster', path: '/cluster' },
    ],
  },
  {
    title: 'Services',
    items: [
      { page: 'catalog', label: 'Catalog', path: '/catalog' },
      { page: 'services', label: 'Services', path: '/services' },
    ],
  },
  {
    title: 'Access',
    items: [
      { page: 'tenants', label: 'Tenants', path: '/tenants' },
      { page: 'users', label: 'Users and tokens', path: '/users' },
    ],
  },
  {
    title: 'Audit',
    items: [
      { page: 'events', label: 'Event history', path: '/events' },
      { page: 'as-of', label: 'Entity as of', path: '/as-of' },
      { page: 'verify', label: 'Chain verification', path: '/verify' },
    ],
  },
];

/**
 * The navigation for a role: the pages it may see that the server's API
 * serves, in sections that keep at least one page.
 */
export function navFor(role: Role, api: Capabilities = everything): NavSection[] {
  return sections
    .map((s) => ({
      title: s.title,
      items: s.items
        .filter((i) => canSee(role, i.page) && serves(api, i.page))
        .map((i) => (i.page === 'users' && !readsTokens(role) ? { ...i, label: 'Users' } : i)),
    }))
    .filter((s) => s.items.length > 0);
}

const homes: Record<Role, string[]> = {
  ADMIN: ['/nodes', '/services', '/events'],
  OPERATOR: ['/nodes', '/jobs', '/services', '/events'],
  TENANT_ADMIN: ['/services', '/catalog', '/events'],
  TENANT_MEMBER: ['/services', '/catalog'],
  VENDOR: ['/catalog'],
  AUDITOR: ['/events', '/verify'],
  AGENT: [],
};

/**
 * Where a role lands after signing in: its first home page the server
 * serves, else the first page of its navigation, else undefined (nothing
 * for this role yet).
 */
export function homeFor(role: Role, api: Capabilities = everything): string | undefined {
  const items = navFor(role, api).flatMap((s) => s.items);
  return homes[role].find((h) => items.some((i) => i.path === h)) ?? items[0]?.path;
}

export const roleNames: Record<Role, string> = {
  ADMIN: 'Administrator',
  OPERATOR: 'Operator',
  TENANT_ADMIN: 'Tenant administrator',
  TENANT_MEMBER: 'Tenant member',
  VENDOR: 'Vendor',
  AUDITOR: 'Auditor',
  AGENT: 'Agent',
};

export function isTenantRole(role: Role): boolean {
  return role === 'TENANT_ADMIN' || role === 'TENANT_MEMBER';
}

/**
 * Whether the viewer may take an action, named entity.verb as in
 * `viewer.permissions` ("service.create", "node.drain", "token.revoke"). A
 * permission entity.write covers every change to that entity, and the
 * mutation's own name ("createService") counts as the permission too.
 */
export function can(viewer: Pick<Viewer, 'permissions'> | null | undefined, action: string): boolean {
  if (!viewer) return false;
  const perms = new Set(viewer.permissions);
  if (perms.has(action) || perms.has('*')) return true;
  const dot = action.indexOf('.');
  if (dot < 0) return false;
  const entity = action.slice(0, dot);
  const verb = action.slice(dot + 1);
  if (perms.has(`${entity}.*`)) return true;
  if (verb !== 'read' && (perms.has(`${entity}.write`) || (writeAliases[action] ?? []).some((a) => perms.has(a)))) return true;
  const camel = entity.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
  return perms.has(verb + camel.charAt(0).toUpperCase() + camel.slice(1));
}

/** Permissions named after another entity that cover an action. */
const writeAliases: Record<string, string[]> = {
  'node.join_token': ['jointoken.write', 'join_token.write'],
};
