// What the contract policy layer adds to a call that needs no approval (dist/ required: `npm run build`).
// The runner's own policy chain (src/request/policies/index.ts: idempotency check, approval, rate
// limit, idempotency reserve, effects, audit) against a real embedded store (in-process client),
// each hook run exactly as the handler runs it: callOf (canonical input hash) + admit + review +
// settle. Three calls, interleaved so all see the same machine:
//   read-only:  contract read-only with a rate limit, no idempotency key (no store call, no audit line)
//   write:      contract reversible-write (an audit line is appended to --audit-dir)
//   no-policy:  callOf + an empty chain (the floor: what the step costs with nothing to decide)
// Prints one JSON object with p50/p99 in ms. Flags: --calls=N (default 20000).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createRequestKeys, createStoreClient } from '../dist/breadcrumbs/index.js';
import { loadConfig } from '../dist/config/index.js';
import { silentLogger } from '../dist/logger.js';
import { admit, callOf, review, settle } from '../dist/request/5-policy.js';
import { createPolicies } from '../dist/request/policies/index.js';
import { createStore } from '../dist/store/index.js';

const arg = (name, dflt) => Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt);
const CALLS = arg('calls', 20_000);
const dir = mkdtempSync(join(tmpdir(), 'bench-policy-'));
const logger = silentLogger();
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] * 10_000) / 10_000;
};

const store = await createStore({
  host: '127.0.0.1',
  port: 0,
  dataDir: join(dir, 'store'),
  maxBodyBytes: 1024 * 1024,
  authSecret: undefined,
  adminKey: undefined,
  secretsKey: undefined,
  pingIntervalMs: 5000,
  eventRetention: 10_000,
  logger,
});
const client = createStoreClient({ baseUrl: store.url, logger, local: store.local });
const { config } = loadConfig({ env: {}, argv: ['--audit-dir', join(dir, 'audit')] });
const policies = createPolicies({
  client,
  keys: createRequestKeys(Buffer.alloc(32, 7)),
  config,
  logger,
  replica: 'bench',
});

const tool = (name, contract) => ({
  kind: 'code',
  breadcrumbId: `b-${name}`,
  breadcrumbVersion: 1,
  owner: 'agent:bench',
  version: '1.0.0',
  tool: {
    name,
    description: name,
    version: '1.0.0',
    language: 'javascript',
    source: '',
    inputSchema: {},
    outputSchema: {},
    net: [],
    api: false,
    extraPermissions: [],
    timeoutMs: 1000,
    memoryMb: 64,
    requiredSecrets: [],
    examples: [],
    contract,
  },
});
const routes = {
  'read-only': tool('reader', {
    side_effect: 'read-only',
    rate_limits: {
      per_tool: { limit: 1_000_000_000, window_ms: 1000 },
      per_agent: { limit: 1_000_000_000, window_ms: 1000 },
    },
  }),
  write: tool('writer', { side_effect: 'reversible-write' }),
  'no-policy': tool('plain', {}),
};
const input = { message: 'hello', n: 42, tags: ['a', 'b', 'c'], nested: { deep: { value: true } } };
const result = { ok: true, output: { echoed: 'hello' }, durationMs: 1, logs: [], logsTruncated: false };
const signal = new AbortController().signal;

let seq = 0;
async function once(kind) {
  const identity = {
    breadcrumbId: `req-${seq}`,
    rid: `rid-${seq++}`,
    tool: routes[kind].tool.name,
    agentId: 'agent-7',
  };
  const chain = kind === 'no-policy' ? [] : policies;
  const t0 = performance.now();
  const call = callOf({ identity, route: routes[kind], input });
  const gate = await admit(chain, call, signal);
  if (gate.kind !== 'run') throw new Error(`${kind}: unexpected gate ${gate.kind}`);
  const reviewed = review(chain, call, result);
  await settle(chain, call, { result: reviewed, ran: true, attempts: 1, durationMs: 1 }, logger);
  return performance.now() - t0;
}

const samples = { 'read-only': [], write: [], 'no-policy': [] };
for (let i = 0; i < 2000; i++) for (const kind of Object.keys(samples)) await once(kind); // warm-up
for (let i = 0; i < CALLS; i++) for (const kind of Object.keys(samples)) samples[kind].push(await once(kind));

const figures = Object.fromEntries(
  Object.entries(samples).map(([kind, xs]) => [kind, { p50_ms: pct(xs, 50), p99_ms: pct(xs, 99) }]),
);
console.log(
  JSON.stringify(
    {
      calls_per_kind: CALLS,
      ...figures,
      added_p50_ms_read_only: Math.round((figures['read-only'].p50_ms - figures['no-policy'].p50_ms) * 10_000) / 10_000,
      added_p50_ms_write: Math.round((figures.write.p50_ms - figures['no-policy'].p50_ms) * 10_000) / 10_000,
      target_p50_ms: 0.2,
    },
    null,
    2,
  ),
);
client.close();
await store.close();
rmSync(dir, { recursive: true, force: true });
