// Subscriptions (docs/autonomy.md): a tool's `context.subscriptions` run it once for each new
// breadcrumb of a schema (and tag). Every replica sees the event and writes the same sealed request
// (triggers.ts: keyed by subscription and trigger breadcrumb), so the store holds exactly one and the
// one request path runs it once, with the event as `context.request.trigger_event`.
//
// Bounds: a trigger written by a run at depth d (its writes carry `created-by:depth:<d>`) starts a
// run at depth d+1, refused past `nestedCallMaxDepth` (a tool subscribed to its own output stops
// there); what one chain's runs write is bounded per replica (tool-context/chains.ts, the mark
// `created-by:chain:<seed>`); each subscription starts at most `subscriptionRatePerMinute` runs a
// minute on this replica (the rest wait for the next catch-up); breadcrumbs marked Secret never trigger; each agent owner
// may have `subscriptionMaxPerOwner` live subscriptions, the newer ones beyond are refused.
// Catch-up: at start, after a reconnect and every scan interval, the newest matching breadcrumbs
// changed since the subscribing definition was deployed are listed and the missing requests written
// (the key makes the already-written ones a no-op); an event missed while down runs once after restart.

import { isSealedTick } from './scheduler.js';
import type { RequestClient, RequestKeys, StoreClient } from '../breadcrumbs/index.js';
import type { StoreEvent } from '../breadcrumbs/messages.js';
import type { Catalog } from '../catalog/catalog.js';
import type { Logger } from '../logger.js';
import type { Subscription } from '../screen/autonomy.js';
import { depthOfTags, seedOfTags } from '../tool-context/origin.js';
import { writeOwnRequest } from './triggers.js';
import { BoundedSet } from '../bounded.js';
import { OPERATOR } from '../catalog/deployment.js';

/** What the console and /metrics show of one subscription. */
export interface SubscriptionStatus {
  id: string;
  tool: string;
  schema_name: string;
  tag?: string;
  /** The owner of the subscribing tool (`operator` or `agent:<id>`). */
  owner: string;
  /** `refused`: over its owner's cap (`reason` says why); it triggers nothing. */
  state: 'active' | 'refused';
  reason?: string;
  /** Requests this replica wrote (a trigger another replica wrote first is not counted). */
  triggered: number;
  /** Triggers refused: past the depth limit, or over the rate (written later by a catch-up). */
  refused_depth: number;
  deferred_rate: number;
  last_trigger_at?: string;
}

interface Live {
  status: SubscriptionStatus;
  sub: Subscription;
  /** Epoch ms the subscribing definition was deployed: catch-up looks no further back. */
  since: number;
  /** Trigger ids handled (written, found written, or refused for depth): not tried again. */
  handled: Set<string>;
  window: { start: number; count: number };
}

const MAX_HANDLED = 20_000;
const CATCH_UP_PAGE = 200;
const CATCH_UP_MAX = 2_000;
/** Largest trigger event context handed to the tool (JSON characters); a bigger one is left out (the tool can read the record). */
const MAX_EVENT_CONTEXT = 64 * 1024;

export interface SubscriptionsOptions {
  client: StoreClient;
  requests: RequestClient;
  keys: Pick<RequestKeys, 'stateMac'>;
  catalog: Catalog;
  logger: Logger;
  maxDepth: number;
  ratePerMinute: number;
  /** Most live subscriptions of one agent owner (the operator's are not capped). */
  maxPerOwner: number;
  signal: AbortSignal;
}

/** The subscriptions of the catalog's tools, kept in step with it by `refresh()`. */
export function createSubscriptions(options: SubscriptionsOptions) {
  const { client, catalog, logger } = options;
  const live = new Map<string, Live>();

  /** Re-reads the catalog's subscriptions (new tools, new versions, removed tools). */
  const refresh = async (): Promise<void> => {
    const wanted = new Map<string, { tool: string; owner: string; sub: Subscription; definitionId: string }>();
    for (const entry of catalog.entries()) {
      const route = catalog.resolve(entry.name);
      if (route?.kind !== 'code') continue;
      (route.tool.subscriptions ?? []).forEach((sub, index) => {
        wanted.set(`${route.tool.name}@${route.tool.version}#${index}`, {
          tool: route.tool.name,
          owner: route.owner,
          sub,
          definitionId: route.breadcrumbId,
        });
      });
    }
    for (const id of live.keys()) if (!wanted.has(id)) live.delete(id);
    for (const [id, { tool, owner, sub, definitionId }] of wanted) {
      if (live.has(id)) continue;
      let since = Date.now();
      try {
        const full = await client.getBreadcrumbFull(definitionId);
        const created = Date.parse(full.created_at ?? full.updated_at ?? '');
        if (Number.isFinite(created)) since = created;
      } catch (error) {
        logger.warn('subscription: definition unreadable; catch-up starts now', { id, error });
      }
      live.set(id, {
        status: {
          id,
          tool,
          owner,
          state: 'active',
          schema_name: sub.schemaName,
          ...(sub.tag !== undefined ? { tag: sub.tag } : {}),
          triggered: 0,
          refused_depth: 0,
          deferred_rate: 0,
        },
        sub,
        since,
        handled: new BoundedSet<string>(MAX_HANDLED, 'handled triggers'),
        window: { start: Date.now(), count: 0 },
      });
    }
    applyOwnerCaps();
  };

  /** Beyond `maxPerOwner` subscriptions of one agent owner, the newer ones (by deployment) are refused. */
  const applyOwnerCaps = (): void => {
    const byOwner = new Map<string, Live[]>();
    for (const entry of live.values()) {
      if (entry.status.owner === OPERATOR) continue;
      byOwner.set(entry.status.owner, [...(byOwner.get(entry.status.owner) ?? []), entry]);
    }
    for (const [owner, list] of byOwner) {
      list.sort((a, b) => a.since - b.since || a.status.id.localeCompare(b.status.id));
      list.forEach((entry, index) => {
        const over = index >= options.maxPerOwner;
        if (over && entry.status.state !== 'refused')
          logger.warn('subscription refused: over its owner’s cap', { subscription: entry.status.id, owner });
        entry.status.state = over ? 'refused' : 'active';
        if (over)
          entry.status.reason = `${owner} has ${list.length} subscriptions; at most ${options.maxPerOwner} are served (subscriptionMaxPerOwner)`;
        else delete entry.status.reason;
      });
    }
  };

  const matches = (entry: Live, schema: string | null | undefined, tags: readonly string[]): boolean =>
    schema === entry.sub.schemaName && (entry.sub.tag === undefined || tags.includes(entry.sub.tag));

  const remember = (entry: Live, triggerId: string): void => {
    entry.handled.add(triggerId);
  };

  /** Writes the request of one trigger unless handled, refused for depth, or over the rate. */
  const trigger = async (entry: Live, triggerId: string): Promise<void> => {
    if (entry.handled.has(triggerId) || entry.status.state === 'refused' || options.signal.aborted) return;
    const now = Date.now();
    if (now - entry.window.start >= 60_000) entry.window = { start: now, count: 0 };
    if (entry.window.count >= options.ratePerMinute) {
      entry.status.deferred_rate++;
      return; // the next catch-up writes it
    }
    const full = await client.getBreadcrumbFull(triggerId);
    // A schedule tick triggers only when the scheduler wrote it (its seal verifies): no writer forges one.
    const forgedTick = full.schema_name === 'schedule.tick.v1' && !isSealedTick(options.keys, full.context);
    if (full.sensitivity === 'Secret' || forgedTick || !matches(entry, full.schema_name, full.tags))
      return void remember(entry, triggerId);
    const depth = depthOfTags(full.tags) + 1;
    if (depth > options.maxDepth) {
      entry.status.refused_depth++;
      remember(entry, triggerId);
      logger.info('subscription trigger refused: depth limit', {
        subscription: entry.status.id,
        trigger: triggerId,
        depth,
        maxDepth: options.maxDepth,
      });
      return;
    }
    entry.window.count++;
    const contextText = JSON.stringify(full.context ?? {});
    const event = {
      breadcrumb_id: full.id,
      schema_name: full.schema_name ?? null,
      title: full.title,
      tags: full.tags,
      version: full.version,
      ...(contextText.length <= MAX_EVENT_CONTEXT
        ? { context: full.context }
        : { context_omitted: `${contextText.length} characters` }),
    };
    const outcome = await writeOwnRequest(options, {
      tool: entry.status.tool,
      input: entry.sub.input,
      origin: {
        kind: 'subscription',
        depth,
        chain: [],
        subscription: entry.status.id,
        trigger_id: triggerId,
        trigger_event: event,
        seed: seedOfTags(full.tags) ?? triggerId,
      },
      unique: [entry.status.id, triggerId],
      signal: options.signal,
    });
    remember(entry, triggerId);
    if (outcome === 'written') {
      entry.status.triggered++;
      entry.status.last_trigger_at = new Date().toISOString();
    }
  };

  const run = (entry: Live, triggerId: string): void => {
    trigger(entry, triggerId).catch((error: unknown) => {
      if (!options.signal.aborted)
        logger.warn('subscription trigger failed; the next catch-up retries it', {
          subscription: entry.status.id,
          trigger: triggerId,
          error,
        });
    });
  };

  return {
    refresh,
    /** A store event: a new breadcrumb matching a subscription triggers it. */
    handleEvent(event: StoreEvent): void {
      if (event.type !== 'breadcrumb.updated' || event.version !== 1 || !event.breadcrumb_id) return;
      if (typeof event.schema_name === 'string' && event.schema_name.toLowerCase().startsWith('tool.')) return;
      for (const entry of live.values()) {
        if (matches(entry, event.schema_name, event.tags ?? [])) run(entry, event.breadcrumb_id);
      }
    },
    /** Lists the newest matching breadcrumbs of each subscription and writes what is missing. */
    async catchUp(): Promise<void> {
      for (const entry of [...live.values()]) {
        if (entry.status.state === 'refused') continue;
        let seen = 0;
        for (let offset = 0; offset < CATCH_UP_MAX && !options.signal.aborted; offset += CATCH_UP_PAGE) {
          const page = await client.listBreadcrumbs({
            schema_name: entry.sub.schemaName,
            ...(entry.sub.tag !== undefined ? { tag: entry.sub.tag } : {}),
            limit: CATCH_UP_PAGE,
            offset,
            include_context: false,
          });
          for (const item of page) {
            if (Date.parse(item.updated_at) < entry.since) continue;
            seen++;
            if (!entry.handled.has(item.id))
              await trigger(entry, item.id).catch((error: unknown) =>
                logger.warn('subscription catch-up failed', { subscription: entry.status.id, trigger: item.id, error }),
              );
          }
          if (page.length < CATCH_UP_PAGE) break;
        }
        if (seen > 0) logger.debug('subscription catch-up', { subscription: entry.status.id, seen });
      }
    },
    status(): SubscriptionStatus[] {
      return [...live.values()].map((entry) => ({ ...entry.status }));
    },
  };
}

export type Subscriptions = ReturnType<typeof createSubscriptions>;
