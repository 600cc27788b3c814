import { describe, expect, it } from 'vitest';
import { formatLabels, isoToLocalInput, localInputToISO, parseLabels, readParams, updateParams, writeParams } from './urlState';

const spec = { q: 'string', status: 'list', all: 'bool', page: 'int' } as const;

describe('readParams', () => {
  it('reads each kind, with empty values for what is absent or malformed', () => {
    expect(readParams('?q=web&status=ONLINE&status=DOWN&all=1&page=3', spec)).toEqual({
      q: 'web',
      status: ['ONLINE', 'DOWN'],
      all: true,
      page: 3,
    });
    expect(readParams('', spec)).toEqual({ q: '', status: [], all: false, page: undefined });
    expect(readParams('?page=x&all=0', spec)).toMatchObject({ page: undefined, all: false });
  });

  it('accepts comma-separated lists too', () => {
    expect(readParams('?status=ONLINE,DOWN', spec).status).toEqual(['ONLINE', 'DOWN']);
  });
});

describe('writeParams', () => {
  it('leaves empty values out and keeps the order of the spec', () => {
    expect(writeParams({ page: 2, q: 'a b', status: ['ONLINE'], all: false }, spec)).toBe('?q=a+b&status=ONLINE&page=2');
    expect(writeParams({ q: '  ', status: [] }, spec)).toBe('');
  });

  it('round-trips', () => {
    const values = { q: 'db', status: ['ONLINE', 'DRAINED'], all: true, page: 4 };
    expect(readParams(writeParams(values, spec), spec)).toEqual(values);
  });

  it('updates one value and keeps the others', () => {
    expect(updateParams('?q=db&page=2', spec, { page: undefined, all: true })).toBe('?q=db&all=1');
  });
});

describe('labels', () => {
  it('parses key=value terms', () => {
    expect(parseLabels(' zone=a, role = db ,')).toEqual({
      labels: [
        { key: 'zone', value: 'a' },
        { key: 'role', value: 'db' },
      ],
    });
    expect(parseLabels('').labels).toEqual([]);
    expect(parseLabels('zone=a, oops').error).toBe('"oops" is not key=value');
    expect(parseLabels('=a').error).toBe('"=a" is not key=value');
  });

  it('formats them back', () => {
    expect(formatLabels([{ key: 'zone', value: 'a' }, { key: 'gpu', value: '' }])).toBe('zone=a, gpu=');
  });
});

describe('datetime-local values', () => {
  it('convert to UTC instants and back', () => {
    const iso = localInputToISO('2025-03-04T05:06:07');
    expect(iso).toMatch(/^2025-03-0\dT\d\d:06:07\.000Z$/);
    expect(isoToLocalInput(iso)).toBe('2025-03-04T05:06:07');
    expect(localInputToISO('')).toBeUndefined();
    expect(localInputToISO('nonsense')).toBeUndefined();
    expect(isoToLocalInput(undefined)).toBe('');
  });
});
