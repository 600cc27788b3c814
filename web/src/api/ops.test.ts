// The portal's operations against the schema the server serves
// (graph/schema): every operation whose root fields the server has must
// validate in full, so a renamed or removed field fails here, not in a
// browser. Operations on root fields the server does not serve yet are
// listed: their pages are left out until the fields arrive.
import { readdirSync, readFileSync } from 'node:fs';
import { stringifyDocument } from '@urql/core';
import { buildSchema, Kind, parse, validate, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';
import { describe, expect, it } from 'vitest';
import { capabilitiesOf } from '../lib/capabilities';
import { pageNeeds, serves } from '../lib/pages';
import { navFor } from '../lib/roles';
import * as ops from './ops';

// CAIRN_SCHEMA_DIR points elsewhere, e.g. at another revision's schema.
const dir = process.env.CAIRN_SCHEMA_DIR ? new URL(`file://${process.env.CAIRN_SCHEMA_DIR.replace(/\/?$/, '/')}`) : new URL('../../../graph/schema/', import.meta.url);
const schema = buildSchema(
  readdirSync(dir)
    .filter((f) => f.endsWith('.graphqls'))
    .map((f) => readFileSync(new URL(f, dir), 'utf8'))
    .join('\n'),
);

function rootType(s: GraphQLSchema, op: OperationDefinitionNode) {
  return op.operation === 'query' ? s.getQueryType() : op.operation === 'mutation' ? s.getMutationType() : s.getSubscriptionType();
}

const operations = Object.entries(ops)
  .filter(([, v]) => typeof v === 'object' && v !== null && 'definitions' in v)
  .map(([name, doc]) => {
    const parsed = parse(stringifyDocument(doc as never));
    const op = parsed.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
    return { name, parsed, op };
  })
  .filter((o) => o.op);

describe('operations against graph/schema', () => {
  const served = operations.filter(({ op }) => {
    const root = rootType(schema, op!);
    const fields = op!.selectionSet.selections.filter((s) => s.kind === Kind.FIELD).map((s) => (s as { name: { value: string } }).name.value);
    return root !== null && root !== undefined && fields.every((f) => f in root.getFields());
  });

  it('validate in full where the server serves their root fields', () => {
    expect(served.length).toBeGreaterThan(0);
    const invalid = served
      .map(({ name, parsed }) => ({ name, errors: validate(schema, parsed).map((e) => e.message) }))
      .filter((o) => o.errors.length > 0);
    expect(invalid).toEqual([]);
  });

  it('include the viewer, the event history and the audit queries', () => {
    const names = served.map((o) => o.name);
    for (const n of ['ViewerQuery', 'EventsQuery', 'EventQuery', 'EntityAsOfQuery', 'VerifyChainQuery']) {
      if (schema.getQueryType()?.getFields()[n.replace(/Query$/, '').replace(/^./, (c) => c.toLowerCase())]) expect(names).toContain(n);
    }
  });
});

describe('pages by what the server serves', () => {
  const fields = (t: ReturnType<GraphQLSchema['getQueryType']>) => ({ fields: Object.keys(t?.getFields() ?? {}).map((name) => ({ name })) });
  const caps = capabilitiesOf({
    __schema: { queryType: fields(schema.getQueryType()), mutationType: fields(schema.getMutationType()), subscriptionType: fields(schema.getSubscriptionType()) },
  });

  it('name only root fields some operation uses', () => {
    const used = new Set(
      operations.flatMap(({ op }) => op!.selectionSet.selections.filter((s) => s.kind === Kind.FIELD).map((s) => (s as { name: { value: string } }).name.value)),
    );
    for (const need of Object.values(pageNeeds)) for (const f of [...(need.query ?? []), ...(need.mutation ?? [])]) expect(used).toContain(f);
  });

  it('offer a page only when every operation it needs is served', () => {
    for (const page of Object.keys(pageNeeds) as (keyof typeof pageNeeds)[]) {
      const need = pageNeeds[page];
      const ok = [...(need.query ?? [])].every((q) => caps.query.has(q)) && [...(need.mutation ?? [])].every((m) => caps.mutation.has(m));
      expect({ page, served: serves(caps, page) }).toEqual({ page, served: ok });
    }
    // Whatever the server serves, the navigation never links to a page it does not.
    for (const role of ['ADMIN', 'OPERATOR', 'TENANT_ADMIN', 'TENANT_MEMBER', 'VENDOR', 'AUDITOR'] as const) {
      for (const item of navFor(role, caps).flatMap((s) => s.items)) expect(serves(caps, item.page)).toBe(true);
    }
  });
});
