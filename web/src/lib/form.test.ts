import { describe, expect, it } from 'vitest';
import type { TemplateFlavor, TemplateVariable } from '../api/types';
import { check, convert, fieldsFor, initialValues, switchFlavor, variableOfProblem } from './form';

const v = (over: Partial<TemplateVariable> & Pick<TemplateVariable, 'name' | 'type'>): TemplateVariable => ({
  required: false,
  sensitive: false,
  ...over,
});

const vars: TemplateVariable[] = [
  v({ name: 'dbname', type: 'STRING', required: true, pattern: '^[a-z]+$', minLength: 3, maxLength: 8, description: 'Database name' }),
  v({ name: 'replicas', type: 'INTEGER', default: 1, minimum: 1, maximum: 5 }),
  v({ name: 'ratio', type: 'NUMBER', minimum: 0, maximum: 1 }),
  v({ name: 'tls', type: 'BOOLEAN', default: true }),
  v({ name: 'backups', type: 'BOOLEAN' }),
  v({ name: 'size', type: 'STRING', enum: ['small', 'large'], default: 'small' }),
  v({ name: 'password', type: 'STRING', sensitive: true, default: 'hunter22' }),
  v({ name: 'tags', type: 'OBJECT' }),
  v({ name: 'ports', type: 'ARRAY', default: [80] }),
];

const ha: TemplateFlavor = { name: 'ha', variables: { replicas: 3, size: 'large' } };

describe('fieldsFor', () => {
  it('picks a control per type and states the rules', () => {
    const f = Object.fromEntries(fieldsFor(vars).map((x) => [x.name, x]));
    expect(f.dbname!.kind).toBe('text');
    expect(f.dbname!.required).toBe(true);
    expect(f.dbname!.rules).toEqual(['at least 3 characters', 'at most 8 characters', 'matches ^[a-z]+$']);
    expect(f.dbname!.input).toEqual({ minLength: 3, maxLength: 8 });
    expect(f.replicas!.kind).toBe('integer');
    expect(f.replicas!.input).toMatchObject({ min: 1, max: 5, step: '1' });
    expect(f.replicas!.rules).toEqual(['a whole number', 'at least 1', 'at most 5']);
    expect(f.ratio!.kind).toBe('number');
    expect(f.tls!.kind).toBe('checkbox');
    expect(f.backups!.kind).toBe('tristate');
    expect(f.size!.kind).toBe('select');
    expect(f.size!.options).toEqual([
      { value: '"small"', label: 'small' },
      { value: '"large"', label: 'large' },
    ]);
    expect(f.password!.kind).toBe('secret');
    expect(f.password!.rules).toContain('secret: not shown again after deployment');
    expect(f.tags!.kind).toBe('json');
    expect(f.ports!.rules).toEqual(['a JSON array']);
  });
});

describe('initialValues', () => {
  it('starts from defaults and never prefills a secret', () => {
    expect(initialValues(vars)).toEqual({
      dbname: '',
      replicas: '1',
      ratio: '',
      tls: true,
      backups: '',
      size: '"small"',
      password: '',
      tags: '',
      ports: '[\n  80\n]',
    });
  });

  it('prefers the flavor over the default', () => {
    const i = initialValues(vars, ha);
    expect(i.replicas).toBe('3');
    expect(i.size).toBe('"large"');
  });

  it('keeps what the user changed when the flavor changes', () => {
    const values = { ...initialValues(vars), replicas: '2', dbname: 'orders' };
    const next = switchFlavor(vars, values, new Set(['replicas', 'dbname']), ha);
    expect(next.replicas).toBe('2');
    expect(next.dbname).toBe('orders');
    expect(next.size).toBe('"large"');
  });
});

describe('convert', () => {
  it('converts valid values to JSON types and leaves empty optional fields out', () => {
    const values = { ...initialValues(vars), dbname: 'orders', ratio: '0.5', tags: '{"team":"a"}', backups: 'false' };
    const c = convert(vars, values);
    expect(c.errors).toEqual({});
    expect(c.variables).toEqual({
      dbname: 'orders',
      replicas: 1,
      ratio: 0.5,
      tls: true,
      backups: false,
      size: 'small',
      tags: { team: 'a' },
      ports: [80],
    });
    expect('password' in c.variables).toBe(false);
  });

  it('sends a secret only when one is typed', () => {
    const c = convert(vars, { ...initialValues(vars), dbname: 'orders', password: 's3cret!' });
    expect(c.variables.password).toBe('s3cret!');
  });

  it('reports each broken rule in the server’s words', () => {
    const values = { ...initialValues(vars), dbname: 'ab', replicas: '7', ratio: 'lots', tags: '{"team":' };
    const c = convert(vars, values);
    expect(c.errors.dbname).toBe('must be at least 3 characters long, got 2');
    expect(c.errors.replicas).toBe('must be at most 5');
    expect(c.errors.ratio).toBe('must be a number, got "lots"');
    expect(c.errors.tags).toMatch(/^is not valid JSON/);
  });

  it('requires required variables unless the flavor gives them', () => {
    expect(convert(vars, initialValues(vars)).errors.dbname).toBe('is required');
    const req = [v({ name: 'region', type: 'STRING', required: true })];
    const eu: TemplateFlavor = { name: 'eu', variables: { region: 'eu-west' } };
    expect(convert(req, { region: '' }, eu).errors).toEqual({});
  });

  it('checks integers, patterns and JSON shapes', () => {
    expect(convert(vars, { ...initialValues(vars), dbname: 'Orders1' }).errors.dbname).toBe('must match the pattern "^[a-z]+$"');
    expect(convert(vars, { ...initialValues(vars), dbname: 'orders', replicas: '2.5' }).errors.replicas).toBe('must be an integer, got number');
    expect(convert(vars, { ...initialValues(vars), dbname: 'orders', tags: '[1]' }).errors.tags).toBe('must be an object, got array');
    expect(convert(vars, { ...initialValues(vars), dbname: 'abcdefghij' }).errors.dbname).toBe('must be at most 8 characters long, got 10');
  });
});

describe('check', () => {
  it('applies enum and bounds', () => {
    expect(check(vars[5]!, 'medium')).toEqual(['must be one of small, large']);
    expect(check(vars[2]!, -1)).toEqual(['must be at least 0']);
    expect(check(vars[0]!, 42)).toEqual(['must be a string, got number']);
  });

  it('leaves patterns JavaScript cannot compile to the server', () => {
    expect(check(v({ name: 'x', type: 'STRING', pattern: '(?P<name>a)' }), 'zzz')).toEqual([]);
  });
});

describe('variableOfProblem', () => {
  it('finds the variable from the field or the message', () => {
    const names = ['replicas', 'dbname'];
    expect(variableOfProblem('variables.replicas', 'must be at most 5', names)).toBe('replicas');
    expect(variableOfProblem('input.variables.dbname', 'x', names)).toBe('dbname');
    expect(variableOfProblem(undefined, 'variables.replicas: must be at most 5', names)).toBe('replicas');
    expect(variableOfProblem('name', 'is taken', names)).toBeUndefined();
    expect(variableOfProblem('variables.other', 'x', names)).toBeUndefined();
  });
});
