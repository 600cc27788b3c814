// What the server's API offers. The API grows area by area, and a field the
// server does not serve yet is absent from its schema: the portal reads the
// root fields once by introspection and leaves out the pages and actions
// whose operations are missing, rather than showing them broken.
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
