// The deploy form, generated from a template version's variables: one field
// per variable, its kind from the type, its constraints and messages from the
// variable's validation rules (the same wording the server uses), sensitive
// values masked and never prefilled.
import type { TemplateFlavor, TemplateVariable, VariableType } from '../api/types';

export type FieldKind = 'text' | 'secret' | 'number' | 'integer' | 'checkbox' | 'tristate' | 'select' | 'json';

export interface FieldOption {
  /** The option's value in the form: the JSON text of the enum item. */
  value: string;
  label: string;
}

export interface FieldModel {
  name: string;
  kind: FieldKind;
  type: VariableType;
  required: boolean;
  sensitive: boolean;
  description?: string;
  /** The rules in words, shown under the field. */
  rules: string[];
  options?: FieldOption[];
  /** Attributes for the input, so the browser helps too. */
  input: { min?: number; max?: number; minLength?: number; maxLength?: number; step?: string };
}

/** Form values: text for every kind but checkbox. */
export type FormValues = Record<string, string | boolean>;

export function fieldsFor(variables: readonly TemplateVariable[]): FieldModel[] {
  return variables.map(fieldFor);
}

function fieldFor(v: TemplateVariable): FieldModel {
  const rules: string[] = [];
  const input: FieldModel['input'] = {};
  let kind: FieldKind;
  let options: FieldOption[] | undefined;
  if (v.enum && v.enum.length > 0) {
    kind = 'select';
    options = v.enum.map((item) => ({ value: JSON.stringify(item), label: display(item) }));
    rules.push(`one of ${v.enum.map(display).join(', ')}`);
  } else {
    switch (v.type) {
      case 'STRING':
        kind = v.sensitive ? 'secret' : 'text';
        break;
      case 'NUMBER':
        kind = 'number';
        input.step = 'any';
        break;
      case 'INTEGER':
        kind = 'integer';
        input.step = '1';
        break;
      case 'BOOLEAN':
        kind = v.required || v.default !== null && v.default !== undefined ? 'checkbox' : 'tristate';
        break;
      default:
        kind = 'json';
        rules.push(v.type === 'OBJECT' ? 'a JSON object' : 'a JSON array');
    }
  }
  if (v.type === 'STRING') {
    if (v.minLength != null) {
      input.minLength = v.minLength;
      rules.push(`at least ${plural(v.minLength, 'character')}`);
    }
    if (v.maxLength != null) {
      input.maxLength = v.maxLength;
      rules.push(`at most ${plural(v.maxLength, 'character')}`);
    }
    if (v.pattern) rules.push(`matches ${v.pattern}`);
  }
  if (v.type === 'NUMBER' || v.type === 'INTEGER') {
    if (v.type === 'INTEGER') rules.push('a whole number');
    if (v.minimum != null) {
      input.min = v.minimum;
      rules.push(`at least ${formatNumber(v.minimum)}`);
    }
    if (v.maximum != null) {
      input.max = v.maximum;
      rules.push(`at most ${formatNumber(v.maximum)}`);
    }
  }
  if (v.sensitive) rules.push('secret: not shown again after deployment');
  return {
    name: v.name,
    kind,
    type: v.type,
    required: v.required,
    sensitive: v.sensitive,
    description: v.description ?? undefined,
    rules,
    options,
    input,
  };
}

/** The value a variable starts with: the flavor's, else its default; never a secret's. */
export function initialValue(v: TemplateVariable, flavor?: TemplateFlavor | null): string | boolean {
  const fromFlavor = flavorValue(flavor, v.name);
  const start = fromFlavor !== undefined ? fromFlavor : v.default;
  const field = fieldFor(v);
  if (v.sensitive && field.kind === 'secret') return '';
  return toFormValue(field, start);
}

export function initialValues(variables: readonly TemplateVariable[], flavor?: TemplateFlavor | null): FormValues {
  const out: FormValues = {};
  for (const v of variables) out[v.name] = initialValue(v, flavor);
  return out;
}

/**
 * Values after choosing another flavor: the fields the user changed keep
 * their value, the others take the new flavor's value or the default.
 */
export function switchFlavor(
  variables: readonly TemplateVariable[],
  values: FormValues,
  touched: ReadonlySet<string>,
  flavor?: TemplateFlavor | null,
): FormValues {
  const next = initialValues(variables, flavor);
  for (const name of touched) if (name in values) next[name] = values[name]!;
  return next;
}

function flavorValue(flavor: TemplateFlavor | null | undefined, name: string): unknown {
  const vars = flavor?.variables;
  if (vars && typeof vars === 'object' && !Array.isArray(vars) && name in vars) {
    const v = (vars as Record<string, unknown>)[name];
    return v === null ? undefined : v;
  }
  return undefined;
}

function toFormValue(field: FieldModel, value: unknown): string | boolean {
  if (field.kind === 'checkbox') return value === true;
  if (value === undefined || value === null) return '';
  switch (field.kind) {
    case 'select':
      return JSON.stringify(value);
    case 'tristate':
      return value === true ? 'true' : value === false ? 'false' : '';
    case 'json':
      return JSON.stringify(value, null, 2);
    default:
      return typeof value === 'string' ? value : String(value);
  }
}

export interface Converted {
  /** The variables to send: only those given in the form. */
  variables: Record<string, unknown>;
  /** Messages by variable name; empty when everything is valid. */
  errors: Record<string, string>;
}

/**
 * Checks the form and converts it into the createService variables. An empty
 * optional field is left out, so the server applies the flavor or default; a
 * required one must be filled unless the chosen flavor gives it.
 */
export function convert(
  variables: readonly TemplateVariable[],
  values: FormValues,
  flavor?: TemplateFlavor | null,
): Converted {
  const out: Record<string, unknown> = {};
  const errors: Record<string, string> = {};
  for (const v of variables) {
    const field = fieldFor(v);
    const raw = values[v.name];
    const parsed = parseValue(field, raw);
    if ('error' in parsed) {
      errors[v.name] = parsed.error;
      continue;
    }
    if (parsed.value === undefined) {
      if (v.required && flavorValue(flavor, v.name) === undefined) errors[v.name] = 'is required';
      continue;
    }
    const problems = check(v, parsed.value);
    if (problems.length > 0) {
      errors[v.name] = problems.join('; ');
      continue;
    }
    out[v.name] = parsed.value;
  }
  return { variables: out, errors };
}

function parseValue(field: FieldModel, raw: string | boolean | undefined): { value: unknown } | { error: string } {
  if (field.kind === 'checkbox') return { value: raw === true };
  const text = typeof raw === 'string' ? raw : '';
  if (field.kind !== 'secret' && field.kind !== 'text' ? text.trim() === '' : text === '') return { value: undefined };
  switch (field.kind) {
    case 'select':
      try {
        return { value: JSON.parse(text) };
      } catch {
        return { error: 'choose one of the options' };
      }
    case 'tristate':
      return { value: text === 'true' };
    case 'number':
    case 'integer': {
      const n = Number(text.trim());
      if (!Number.isFinite(n)) return { error: `must be ${field.kind === 'integer' ? 'an integer' : 'a number'}, got "${text.trim()}"` };
      return { value: n };
    }
    case 'json': {
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (e) {
        return { error: `is not valid JSON: ${(e as Error).message}` };
      }
      return { value };
    }
    default:
      return { value: text };
  }
}

/** The variable's rules applied to a value, in the server's words. */
export function check(v: TemplateVariable, value: unknown): string[] {
  const typeError = checkType(v.type, value);
  if (typeError) return [typeError];
  const out: string[] = [];
  if (typeof value === 'string') {
    if (v.pattern) {
      let re: RegExp | undefined;
      try {
        re = new RegExp(v.pattern, 'u');
      } catch {
        re = undefined; // RE2 syntax JavaScript does not know: the server checks it.
      }
      if (re && !re.test(value)) out.push(`must match the pattern "${v.pattern}"`);
    }
    const n = [...value].length;
    if (v.minLength != null && n < v.minLength) out.push(`must be at least ${plural(v.minLength, 'character')} long, got ${n}`);
    if (v.maxLength != null && n > v.maxLength) out.push(`must be at most ${plural(v.maxLength, 'character')} long, got ${n}`);
  }
  if (typeof value === 'number') {
    if (v.minimum != null && value < v.minimum) out.push(`must be at least ${formatNumber(v.minimum)}`);
    if (v.maximum != null && value > v.maximum) out.push(`must be at most ${formatNumber(v.maximum)}`);
  }
  if (v.enum && v.enum.length > 0) {
    const want = JSON.stringify(value);
    if (!v.enum.some((item) => JSON.stringify(item) === want)) out.push(`must be one of ${v.enum.map(display).join(', ')}`);
  }
  return out;
}

function checkType(type: VariableType, value: unknown): string | undefined {
  const got = jsonType(value);
  const ok =
    (type === 'STRING' && got === 'string') ||
    (type === 'NUMBER' && (got === 'number' || got === 'integer')) ||
    (type === 'INTEGER' && got === 'integer') ||
    (type === 'BOOLEAN' && got === 'boolean') ||
    (type === 'OBJECT' && got === 'object') ||
    (type === 'ARRAY' && got === 'array');
  if (ok) return undefined;
  const want = type.toLowerCase();
  return `must be ${/^[aeiou]/.test(want) ? 'an' : 'a'} ${want}, got ${got === 'integer' ? 'number' : got}`;
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/**
 * The variable a server-side INVALID_INPUT problem is about, from its field
 * ("variables.replicas") or the start of its message ("variables.replicas: ...").
 */
export function variableOfProblem(field: string | undefined, message: string, names: readonly string[]): string | undefined {
  const candidates = [field ?? '', message.split(':')[0] ?? ''];
  for (const c of candidates) {
    const m = /(?:^|\.)variables\.([A-Za-z_][A-Za-z0-9_]*)/.exec(c.trim()) ?? /^([A-Za-z_][A-Za-z0-9_]*)$/.exec(c.trim());
    if (m && names.includes(m[1]!)) return m[1];
  }
  return undefined;
}

function display(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function formatNumber(n: number): string {
  return String(n);
}
