import { humanize } from '../lib/format';

const tone: Record<string, string> = {
  ONLINE: 'good',
  UP: 'good',
  RUNNING: 'good',
  SUCCEEDED: 'good',
  PUBLISHED: 'good',
  ACTIVE: 'good',
  REGISTERED: 'info',
  VALIDATED: 'info',
  ENROLLED: 'info',
  CREATED: 'info',
  QUEUED: 'info',
  DISPATCHED: 'info',
  STARTING: 'busy',
  STOPPING: 'busy',
  REGISTERING: 'busy',
  REMOVING: 'busy',
  CREATING: 'busy',
  DESTROYING: 'busy',
  DRAINING: 'busy',
  CANCELLING: 'busy',
  ROLLING_BACK: 'busy',
  REPAIRING: 'busy',
  PENDING: 'busy',
  STOPPED: 'muted',
  DRAINED: 'muted',
  REMOVED: 'muted',
  DESTROYED: 'muted',
  CANCELLED: 'muted',
  DEPRECATED: 'muted',
  RETIRED: 'muted',
  REVOKED: 'muted',
  EXPIRED: 'muted',
  DECOMMISSIONED: 'muted',
  DISABLED: 'muted',
  DISCONNECTED: 'warn',
  SUSPENDED: 'warn',
  TIMED_OUT: 'bad',
  FAILED: 'bad',
  LOST: 'bad',
  DOWN: 'bad',
  GONE: 'bad',
  ROLLBACK_FAILED: 'bad',
  MANUAL_CLEANUP_REQUIRED: 'bad',
  DEGRADED: 'bad',
};

export function Status({ value }: { value: string }) {
  return (
    <span className={`status ${tone[value] ?? 'info'}`} data-status={value}>
      {humanize(value)}
    </span>
  );
}
