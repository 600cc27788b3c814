// URL state: every page keeps its filters, paging and selections in the query
// string, so that a link shows the same view to whoever opens it.

export type ParamKind = 'string' | 'list' | 'bool' | 'int';
export type ParamSpec = Readonly<Record<string, ParamKind>>;

type ValueOf<K extends ParamKind> = K extends 'list'
  ? string[]
  : K extends 'bool'
    ? boolean
    : K extends 'int'
      ? number | undefined
      : string;

export type ParamValues<S extends ParamSpec> = { [P in keyof S]: ValueOf<S[P]> };

/** Reads the parameters of spec from a query string; absent or malformed ones get their empty value. */
export function readParams<S extends ParamSpec>(search: string | URLSearchParams, spec: S): ParamValues<S> {
  const params = typeof search === 'string' ? new URLSearchParams(search) : search;
  const out: Record<string, unknown> = {};
  for (const [key, kind] of Object.entries(spec)) {
    switch (kind) {
      case 'list':
        out[key] = params
          .getAll(key)
          .flatMap((v) => v.split(','))
          .map((v) => v.trim())
          .filter((v) => v !== '');
        break;
      case 'bool': {
        const v = params.get(key);
        out[key] = v === '1' || v === 'true';
        break;
      }
      case 'int': {
        const v = params.get(key);
        const n = v === null || v.trim() === '' ? NaN : Number(v);
        out[key] = Number.isInteger(n) ? n : undefined;
        break;
      }
      default:
        out[key] = params.get(key)?.trim() ?? '';
    }
  }
  return out as ParamValues<S>;
}

/**
 * Writes values as a query string ("" or "?a=b&..."). Empty values are left
 * out, lists become repeated keys, and keys keep the order of spec, so that
 * the same state always gives the same link.
 */
export function writeParams<S extends ParamSpec>(values: Partial<ParamValues<S>>, spec: S): string {
  const params = new URLSearchParams();
  for (const [key, kind] of Object.entries(spec)) {
    const v = (values as Record<string, unknown>)[key];
    if (v === undefined || v === null) continue;
    switch (kind) {
      case 'list':
        for (const item of v as string[]) if (item !== '') params.append(key, item);
        break;
      case 'bool':
        if (v === true) params.set(key, '1');
        break;
      case 'int':
        if (typeof v === 'number' && Number.isInteger(v)) params.set(key, String(v));
        break;
      default:
        if (typeof v === 'string' && v.trim() !== '') params.set(key, v.trim());
    }
  }
  const s = params.toString();
  return s === '' ? '' : `?${s}`;
}

/** Returns the current values with some replaced, as a query string. */
export function updateParams<S extends ParamSpec>(
  search: string,
  spec: S,
  changes: Partial<ParamValues<S>>,
): string {
  return writeParams({ ...readParams(search, spec), ...changes }, spec);
}

export interface LabelTerm {
  key: string;
  value: string;
}

/** Parses "zone=a, role=db" into label terms, or says which term is malformed. */
export function parseLabels(text: string): { labels: LabelTerm[]; error?: string } {
  const labels: LabelTerm[] = [];
  for (const raw of text.split(',')) {
    const term = raw.trim();
    if (term === '') continue;
    const eq = term.indexOf('=');
    if (eq <= 0) return { labels, error: `"${term}" is not key=value` };
    const key = term.slice(0, eq).trim();
    const value = term.slice(eq + 1).trim();
    if (key === '') return { labels, error: `"${term}" has no key` };
    labels.push({ key, value });
  }
  return { labels };
}

export function formatLabels(labels: readonly LabelTerm[]): string {
  return labels.map((l) => `${l.key}=${l.value}`).join(', ');
}

/**
 * Turns the value of a datetime-local input (local time, no zone) into an
 * RFC 3339 instant in UTC; "" and unparsable values give undefined.
 */
export function localInputToISO(value: string): string | undefined {
  if (value.trim() === '') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

/** The inverse of localInputToISO, for filling a datetime-local input. */
export function isoToLocalInput(iso: string | undefined | null): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
