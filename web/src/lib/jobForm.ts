// The run-a-job form: its values, and their conversion into a SubmitJobInput
// with a message per field at fault.
import type { SubmitJobInput } from '../api/ops';
import type { JobKind, TargetMode } from '../api/types';

export interface JobForm {
  /** One node, a set of nodes (a location and/or a label selector), or every node. */
  targetBy: 'node' | 'selector' | 'every';
  nodeId: string;
  /** A label selector as text: role=web, zone in (a,b), !gpu. */
  selector: string;
  /** The location of the set; empty for any. */
  location: string;
  mode: TargetMode;
  maxParallel: string;
  kind: JobKind;
  interpreter: string;
  body: string;
  /** EXEC: one argument per line, the program first. */
  argv: string;
  workdir: string;
  action: string;
  /** ACTION: its arguments as a JSON object. */
  args: string;
  timeoutSeconds: string;
}

export const emptyJobForm: JobForm = {
  targetBy: 'node',
  nodeId: '',
  selector: '',
  location: '',
  mode: 'ANY',
  maxParallel: '0',
  kind: 'SCRIPT',
  interpreter: 'sh',
  body: '',
  argv: '',
  workdir: '',
  action: '',
  args: '{}',
  timeoutSeconds: '3600',
};

export function jobInput(f: JobForm): { input?: SubmitJobInput; errors: Partial<Record<keyof JobForm, string>> } {
  const errors: Partial<Record<keyof JobForm, string>> = {};
  const target: SubmitJobInput['target'] = {};
  if (f.targetBy === 'node') {
    if (f.nodeId.trim() === '') errors.nodeId = 'Choose a node.';
    else target.nodeId = f.nodeId.trim();
  } else {
    if (f.targetBy === 'every') target.every = true;
    else if (f.selector.trim() === '' && f.location === '') errors.selector = 'Give a label selector or choose a location.';
    else {
      if (f.selector.trim() !== '') target.match = f.selector.trim();
      if (f.location !== '') target.location = f.location;
    }
    target.mode = f.mode;
    if (f.mode === 'ALL') {
      const n = Number(f.maxParallel || '0');
      if (!Number.isInteger(n) || n < 0) errors.maxParallel = 'A whole number, 0 for no limit.';
      else target.maxParallel = n;
    }
  }
  const spec: SubmitJobInput['spec'] = { kind: f.kind };
  switch (f.kind) {
    case 'SCRIPT':
      if (f.body.trim() === '') errors.body = 'Write the script.';
      if (f.interpreter.trim() === '') errors.interpreter = 'Name the interpreter.';
      spec.script = { interpreter: f.interpreter.trim(), body: f.body };
      break;
    case 'EXEC': {
      const argv = f.argv.split('\n').map((a) => a.replace(/\r$/, '')).filter((a) => a !== '');
      if (argv.length === 0) errors.argv = 'Give the program, then one argument per line.';
      spec.exec = { argv, ...(f.workdir.trim() ? { workdir: f.workdir.trim() } : {}) };
      break;
    }
    case 'ACTION': {
      if (f.action.trim() === '') errors.action = 'Name the action, e.g. system.info.';
      spec.action = f.action.trim();
      try {
        const args: unknown = f.args.trim() === '' ? {} : JSON.parse(f.args);
        if (args === null || typeof args !== 'object' || Array.isArray(args)) errors.args = 'The arguments must be a JSON object.';
        else spec.args = args;
      } catch (e) {
        errors.args = `Not valid JSON: ${(e as Error).message}`;
      }
      break;
    }
  }
  const timeout = Number(f.timeoutSeconds);
  if (!Number.isInteger(timeout) || timeout <= 0) errors.timeoutSeconds = 'A whole number of seconds, more than 0.';
  if (Object.keys(errors).length > 0) return { errors };
  return { input: { spec, target, timeoutSeconds: timeout }, errors };
}
