// The contract policies of the request path, in the order a call meets them (policy.ts):
//   idempotency check -> approval -> rate limit -> idempotency reserve -> (run) -> effects -> audit
// A replay or a key conflict is decided first (no approval needed, no token taken); the key is
// reserved last, right before the run, so a call refused by approval or rate limit leaves it free.
// Effects (the timeout taxonomy) and audit review and record what the others decided.

import type { StoreAuthProbe, StoreClient } from '../../breadcrumbs/index.js';
import type { RequestKeys } from '../../breadcrumbs/request-keys.js';
import type { Config } from '../../config/index.js';
import type { Logger } from '../../logger.js';
import type { Policy } from '../policy.js';
import { approvalPolicy } from './approval.js';
import { auditPolicy } from './audit.js';
import { effectsPolicy } from './effects.js';
import { idempotencyPolicies } from './idempotency.js';
import { parseRateOverrides, rateLimitPolicy } from './rate-limit.js';

/** What the policies need from the service. */
export interface PolicyDeps {
  client: StoreClient;
  keys: RequestKeys;
  config: Pick<
    Config,
    'workspace' | 'confirmExternalActions' | 'approvalTimeoutMs' | 'redact' | 'rateLimits' | 'auditDir' | 'runnerSecret'
  >;
  logger: Logger;
  replica: string;
  /** Whether the store authenticates writers (the same probe the request handler asks). */
  storeAuth?: StoreAuthProbe;
  /** Secret values an approval's input preview must never show (the secrets file's values). */
  secretValues?: () => string[];
}

/** The policy chain of one runner (config.invalid when `--rate-limits` is malformed). */
export function createPolicies(deps: PolicyDeps): Policy[] {
  const { client, keys, config, logger } = deps;
  const idempotency = idempotencyPolicies({
    client,
    keys,
    workspace: config.workspace,
    logger: logger.child({ component: 'idempotency' }),
  });
  return [
    idempotency.check,
    approvalPolicy({
      client,
      keys,
      workspace: config.workspace,
      logger: logger.child({ component: 'approvals' }),
      confirmExternalActions: config.confirmExternalActions,
      ...(deps.storeAuth ? { storeAuth: deps.storeAuth } : {}),
      defaultTimeoutMs: config.approvalTimeoutMs,
      redactPatterns: config.redact,
      secretValues: () => [...(deps.secretValues?.() ?? []), ...(config.runnerSecret ? [config.runnerSecret] : [])],
    }),
    rateLimitPolicy({ overrides: parseRateOverrides(config.rateLimits) }),
    idempotency.reserve,
    effectsPolicy(),
    auditPolicy({
      auditDir: config.auditDir,
      redact: config.redact,
      replica: deps.replica,
      logger: logger.child({ component: 'audit' }),
    }),
  ];
}
