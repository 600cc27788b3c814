// What the server's API offers. The API grows area by area, and a field the
// server does not serve yet is absent from its schema: the portal reads the
// root fields once by introspection and leaves out the pages and actions
// whose operations are missing, rather than showing them broken.
import type { PageId } from './roles';

export interface Capabilities {
  /** False when introspection is turned off: then everything is assumed served. */
  known: boolean;
  query: ReadonlySet<string>;
  mutation: ReadonlySet<string>;
  subscription: ReadonlySet<string>;
}

export const everything: Capabilities = { known: false, query: new Set(), mutation: new Set(), subscription: new Set() };

export const capabilitiesQuery = `query Capabilities {
  __schema {
    queryType { fields { name } }
    mutationType { fields { name } }
    subscriptionType { fields { name } }
  }
}`;

interface SchemaRoots {
  __schema: {
    queryType: { fields: { name: string }[] | null } | null;
    mutationType: { fields: { name: string }[] | null } | null;
    subscriptionType: { fields: { name: string }[] | null } | null;
  };
}

export function capabilitiesOf(data: SchemaRoots | null | undefined): Capabilities {
  const s = data?.__schema;
  if (!s) return everything;
  const names = (t: { fields: { name: string }[] | null } | null) => new Set((t?.fields ?? []).map((f) => f.name));
  return { known: true, query: names(s.queryType), mutation: names(s.mutationType), subscription: names(s.subscriptionType) };
}

export function hasQuery(c: Capabilities, name: string): boolean {
  return !c.known || c.query.has(name);
}
export function hasMutation(c: Capabilities, name: string): boolean {
  return !c.known || c.mutation.has(name);
}
export function hasSubscription(c: Capabilities, name: string): boolean {
  return !c.known || c.subscription.has(name);
}

/** The root query fields each page cannot work without. */
export const pageNeeds: Record<PageId, { query?: string[]; mutation?: string[] }> = {
  nodes: { query: ['nodes'] },
  node: { query: ['node'] },
  jobs: { query: ['jobs'] },
  job: { query: ['job'] },
  'run-job': { mutation: ['submitJob'] },
  tenants: { query: ['tenants'] },
  users: { query: ['users'] },
  locations: { query: ['locations'] },
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
};

export function serves(c: Capabilities, page: PageId): boolean {
  const need = pageNeeds[page];
  return (need.query ?? []).every((q) => hasQuery(c, q)) && (need.mutation ?? []).every((m) => hasMutation(c, m));
}
