// The portal on one real cairnd (embedded PostgreSQL, a free port) with real
// agents, in headless Chromium: the served app and its sign-in page
// (smoke.mjs), the audit flows (audit.mjs) and the operator's and tenant's
// flows (flows.mjs). One server for all of them keeps the run short; each
// flow makes tenants and users of its own.
import { useServer } from './harness.mjs';
import { audit } from './audit.mjs';
import { flows } from './flows.mjs';
import { smoke } from './smoke.mjs';

const ctx = useServer();
smoke(ctx);
audit(ctx);
flows(ctx);
