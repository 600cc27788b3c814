import type { ComponentType } from 'react';
import type { PageId } from '../lib/pages';
import { NodesPage } from '../pages/operator/Nodes';
import { NodePage } from '../pages/operator/Node';
import { JobsPage } from '../pages/operator/Jobs';
import { JobPage } from '../pages/operator/Job';
import { RunJobPage } from '../pages/operator/RunJob';
import { TenantsPage } from '../pages/operator/Tenants';
import { UsersPage } from '../pages/operator/Users';
import { LocationsPage } from '../pages/operator/Locations';
import { LocationPage } from '../pages/operator/Location';
import { ClusterPage } from '../pages/operator/Cluster';
import { CatalogPage } from '../pages/catalog/Catalog';
import { TemplatePage } from '../pages/catalog/Template';
import { RegisterTemplatePage } from '../pages/catalog/RegisterTemplate';
import { ServicesPage } from '../pages/tenant/Services';
import { ServicePage } from '../pages/tenant/Service';
import { DeployPage } from '../pages/tenant/Deploy';
import { EventsPage } from '../pages/auditor/Events';
import { EventPage } from '../pages/auditor/Event';
import { AsOfPage } from '../pages/auditor/AsOf';
import { VerifyPage } from '../pages/auditor/Verify';

export interface RouteDef {
  pattern: string;
  page: PageId;
  component: ComponentType<{ params: Record<string, string> }>;
}

/** Every page, by path; more specific patterns first. */
export const routes: RouteDef[] = [
  { pattern: '/nodes', page: 'nodes', component: NodesPage },
  { pattern: '/nodes/:id', page: 'node', component: NodePage },
  { pattern: '/jobs', page: 'jobs', component: JobsPage },
  { pattern: '/jobs/new', page: 'run-job', component: RunJobPage },
  { pattern: '/jobs/:id', page: 'job', component: JobPage },
  { pattern: '/tenants', page: 'tenants', component: TenantsPage },
  { pattern: '/users', page: 'users', component: UsersPage },
  { pattern: '/locations', page: 'locations', component: LocationsPage },
  { pattern: '/locations/:id', page: 'location', component: LocationPage },
  { pattern: '/cluster', page: 'cluster', component: ClusterPage },
  { pattern: '/catalog', page: 'catalog', component: CatalogPage },
  { pattern: '/catalog/register', page: 'register-template', component: RegisterTemplatePage },
  { pattern: '/catalog/:name/:version', page: 'template', component: TemplatePage },
  { pattern: '/services', page: 'services', component: ServicesPage },
  { pattern: '/services/new', page: 'deploy', component: DeployPage },
  { pattern: '/services/:id', page: 'service', component: ServicePage },
  { pattern: '/events', page: 'events', component: EventsPage },
  { pattern: '/events/:cursor', page: 'event', component: EventPage },
  { pattern: '/as-of', page: 'as-of', component: AsOfPage },
  { pattern: '/verify', page: 'verify', component: VerifyPage },
];
