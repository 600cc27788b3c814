// Every GraphQL operation the portal sends, typed by hand against
// graph/schema/*.graphqls.
import { gql } from '@urql/core';
import type {
  ApiToken,
  ChainVerification,
  Connection,
  Cursor,
  EntityState,
  EntityType,
  Event,
  EventDetail,
  JobDetail,
  JobKind,
  JobLogChunk,
  JobStatus,
  JobSummary,
  JSONValue,
  Label,
  Location,
  LocationCapacity,
  LocationStatus,
  NodeDetail,
  NodeStatSample,
  NodeStatus,
  NodeSummary,
  Replica,
  Role,
  ServiceDetail,
  ServiceStatus,
  ServiceSummary,
  ServiceUpdatePlan,
  TargetMode,
  TemplateDetail,
  TemplateStatus,
  TemplateSummary,
  Tenant,
  TenantStatus,
  User,
  UserStatus,
  Viewer,
} from './types';

/**
 * Asked beside the answers a page keeps live: the read models' position when
 * the request began, for the change subscription to start after.
 */
interface Live {
  readModelsCursor: Cursor;
}

interface Page {
  first?: number;
  after?: string | null;
}
interface Payload {
  cursor: Cursor;
  duplicate: boolean;
}

// ---- viewer

export const ViewerQuery = gql<{ viewer: Viewer }, Record<string, never>>`
  query Viewer {
    viewer {
      id
      userId
      name
      role
      tenantId
      nodeId
      expiresAt
      permissions
    }
  }
`;

// ---- nodes

const NodeSummaryFields = gql`
  fragment NodeSummaryFields on ServerNode {
    id
    hostname
    status
    cordoned
    labels { key value }
    locationId
    connectedAt
    disconnectedAt
    enrolledAt
    updatedAt
  }
`;

const JobSummaryFields = gql`
  fragment JobSummaryFields on Job {
    id
    parentId
    status
    spec {
      kind
      action
      args
      exec { argv workdir }
      script { interpreter body }
    }
    target { nodeId node { hostname } selector { key value } requirements { key operator values } location every mode maxParallel }
    nodeId
    submitter
    submitterName
    attempt
    submittedAt
    startedAt
    finishedAt
  }
`;

export interface NodeFilter {
  status?: NodeStatus[];
  labels?: Label[];
  locationId?: string;
  hostname?: string;
}

export const NodesQuery = gql<
  { nodes: Connection<NodeSummary> } & Live,
  Page & { filter?: NodeFilter; consistentWith?: Cursor }
>`
  query Nodes($first: Int, $after: String, $filter: NodeFilter, $consistentWith: Cursor) {
    nodes(first: $first, after: $after, filter: $filter, consistentWith: $consistentWith) {
      edges { cursor node { ...NodeSummaryFields } }
      pageInfo { hasNextPage endCursor }
    }
    readModelsCursor
  }
  ${NodeSummaryFields}
`;

export const NodeQuery = gql<{ node: NodeDetail | null } & Live, { id: string; consistentWith?: Cursor }>`
  query Node($id: ID!, $consistentWith: Cursor) {
    node: serverNode(id: $id, consistentWith: $consistentWith) {
      ...NodeSummaryFields
      drainReason
      factsAt
      version
      allowedActions
      facts {
        cpu { model cores threads }
        memoryBytes
        disks { device mountpoint filesystem sizeBytes }
        network { name mac addresses mtu }
        os { name version kernel arch }
      }
    }
    readModelsCursor
  }
  ${NodeSummaryFields}
`;

export const NodeStatsQuery = gql<
  { node: { id: string; statistics: NodeStatSample[] } | null },
  { id: string; range: { from?: string; to?: string }; maxPoints: number }
>`
  query NodeStats($id: ID!, $range: TimeRange, $maxPoints: Int) {
    node: serverNode(id: $id) {
      id
      statistics(range: $range, maxPoints: $maxPoints) {
        time
        cpuPercent
        memoryUsedBytes
        memoryAvailableBytes
        load1
        load5
        load15
      }
    }
  }
`;

export const NodeChangedSubscription = gql<
  { nodeChanged: { event: { cursor: Cursor; type: string }; node: NodeSummary | null } },
  { id?: string; after?: Cursor }
>`
  subscription NodeChanged($id: ID, $after: Cursor) {
    nodeChanged(id: $id, after: $after) {
      event { cursor type }
      node { ...NodeSummaryFields }
    }
  }
  ${NodeSummaryFields}
`;

const NodePayloadFields = gql`
  fragment NodePayloadFields on NodePayload {
    cursor
    duplicate
    node { id status cordoned allowedActions }
  }
`;

export type NodeMutationResult = Payload & { node: { id: string; status: NodeStatus; cordoned: boolean; allowedActions: string[] } };

export const DrainNodeMutation = gql<
  { drainNode: NodeMutationResult },
  { input: { nodeId: string; reason?: string; commandId?: string } }
>`
  mutation DrainNode($input: DrainNodeInput!) { drainNode(input: $input) { ...NodePayloadFields } }
  ${NodePayloadFields}
`;

export const UndrainNodeMutation = gql<
  { undrainNode: NodeMutationResult },
  { input: { nodeId: string; commandId?: string } }
>`
  mutation UndrainNode($input: UndrainNodeInput!) { undrainNode(input: $input) { ...NodePayloadFields } }
  ${NodePayloadFields}
`;

export const DecommissionNodeMutation = gql<
  { decommissionNode: NodeMutationResult },
  { input: { nodeId: string; reason?: string; commandId?: string } }
>`
  mutation DecommissionNode($input: DecommissionNodeInput!) { decommissionNode(input: $input) { ...NodePayloadFields } }
  ${NodePayloadFields}
`;

export const CreateJoinTokenMutation = gql<
  { createJoinToken: Payload & { token: string; joinToken: { id: string; expiresAt: string } } },
  { input: { locationId?: string; labels?: Label[]; ttlSeconds?: number; commandId?: string } }
>`
  mutation CreateJoinToken($input: CreateJoinTokenInput!) {
    createJoinToken(input: $input) {
      token
      cursor
      duplicate
      joinToken { id expiresAt }
    }
  }
`;

// ---- jobs

export interface JobFilter {
  nodeId?: string;
  status?: JobStatus[];
  topLevel?: boolean;
  parentId?: string;
}

export const JobsQuery = gql<
  { jobs: Connection<JobSummary> } & Live,
  Page & { filter?: JobFilter; consistentWith?: Cursor }
>`
  query Jobs($first: Int, $after: String, $filter: JobFilter, $consistentWith: Cursor) {
    jobs(first: $first, after: $after, filter: $filter, consistentWith: $consistentWith) {
      edges { cursor node { ...JobSummaryFields } }
      pageInfo { hasNextPage endCursor }
    }
    readModelsCursor
  }
  ${JobSummaryFields}
`;

// Jobs are read from their own streams, which are current as soon as a
// command returns: job takes no consistentWith.
export const JobQuery = gql<{ job: JobDetail | null } & Live, { id: string }>`
  query Job($id: ID!) {
    job(id: $id) {
      ...JobSummaryFields
      timeoutSeconds
      queue
      tenantId
      result { exitCode output error cpuTimeMs peakMemoryBytes }
      cancelReason
      lostReason
      counts { succeeded failed timedOut cancelled lost }
      allowedActions
      children(first: 100) {
        edges { cursor node { ...JobSummaryFields } }
        pageInfo { hasNextPage endCursor }
        totalCount
      }
    }
    readModelsCursor
  }
  ${JobSummaryFields}
`;

export const JobChangedSubscription = gql<
  { jobChanged: { event: { cursor: Cursor; type: string }; job: JobSummary | null } },
  { id?: string; nodeId?: string; after?: Cursor }
>`
  subscription JobChanged($id: ID, $nodeId: ID, $after: Cursor) {
    jobChanged(id: $id, nodeId: $nodeId, after: $after) {
      event { cursor type }
      job { ...JobSummaryFields }
    }
  }
  ${JobSummaryFields}
`;

export const JobLogSubscription = gql<{ jobLog: JobLogChunk }, { jobId: string; afterSeq: number }>`
  subscription JobLog($jobId: ID!, $afterSeq: Int) {
    jobLog(jobId: $jobId, afterSeq: $afterSeq) { seq stream data time }
  }
`;

export interface SubmitJobInput {
  jobId?: string;
  spec: {
    kind: JobKind;
    action?: string;
    args?: unknown;
    exec?: { argv: string[]; workdir?: string };
    script?: { interpreter: string; body: string };
  };
  target: {
    nodeId?: string;
    selector?: Label[];
    /** Set-based label tests as text: `zone in (a,b), !gpu`. */
    match?: string;
    location?: string;
    every?: boolean;
    mode?: TargetMode;
    maxParallel?: number;
  };
  timeoutSeconds?: number;
  commandId?: string;
}

export const SubmitJobMutation = gql<
  { submitJob: Payload & { job: { id: string; status: JobStatus } } },
  { input: SubmitJobInput }
>`
  mutation SubmitJob($input: SubmitJobInput!) {
    submitJob(input: $input) { cursor duplicate job { id status } }
  }
`;

export const CancelJobMutation = gql<
  { cancelJob: Payload & { job: { id: string; status: JobStatus } } },
  { input: { jobId: string; reason?: string; commandId?: string } }
>`
  mutation CancelJob($input: CancelJobInput!) {
    cancelJob(input: $input) { cursor duplicate job { id status } }
  }
`;

// ---- catalog

const TemplateSummaryFields = gql`
  fragment TemplateSummaryFields on TemplateVersion {
    id
    name
    version
    vendor
    category
    description
    status
    registeredAt
  }
`;

export interface TemplateFilter {
  name?: string;
  vendor?: string;
  category?: string;
  status?: TemplateStatus[];
  latestOnly?: boolean;
}

export const TemplatesQuery = gql<
  { templates: Connection<TemplateSummary> },
  Page & { filter?: TemplateFilter; consistentWith?: Cursor }
>`
  query Templates($first: Int, $after: String, $filter: TemplateFilter, $consistentWith: Cursor) {
    templates(first: $first, after: $after, filter: $filter, consistentWith: $consistentWith) {
      edges { cursor node { ...TemplateSummaryFields } }
      pageInfo { hasNextPage endCursor }
    }
  }
  ${TemplateSummaryFields}
`;

export const TemplateQuery = gql<
  { template: TemplateDetail | null },
  { name: string; version: string; consistentWith?: Cursor }
>`
  query Template($name: String!, $version: String!, $consistentWith: Cursor) {
    template(name: $name, version: $version, consistentWith: $consistentWith) {
      ...TemplateSummaryFields
      digest
      descriptor
      publishedAt
      deprecatedAt
      deprecationReason
      allowedActions
      variables {
        name
        type
        description
        default
        required
        sensitive
        pattern
        minLength
        maxLength
        minimum
        maximum
        enum
      }
      flavors { name description variables }
    }
  }
  ${TemplateSummaryFields}
`;

type TemplateResult = Payload & { template: { id: string; name: string; version: string; status: TemplateStatus } };

export const RegisterTemplateMutation = gql<
  { registerTemplate: TemplateResult },
  { input: { descriptor: string; commandId?: string } }
>`
  mutation RegisterTemplate($input: RegisterTemplateInput!) {
    registerTemplate(input: $input) { cursor duplicate template { id name version status } }
  }
`;

export const PublishTemplateMutation = gql<
  { publishTemplate: TemplateResult },
  { input: { name: string; version: string; commandId?: string } }
>`
  mutation PublishTemplate($input: PublishTemplateInput!) {
    publishTemplate(input: $input) { cursor duplicate template { id name version status } }
  }
`;

export const DeprecateTemplateMutation = gql<
  { deprecateTemplate: TemplateResult },
  { input: { name: string; version: string; reason?: string; commandId?: string } }
>`
  mutation DeprecateTemplate($input: DeprecateTemplateInput!) {
    deprecateTemplate(input: $input) { cursor duplicate template { id name version status } }
  }
`;

// ---- services

const ServiceSummaryFields = gql`
  fragment ServiceSummaryFields on Service {
    id
    tenantId
    tenant { name }
    name
    templateName
    templateVersion
    status
    revision
    blueprint
    requestedAt
    updatedAt
  }
`;

const EventFields = gql`
  fragment EventFields on Event {
    cursor
    position
    streamId
    streamType
    version
    type
    time
    metadata { commandId correlationId causationId actor actorName tenantId }
  }
`;

export interface ServiceFilter {
  tenantId?: string;
  status?: ServiceStatus[];
  templateName?: string;
  name?: string;
}

export const ServicesQuery = gql<
  { services: Connection<ServiceSummary> } & Live,
  Page & { filter?: ServiceFilter; consistentWith?: Cursor }
>`
  query Services($first: Int, $after: String, $filter: ServiceFilter, $consistentWith: Cursor) {
    services(first: $first, after: $after, filter: $filter, consistentWith: $consistentWith) {
      edges { cursor node { ...ServiceSummaryFields } }
      pageInfo { hasNextPage endCursor }
    }
    readModelsCursor
  }
  ${ServiceSummaryFields}
`;

export const ServiceQuery = gql<{ service: ServiceDetail | null } & Live, { id: string; consistentWith?: Cursor }>`
  query Service($id: ID!, $consistentWith: Cursor) {
    service(id: $id, consistentWith: $consistentWith) {
      ...ServiceSummaryFields
      variables
      failedIn
      cause
      remaining
      outputs
      version
      allowedActions
      revision
      resources { id name plugin type status dependsOn outputs error failedIn updatedAt nodeId revision drift { kind detail since } health { name healthy detail since } }
    }
    readModelsCursor
  }
  ${ServiceSummaryFields}
`;

export const ServiceChangedSubscription = gql<
  { serviceChanged: { event: { cursor: Cursor; type: string }; service: ServiceSummary | null } },
  { id?: string; after?: Cursor }
>`
  subscription ServiceChanged($id: ID, $after: Cursor) {
    serviceChanged(id: $id, after: $after) {
      event { cursor type }
      service { ...ServiceSummaryFields }
    }
  }
  ${ServiceSummaryFields}
`;

type ServiceResult = Payload & { service: { id: string; status: ServiceStatus; allowedActions: string[] } };

export interface UpdateServiceInput {
  serviceId: string;
  templateVersion?: string;
  variables?: JSONValue;
}

const UpdatePlanFields = gql`
  fragment UpdatePlanFields on ServiceUpdatePlan {
    revision
    fromVersion
    toVersion
    variables { name old new }
    changes { name resourceId plugin type action reasons properties { path old new } }
    creates
    updates
    replaces
    destroys
    noChange
  }
`;

export const PlanServiceUpdateQuery = gql<{ planServiceUpdate: ServiceUpdatePlan }, { input: UpdateServiceInput }>`
  query PlanServiceUpdate($input: UpdateServiceInput!) {
    planServiceUpdate(input: $input) { ...UpdatePlanFields }
  }
  ${UpdatePlanFields}
`;

export const UpdateServiceMutation = gql<{ updateService: ServiceResult & { plan: ServiceUpdatePlan } }, { input: UpdateServiceInput }>`
  mutation UpdateService($input: UpdateServiceInput!) {
    updateService(input: $input) { cursor duplicate service { id status allowedActions } plan { ...UpdatePlanFields } }
  }
  ${UpdatePlanFields}
`;

export const CreateServiceMutation = gql<
  { createService: ServiceResult },
  {
    input: {
      tenantId?: string;
      name: string;
      templateName: string;
      templateVersion: string;
      variables?: Record<string, unknown>;
      flavor?: string;
      commandId?: string;
    };
  }
>`
  mutation CreateService($input: CreateServiceInput!) {
    createService(input: $input) { cursor duplicate service { id status allowedActions } }
  }
`;

type ServiceCommand = { input: { serviceId: string; commandId?: string } };

export const RetryServiceMutation = gql<{ retryService: ServiceResult }, ServiceCommand>`
  mutation RetryService($input: ServiceCommandInput!) {
    retryService(input: $input) { cursor duplicate service { id status allowedActions } }
  }
`;

export const StartServiceMutation = gql<{ startService: ServiceResult }, ServiceCommand>`
  mutation StartService($input: ServiceCommandInput!) {
    startService(input: $input) { cursor duplicate service { id status allowedActions } }
  }
`;

export const StopServiceMutation = gql<{ stopService: ServiceResult }, ServiceCommand>`
  mutation StopService($input: ServiceCommandInput!) {
    stopService(input: $input) { cursor duplicate service { id status allowedActions } }
  }
`;

export const RemoveServiceMutation = gql<{ removeService: ServiceResult }, ServiceCommand>`
  mutation RemoveService($input: ServiceCommandInput!) {
    removeService(input: $input) { cursor duplicate service { id status allowedActions } }
  }
`;

// ---- access: tenants, users, tokens, locations

export const TenantsQuery = gql<
  { tenants: Connection<Tenant> },
  Page & { filter?: { status?: TenantStatus[]; name?: string }; consistentWith?: Cursor }
>`
  query Tenants($first: Int, $after: String, $filter: TenantFilter, $consistentWith: Cursor) {
    tenants(first: $first, after: $after, filter: $filter, consistentWith: $consistentWith) {
      edges { cursor node { id name status suspendReason createdAt } }
      pageInfo { hasNextPage endCursor }
    }
  }
`;

type TenantResult = Payload & { tenant: Tenant };

export const CreateTenantMutation = gql<
  { createTenant: TenantResult },
  { input: { id?: string; name: string; commandId?: string } }
>`
  mutation CreateTenant($input: CreateTenantInput!) {
    createTenant(input: $input) { cursor duplicate tenant { id name status suspendReason createdAt } }
  }
`;

export const SuspendTenantMutation = gql<
  { suspendTenant: TenantResult },
  { input: { tenantId: string; reason?: string; commandId?: string } }
>`
  mutation SuspendTenant($input: SuspendTenantInput!) {
    suspendTenant(input: $input) { cursor duplicate tenant { id name status suspendReason createdAt } }
  }
`;

export const ResumeTenantMutation = gql<
  { resumeTenant: TenantResult },
  { input: { tenantId: string; commandId?: string } }
>`
  mutation ResumeTenant($input: ResumeTenantInput!) {
    resumeTenant(input: $input) { cursor duplicate tenant { id name status suspendReason createdAt } }
  }
`;

export const UsersQuery = gql<
  { users: Connection<User> },
  Page & { filter?: { tenantId?: string; role?: Role[]; status?: UserStatus[] }; consistentWith?: Cursor }
>`
  query Users($first: Int, $after: String, $filter: UserFilter, $consistentWith: Cursor) {
    users(first: $first, after: $after, filter: $filter, consistentWith: $consistentWith) {
      edges { cursor node { id name role tenantId status createdAt } }
      pageInfo { hasNextPage endCursor }
    }
  }
`;

type UserResult = Payload & { user: User };

export const CreateUserMutation = gql<
  { createUser: UserResult },
  { input: { id?: string; name: string; role: Role; tenantId?: string; commandId?: string } }
>`
  mutation CreateUser($input: CreateUserInput!) {
    createUser(input: $input) { cursor duplicate user { id name role tenantId status createdAt } }
  }
`;

export const DisableUserMutation = gql<
  { disableUser: UserResult },
  { input: { userId: string; reason?: string; commandId?: string } }
>`
  mutation DisableUser($input: DisableUserInput!) {
    disableUser(input: $input) { cursor duplicate user { id name role tenantId status createdAt } }
  }
`;

export const EnableUserMutation = gql<
  { enableUser: UserResult },
  { input: { userId: string; commandId?: string } }
>`
  mutation EnableUser($input: EnableUserInput!) {
    enableUser(input: $input) { cursor duplicate user { id name role tenantId status createdAt } }
  }
`;

const ApiTokenFields = gql`
  fragment ApiTokenFields on ApiToken {
    id
    userId
    role
    tenantId
    status
    expiresAt
    issuedAt
    revokedAt
    revokeReason
  }
`;

export const ApiTokensQuery = gql<
  { apiTokens: Connection<ApiToken> },
  Page & { filter?: { userId?: string; tenantId?: string; includeRevoked?: boolean }; consistentWith?: Cursor }
>`
  query ApiTokens($first: Int, $after: String, $filter: ApiTokenFilter, $consistentWith: Cursor) {
    apiTokens(first: $first, after: $after, filter: $filter, consistentWith: $consistentWith) {
      edges { cursor node { ...ApiTokenFields } }
      pageInfo { hasNextPage endCursor }
    }
  }
  ${ApiTokenFields}
`;

export const CreateApiTokenMutation = gql<
  { createApiToken: Payload & { token: string; apiToken: ApiToken } },
  { input: { userId?: string; ttlSeconds?: number; commandId?: string } }
>`
  mutation CreateApiToken($input: CreateApiTokenInput!) {
    createApiToken(input: $input) { token cursor duplicate apiToken { ...ApiTokenFields } }
  }
  ${ApiTokenFields}
`;

export const RevokeApiTokenMutation = gql<
  { revokeApiToken: Payload & { apiToken: ApiToken } },
  { input: { tokenId: string; reason?: string; commandId?: string } }
>`
  mutation RevokeApiToken($input: RevokeApiTokenInput!) {
    revokeApiToken(input: $input) { cursor duplicate apiToken { ...ApiTokenFields } }
  }
  ${ApiTokenFields}
`;

const LocationFields = gql`
  fragment LocationFields on Location {
    id
    name
    description
    status
    createdAt
  }
`;

// The replicas of the cluster; polled by the page (no subscription).
export const ClusterQuery = gql<{ cluster: { replicas: Replica[] } }, Record<string, never>>`
  query Cluster {
    cluster { replicas { id address version startedAt lastSeen gone owns self } }
  }
`;

/** Nodes' names and states, for selects: a page of 500 costs about 2,000 of the complexity limit. */
export const NodeNamesQuery = gql<{ nodes: Connection<Pick<NodeSummary, 'id' | 'hostname' | 'status'>> }, Page & { filter?: { hostname?: string } }>`
  query NodeNames($first: Int, $after: String, $filter: NodeFilter) {
    nodes(first: $first, after: $after, filter: $filter) {
      edges { cursor node { id hostname status } }
      pageInfo { hasNextPage endCursor }
    }
  }
`;

/** Locations' names, for selects and for showing ids as names. */
export const LocationNamesQuery = gql<{ locations: Connection<Pick<Location, 'id' | 'name' | 'status'>> }, Page>`
  query LocationNames($first: Int, $after: String) {
    locations(first: $first, after: $after) {
      edges { cursor node { id name status } }
      pageInfo { hasNextPage endCursor }
    }
  }
`;

/** The totals of a location's capacity, as lists show them. */
export type CapacityTotals = Pick<LocationCapacity, 'allocatable' | 'allocated' | 'nodes' | 'schedulableNodes'>;

export const LocationsQuery = gql<
  { locations: Connection<Location & { capacity: CapacityTotals }> },
  Page & { filter?: { status?: LocationStatus[] }; consistentWith?: Cursor }
>`
  query Locations($first: Int, $after: String, $filter: LocationFilter, $consistentWith: Cursor) {
    locations(first: $first, after: $after, filter: $filter, consistentWith: $consistentWith) {
      edges { cursor node { ...LocationFields
        capacity(limit: 0) { allocatable { cpu memoryBytes diskBytes } allocated { cpu memoryBytes diskBytes } nodes schedulableNodes } } }
      pageInfo { hasNextPage endCursor }
    }
  }
  ${LocationFields}
`;

export const LocationQuery = gql<
  { location: (Location & { capacity: LocationCapacity }) | null },
  { id: string; consistentWith?: Cursor }
>`
  query Location($id: ID!, $consistentWith: Cursor) {
    location(id: $id, consistentWith: $consistentWith) {
      ...LocationFields
        capacity(limit: 50) {
          allocatable { cpu memoryBytes diskBytes } allocated { cpu memoryBytes diskBytes } reserve { cpu memoryBytes diskBytes }
          nodes schedulableNodes runningTotal
          fullest { nodeId hostname status capacity { allocatable { cpu memoryBytes diskBytes } allocated { cpu memoryBytes diskBytes } allocations fill } }
          running { resourceId resourceType serviceId serviceName nodeId hostname request { cpu memoryBytes diskBytes } allocatedAt }
        }
    }
  }
  ${LocationFields}
`;

export const SetLocationReserveMutation = gql<
  { setLocationReserve: Payload },
  { input: { locationId: string; reserve: { cpu?: number; memoryBytes?: number; diskBytes?: number }; commandId?: string } }
>`
  mutation SetLocationReserve($input: SetLocationReserveInput!) {
    setLocationReserve(input: $input) { cursor duplicate }
  }
`;

export const CreateLocationMutation = gql<
  { createLocation: Payload & { location: Location } },
  { input: { id?: string; name: string; description?: string; commandId?: string } }
>`
  mutation CreateLocation($input: CreateLocationInput!) {
    createLocation(input: $input) { cursor duplicate location { ...LocationFields } }
  }
  ${LocationFields}
`;

export const RetireLocationMutation = gql<
  { retireLocation: Payload & { location: Location } },
  { input: { locationId: string; commandId?: string } }
>`
  mutation RetireLocation($input: RetireLocationInput!) {
    retireLocation(input: $input) { cursor duplicate location { ...LocationFields } }
  }
  ${LocationFields}
`;

// ---- the event log and auditing

export interface EventFilter {
  streamIds?: string[];
  streamTypes?: string[];
  types?: string[];
  actor?: string;
  correlationId?: string;
  tenantId?: string;
  time?: { from?: string; to?: string };
}

/** The last events of some streams, newest first once reversed: histories. */
export const LatestEventsQuery = gql<{ events: Connection<Event> }, { last: number; filter?: EventFilter }>`
  query LatestEvents($last: Int, $filter: EventFilter) {
    events(last: $last, filter: $filter) {
      edges { cursor node { ...EventFields } }
      pageInfo { hasPreviousPage startCursor }
    }
  }
  ${EventFields}
`;

export const EventsQuery = gql<
  { events: Connection<Event> },
  { first?: number; after?: Cursor | null; filter?: EventFilter }
>`
  query Events($first: Int, $after: Cursor, $filter: EventFilter) {
    events(first: $first, after: $after, filter: $filter) {
      edges { cursor node { ...EventFields } }
      pageInfo { hasNextPage endCursor }
    }
  }
  ${EventFields}
`;

export const HeadQuery = gql<{ head: Cursor }, Record<string, never>>`
  query Head {
    head
  }
`;

export const EventsSubscription = gql<{ events: Event }, { filter?: EventFilter; after?: Cursor }>`
  subscription Events($filter: EventFilter, $after: Cursor) {
    events(filter: $filter, after: $after) { ...EventFields }
  }
  ${EventFields}
`;

export const EventQuery = gql<{ event: EventDetail | null }, { cursor: Cursor }>`
  query Event($cursor: Cursor!) {
    event(cursor: $cursor) {
      ...EventFields
      schemaVersion
      payload
      prevHash
      hash
    }
  }
  ${EventFields}
`;

export const EntityAsOfQuery = gql<
  { entityAsOf: EntityState },
  { entity: { type: EntityType; id: string }; asOf: { time?: string; cursor?: Cursor } }
>`
  query EntityAsOf($entity: EntityRef!, $asOf: AsOf!) {
    entityAsOf(entity: $entity, asOf: $asOf) { type id version cursor time state }
  }
`;

export const VerifyChainQuery = gql<{ verifyChain: ChainVerification }, { streamId?: string }>`
  query VerifyChain($streamId: String) {
    verifyChain(streamId: $streamId) {
      ok
      streams
      events
      firstBreak { streamId version position reason }
      breaks { streamId version position reason }
    }
  }
`;
