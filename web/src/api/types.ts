// TypeScript shapes of the schema's types, as far as the portal selects them
// (graph/schema/*.graphqls is the source).

export type Role = 'ADMIN' | 'OPERATOR' | 'TENANT_ADMIN' | 'TENANT_MEMBER' | 'VENDOR' | 'AUDITOR' | 'AGENT';
export type Cursor = string;
export type JSONValue = unknown;

export interface PageInfo {
  hasNextPage: boolean;
  endCursor: string | null;
  /** Asked for by queries that page backwards (last: n). */
  hasPreviousPage?: boolean;
  startCursor?: string | null;
}

export interface Connection<T> {
  edges: { cursor: string; node: T }[];
  pageInfo: PageInfo;
  totalCount?: number | null;
}

export interface Label {
  key: string;
  value: string;
}

export interface Viewer {
  id: string;
  userId: string | null;
  name: string | null;
  role: Role;
  tenantId: string | null;
  nodeId: string | null;
  expiresAt: string | null;
  permissions: string[];
}

export type NodeStatus = 'ENROLLED' | 'ONLINE' | 'DRAINING' | 'DRAINED' | 'DISCONNECTED' | 'DOWN' | 'DECOMMISSIONED';
export const nodeStatuses: NodeStatus[] = ['ENROLLED', 'ONLINE', 'DRAINING', 'DRAINED', 'DISCONNECTED', 'DOWN', 'DECOMMISSIONED'];

export interface NodeSummary {
  id: string;
  hostname: string;
  status: NodeStatus;
  cordoned: boolean;
  labels: Label[];
  locationId: string | null;
  connectedAt: string | null;
  disconnectedAt: string | null;
  enrolledAt: string;
  updatedAt: string;
}

export interface NodeFacts {
  cpu: { model: string; cores: number; threads: number };
  memoryBytes: number;
  disks: { device: string; mountpoint: string; filesystem: string; sizeBytes: number }[];
  network: { name: string; mac: string; addresses: string[]; mtu: number }[];
  os: { name: string; version: string; kernel: string; arch: string };
}

export interface NodeDetail extends NodeSummary {
  drainReason: string | null;
  facts: NodeFacts | null;
  factsAt: string | null;
  version: number;
  allowedActions: string[];
}

export interface NodeStatSample {
  time: string;
  cpuPercent: number;
  memoryUsedBytes: number;
  memoryAvailableBytes: number;
  load1: number;
  load5: number;
  load15: number;
}

export type JobStatus =
  | 'QUEUED'
  | 'DISPATCHED'
  | 'RUNNING'
  | 'CANCELLING'
  | 'SUCCEEDED'
  | 'FAILED'
  | 'TIMED_OUT'
  | 'CANCELLED'
  | 'LOST';
export const jobStatuses: JobStatus[] = ['QUEUED', 'DISPATCHED', 'RUNNING', 'CANCELLING', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'LOST'];
export const finishedJobStatuses: ReadonlySet<JobStatus> = new Set(['SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'LOST']);

export type JobKind = 'ACTION' | 'EXEC' | 'SCRIPT';
export type TargetMode = 'ANY' | 'ALL';

export interface JobSpec {
  kind: JobKind;
  action: string | null;
  args: JSONValue;
  exec: { argv: string[]; workdir: string | null } | null;
  script: { interpreter: string; body: string } | null;
}

export interface JobSummary {
  id: string;
  parentId: string | null;
  status: JobStatus;
  spec: JobSpec;
  target: {
    nodeId: string | null;
    /** The node of nodeId, by name; null when the caller may not read it. */
    node?: { hostname: string } | null;
    selector: Label[];
    requirements?: { key: string; operator: LabelOperator; values: string[] }[];
    location?: string | null;
    every?: boolean;
    mode: TargetMode | null;
    maxParallel: number;
  };
  nodeId: string | null;
  submitter: string;
  submitterName: string;
  attempt: number;
  submittedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface JobDetail extends JobSummary {
  timeoutSeconds: number;
  queue: string | null;
  tenantId: string | null;
  result: {
    exitCode: number;
    output: JSONValue;
    error: string | null;
    cpuTimeMs: number;
    peakMemoryBytes: number;
  } | null;
  cancelReason: string | null;
  lostReason: string | null;
  counts: { succeeded: number; failed: number; timedOut: number; cancelled: number; lost: number } | null;
  allowedActions: string[];
  children: Connection<JobSummary>;
}

export type LogStream = 'STDOUT' | 'STDERR' | 'SYSTEM';
export interface JobLogChunk {
  seq: number;
  stream: LogStream;
  data: string;
  time: string;
}

export type TemplateStatus = 'VALIDATED' | 'PUBLISHED' | 'DEPRECATED';
export const templateStatuses: TemplateStatus[] = ['VALIDATED', 'PUBLISHED', 'DEPRECATED'];
export type VariableType = 'STRING' | 'NUMBER' | 'INTEGER' | 'BOOLEAN' | 'OBJECT' | 'ARRAY';

export interface TemplateVariable {
  name: string;
  type: VariableType;
  description?: string | null;
  default?: JSONValue;
  required: boolean;
  sensitive: boolean;
  pattern?: string | null;
  minLength?: number | null;
  maxLength?: number | null;
  minimum?: number | null;
  maximum?: number | null;
  enum?: JSONValue[] | null;
}

export interface TemplateFlavor {
  name: string;
  description?: string | null;
  variables: JSONValue;
}

export interface TemplateSummary {
  id: string;
  name: string;
  version: string;
  vendor: string;
  category: string | null;
  description: string | null;
  status: TemplateStatus;
  registeredAt: string;
}

export interface TemplateDetail extends TemplateSummary {
  digest: string;
  descriptor: JSONValue;
  variables: TemplateVariable[];
  flavors: TemplateFlavor[];
  publishedAt: string | null;
  deprecatedAt: string | null;
  deprecationReason: string | null;
  allowedActions: string[];
}

export type ServiceStatus =
  | 'REGISTERING'
  | 'REGISTERED'
  | 'STARTING'
  | 'RUNNING'
  | 'STOPPING'
  | 'STOPPED'
  | 'REMOVING'
  | 'REMOVED'
  | 'FAILED'
  | 'ROLLING_BACK'
  | 'ROLLBACK_FAILED'
  | 'MANUAL_CLEANUP_REQUIRED'
  | 'REPAIRING'
  | 'DEGRADED'
  | 'UPDATING'
  | 'REVERTING';
export const serviceStatuses: ServiceStatus[] = [
  'REGISTERING',
  'REGISTERED',
  'STARTING',
  'RUNNING',
  'STOPPING',
  'STOPPED',
  'REMOVING',
  'REMOVED',
  'FAILED',
  'ROLLING_BACK',
  'ROLLBACK_FAILED',
  'MANUAL_CLEANUP_REQUIRED',
  'REPAIRING',
  'DEGRADED',
  'UPDATING',
  'REVERTING',
];

export interface ServiceSummary {
  id: string;
  tenantId: string;
  /** The tenant of tenantId by name; null when the caller may not read it. */
  tenant?: { name: string } | null;
  name: string;
  templateName: string;
  templateVersion: string;
  status: ServiceStatus;
  requestedAt: string;
  updatedAt: string;
  /** 1 at registration, one more for each update. */
  revision?: number;
  /** The blueprint that declared the service, if one did. */
  blueprint?: string | null;
}

export interface Resource {
  id: string;
  /** The instance's name in the descriptor; null for resources planned before names were kept. */
  name?: string | null;
  plugin: string;
  type: string;
  status: string;
  dependsOn: string[];
  outputs: JSONValue;
  error: string | null;
  failedIn: string | null;
  updatedAt: string;
  /** The node the scheduler placed it on. */
  nodeId?: string | null;
  /** What the reconciler last found different; null when nothing is. */
  drift?: { kind: 'MISSING' | 'NODE_DOWN' | 'UNOBSERVED'; detail: string; since: string } | null;
  /** Health checks that have failed since it was made, with their last result. */
  health?: { name: string; healthy: boolean; detail: string | null; since: string }[];
}

export interface ServiceDetail extends ServiceSummary {
  variables: JSONValue;
  failedIn: string | null;
  cause: string | null;
  remaining: string[];
  outputs: JSONValue;
  resources: Resource[];
  version: number;
  allowedActions: string[];
}

export interface EventMetadata {
  commandId: string | null;
  correlationId: string | null;
  causationId: string | null;
  actor: string | null;
  actorName: string | null;
  tenantId: string | null;
}

export interface Event {
  cursor: Cursor;
  position: number;
  streamId: string;
  streamType: string;
  version: number;
  type: string;
  time: string;
  metadata: EventMetadata;
}

export interface EventDetail extends Event {
  schemaVersion: number;
  payload: JSONValue;
  prevHash: string;
  hash: string;
}

export type TenantStatus = 'ACTIVE' | 'SUSPENDED';
export interface Tenant {
  id: string;
  name: string;
  status: TenantStatus;
  suspendReason: string | null;
  createdAt: string;
}

export type UserStatus = 'ACTIVE' | 'DISABLED';
export interface User {
  id: string;
  name: string;
  role: Role;
  tenantId: string | null;
  status: UserStatus;
  createdAt: string;
}

export type TokenStatus = 'ACTIVE' | 'REVOKED' | 'EXPIRED';
export interface ApiToken {
  id: string;
  userId: string;
  role: Role;
  tenantId: string | null;
  status: TokenStatus;
  expiresAt: string;
  issuedAt: string;
  revokedAt: string | null;
  revokeReason: string | null;
}

export type LocationStatus = 'ACTIVE' | 'RETIRED';
export interface Location {
  id: string;
  name: string;
  description: string | null;
  status: LocationStatus;
  createdAt: string;
}

/** How a label requirement tests a node's label. */
export type LabelOperator = 'EQUALS' | 'NOT_EQUALS' | 'IN' | 'NOT_IN' | 'EXISTS' | 'NOT_EXISTS';

/** Amounts of CPU (in CPUs), memory and disk (in bytes). */
export interface Resources {
  cpu: number;
  memoryBytes: number;
  diskBytes: number;
}

/** What a node offers the scheduler and what is allocated on it. */
export interface NodeCapacity {
  allocatable: Resources;
  allocated: Resources;
  reserve: Resources | null;
  locationReserve: Resources;
  allocations: number;
  fill: number;
}

/** A location's capacity: totals, fullest nodes, what runs there. */
export interface LocationCapacity {
  allocatable: Resources;
  allocated: Resources;
  reserve: Resources;
  nodes: number;
  schedulableNodes: number;
  fullest: { nodeId: string; hostname: string; status: NodeStatus; capacity: NodeCapacity }[];
  running: {
    resourceId: string;
    resourceType: string;
    serviceId: string | null;
    serviceName: string | null;
    nodeId: string;
    hostname: string;
    request: Resources;
    allocatedAt: string;
  }[];
  runningTotal: number;
}

/** A cairnd replica serving the database (the cluster query). */
export interface Replica {
  id: string;
  address: string;
  version: string;
  startedAt: string;
  lastSeen: string;
  gone: boolean;
  owns: string[];
  self: boolean;
}

export type EntityType = 'NODE' | 'JOB' | 'TEMPLATE' | 'SERVICE' | 'RESOURCE' | 'TENANT' | 'USER' | 'API_TOKEN' | 'LOCATION';
export const entityTypes: EntityType[] = ['NODE', 'JOB', 'TEMPLATE', 'SERVICE', 'RESOURCE', 'TENANT', 'USER', 'API_TOKEN', 'LOCATION'];

export interface EntityState {
  type: EntityType;
  id: string;
  version: number;
  cursor: Cursor;
  time: string | null;
  state: JSONValue;
}

export interface ChainBreak {
  streamId: string;
  version: number;
  position: number;
  reason: string;
}

export interface ChainVerification {
  ok: boolean;
  streams: number;
  events: number;
  firstBreak: ChainBreak | null;
  breaks: ChainBreak[];
}

/** What an update does to one resource instance. */
export type ResourceAction = 'KEEP' | 'CREATE' | 'UPDATE' | 'REPLACE' | 'DESTROY';

export interface ServiceUpdatePlan {
  revision: number;
  fromVersion: string;
  toVersion: string;
  variables: { name: string; old: JSONValue; new: JSONValue }[];
  changes: {
    name: string;
    resourceId: string;
    plugin: string;
    type: string;
    action: ResourceAction;
    reasons: string[];
    properties: { path: string; old: JSONValue; new: JSONValue }[];
  }[];
  creates: number;
  updates: number;
  replaces: number;
  destroys: number;
  noChange: boolean;
}
