// From an event's stream to the entity it belongs to, and to its page.
import { entityTypes, type EntityType } from '../api/types';
import type { PageId } from './pages';

/** The entity a stream holds: stream type "node", id "node-n1" → NODE n1. */
export function entityOfStream(streamType: string, streamId: string): { type: EntityType; id: string } | undefined {
  const type = streamType.toUpperCase() as EntityType;
  if (!entityTypes.includes(type)) return undefined;
  const prefix = `${streamType}-`;
  const id = streamId.startsWith(prefix) ? streamId.slice(prefix.length) : streamId;
  return id === '' ? undefined : { type, id };
}

/** The portal page of an entity, where there is one. */
export function entityPage(type: EntityType, id: string): { page: PageId; path: string } | undefined {
  const e = encodeURIComponent;
  switch (type) {
    case 'NODE':
      return { page: 'node', path: `/nodes/${e(id)}` };
    case 'JOB':
      return { page: 'job', path: `/jobs/${e(id)}` };
    case 'SERVICE':
      return { page: 'service', path: `/services/${e(id)}` };
    case 'TEMPLATE': {
      const at = id.lastIndexOf('@');
      return at > 0 ? { page: 'template', path: `/catalog/${e(id.slice(0, at))}/${e(id.slice(at + 1))}` } : undefined;
    }
    default:
      return undefined;
  }
}

/** The stream id of an entity, for filtering the history by it. */
export function streamOfEntity(type: EntityType, id: string): string {
  return `${type.toLowerCase()}-${id}`;
}
