// The portal's pages, and what of the server's API each needs: a page whose
// operations the server does not serve is left out rather than shown broken.
import { hasMutation, hasQuery, type Capabilities } from './capabilities';

export type PageId =
  | 'nodes'
  | 'node'
  | 'jobs'
  | 'job'
  | 'run-job'
  | 'tenants'
  | 'users'
  | 'locations'
  | 'location'
  | 'catalog'
  | 'template'
  | 'register-template'
  | 'services'
  | 'service'
  | 'deploy'
  | 'events'
  | 'event'
  | 'as-of'
  | 'verify'
  | 'cluster';

/** The root query fields each page cannot work without. */
export const pageNeeds: Record<PageId, { query?: string[]; mutation?: string[] }> = {
  nodes: { query: ['nodes'] },
  node: { query: ['serverNode'] },
  jobs: { query: ['jobs'] },
  job: { query: ['job'] },
  'run-job': { mutation: ['submitJob'] },
  tenants: { query: ['tenants'] },
  users: { query: ['users'] },
  locations: { query: ['locations'] },
  location: { query: ['location'] },
  catalog: { query: ['templates'] },
  template: { query: ['template'] },
  'register-template': { mutation: ['registerTemplate'] },
  services: { query: ['services'] },
  service: { query: ['service'] },
  deploy: { query: ['template', 'templates'], mutation: ['createService'] },
  events: { query: ['events'] },
  event: { query: ['event'] },
  'as-of': { query: ['entityAsOf'] },
  verify: { query: ['verifyChain'] },
  cluster: { query: ['cluster'] },
};

export function serves(c: Capabilities, page: PageId): boolean {
  const need = pageNeeds[page];
  return (need.query ?? []).every((q) => hasQuery(c, q)) && (need.mutation ?? []).every((m) => hasMutation(c, m));
}
