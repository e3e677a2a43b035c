// Routes of upstream's registries (agents, tenants, ACL, selectors) and of the features this
// store does not have: webhooks (501, said plainly) and their dead-letter queue, which without
// webhooks is always empty — answered exactly as upstream answers an empty DLQ.

import type { StoreAuth } from './auth.js';
import { HttpError, sendJson } from './http-util.js';
import type { RegistryPort } from './backend.js';
import { requireText } from './registry.js';
import type { Route, RouteContext } from './routes.js';

const id = '([^/]+)';

/** Upstream's "self or curator" rule for an agent's or tenant's own record. */
function selfOrCurator(auth: StoreAuth, ctx: RouteContext, self: string | null): void {
  if (auth.enabled && self !== ctx.params[0] && !ctx.principal.roles.includes('curator')) {
    throw new HttpError(
      403,
      'forbidden',
      `forbidden: only "${ctx.params[0] as string}" itself or a curator may change it`,
    );
  }
}

const noWebhooks = (): never => {
  throw new HttpError(
    501,
    'not_implemented',
    'webhooks are not supported by the embedded store (no outbound delivery); use GET /events/stream',
  );
};

/** Builds the registry routes. */
export function createRegistryRoutes(deps: { auth: StoreAuth; registry: RegistryPort }): Route[] {
  const { auth, registry } = deps;
  return [
    // Upstream's OpenRouter demo; listed before /agents/:id so "run" is never taken for an agent id.
    {
      pattern: /^\/agents\/run$/,
      methods: {
        POST: {
          need: 'read',
          handle: () => {
            throw new HttpError(
              501,
              'not_implemented',
              "POST /agents/run (upstream's OpenRouter demo) is not supported by the embedded store",
            );
          },
        },
      },
    },
    {
      pattern: /^\/agents$/,
      methods: {
        GET: {
          need: 'read',
          handle: async ({ res, principal }) => sendJson(res, 200, await registry.listAgents(principal)),
        },
      },
    },
    {
      pattern: new RegExp(`^/agents/${id}$`),
      methods: {
        GET: {
          need: 'read',
          handle: async ({ res, params, principal }) =>
            sendJson(res, 200, await registry.getAgent(principal, params[0] as string)),
        },
        POST: {
          need: 'read',
          async handle(ctx) {
            selfOrCurator(auth, ctx, ctx.principal.agentId);
            const roles = (await ctx.body()).roles;
            if (!Array.isArray(roles) || !roles.every((r) => typeof r === 'string')) {
              throw new HttpError(
                400,
                'invalid_body',
                `roles must be an array of strings, got ${JSON.stringify(roles) ?? 'nothing'}`,
              );
            }
            await registry.upsertAgent(ctx.principal.ownerId, ctx.params[0] as string, roles as string[]);
            sendJson(ctx.res, 200, { ok: true });
          },
        },
        DELETE: {
          need: 'curator',
          async handle({ res, params, principal }) {
            await registry.deleteAgent(principal, params[0] as string);
            sendJson(res, 200, { ok: true });
          },
        },
      },
    },
    { pattern: new RegExp(`^/agents/${id}/secret$`), methods: { POST: { need: 'read', handle: noWebhooks } } },
    {
      pattern: new RegExp(`^/agents/${id}/webhooks$`),
      methods: { GET: { need: 'read', handle: noWebhooks }, POST: { need: 'read', handle: noWebhooks } },
    },
    {
      pattern: new RegExp(`^/agents/${id}/webhooks/${id}$`),
      methods: { DELETE: { need: 'read', handle: noWebhooks } },
    },
    {
      pattern: /^\/tenants$/,
      methods: {
        GET: { need: 'curator', handle: async ({ res }) => sendJson(res, 200, await registry.listTenants()) },
      },
    },
    {
      pattern: new RegExp(`^/tenants/${id}$`),
      methods: (() => {
        const upsert = {
          need: 'read' as const,
          async handle(ctx: RouteContext) {
            selfOrCurator(auth, ctx, ctx.principal.ownerId);
            await registry.ensureTenant(ctx.params[0] as string, requireText(await ctx.body(), 'name'));
            sendJson(ctx.res, 200, { ok: true });
          },
        };
        return {
          GET: {
            need: 'read' as const,
            handle: async ({ res, params }: RouteContext) =>
              sendJson(res, 200, await registry.getTenant(params[0] as string)),
          },
          POST: upsert,
          PUT: upsert,
          DELETE: {
            need: 'curator' as const,
            async handle({ res, params }: RouteContext) {
              await registry.deleteTenant(params[0] as string);
              sendJson(res, 200, { ok: true });
            },
          },
        };
      })(),
    },
    {
      pattern: /^\/acl$/,
      methods: {
        GET: {
          need: 'read',
          handle: async ({ res, principal }) => sendJson(res, 200, await registry.listAcls(principal)),
        },
      },
    },
    {
      pattern: /^\/acl\/grant$/,
      methods: {
        POST: {
          need: 'curator',
          handle: async ({ res, principal, body }) => sendJson(res, 200, await registry.grant(principal, await body())),
        },
      },
    },
    {
      pattern: /^\/acl\/revoke$/,
      methods: {
        POST: {
          need: 'curator',
          handle: async ({ res, principal, body }) =>
            sendJson(res, 200, await registry.revoke(principal, await body())),
        },
      },
    },
    {
      pattern: /^\/subscriptions\/selectors$/,
      methods: {
        GET: {
          need: 'subscribe',
          handle: async ({ res, principal }) => sendJson(res, 200, await registry.listSelectors(principal)),
        },
        POST: {
          need: 'subscribe',
          handle: async ({ res, principal, body }) =>
            sendJson(res, 200, await registry.createSelector(principal, await body())),
        },
      },
    },
    {
      pattern: new RegExp(`^/subscriptions/selectors/${id}$`),
      methods: {
        PUT: {
          need: 'subscribe',
          async handle({ res, params, principal, body }) {
            await registry.updateSelector(principal, params[0] as string, await body());
            sendJson(res, 200, { ok: true });
          },
        },
        DELETE: {
          need: 'subscribe',
          async handle({ res, params, principal }) {
            await registry.deleteSelector(principal, params[0] as string);
            sendJson(res, 200, { ok: true });
          },
        },
      },
    },
    // Without webhooks nothing is ever dead-lettered: upstream's answers for an empty DLQ.
    { pattern: /^\/dlq$/, methods: { GET: { need: 'curator', handle: ({ res }) => sendJson(res, 200, []) } } },
    {
      pattern: new RegExp(`^/dlq/${id}$`),
      methods: { DELETE: { need: 'curator', handle: ({ res }) => sendJson(res, 200, { ok: true }) } },
    },
    {
      pattern: new RegExp(`^/dlq/${id}/retry$`),
      methods: {
        POST: {
          need: 'curator',
          handle: ({ params }) => {
            throw new HttpError(
              404,
              'not_found',
              `not found: no dead-lettered delivery "${params[0] as string}" (this store sends no webhooks)`,
            );
          },
        },
      },
    },
  ];
}
