// Exec host-tool call overhead: an agentcli tool whose program is /bin/cat (it echoes the JSON
// arguments), called sequentially through executeHostTool (secrets, transport, redaction, evidence; the audit
// line itself is the request path's audit policy).
// Prints { p50_ms, p99_ms, calls, calls_per_sec }. Progress goes to stderr.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { silentLogger } from '../dist/logger.js';
import { createSchemaCache, executeHostTool, loadManifest } from '../dist/host-tools/index.js';
import { createSchemaValidator } from '../dist/screen/index.js';

const CALLS = Number(process.env.BENCH_CALLS ?? 500);
const WARMUP = 30;

const dir = await mkdtemp(path.join(tmpdir(), 'bench-exec-'));
try {
  const manifest = path.join(dir, 'tools.json');
  const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
  await writeFile(manifest, JSON.stringify({ tools: [{ name: 'cat', command: ['/bin/cat'], schema }] }));
  const validator = createSchemaValidator();
  const loaded = await loadManifest(manifest, { validator });
  if (!loaded.ok) throw new Error(loaded.error);
  const [tool] = loaded.tools;
  const options = {
    logger: silentLogger(),
    config: { execTimeoutMs: 10_000, maxOutputBytes: 1024 * 1024, redact: ['sk-[a-z0-9]+'] },
    resolveSecret: async () => undefined,
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
    schemas: createSchemaCache(validator),
  };
  const durations = [];
  for (let i = 0; i < WARMUP + CALLS; i++) {
    const started = performance.now();
    const result = await executeHostTool(tool, { n: i }, options);
    const ms = performance.now() - started;
    if (!result.ok || result.output.n !== i) throw new Error(`call ${i} failed: ${JSON.stringify(result)}`);
    if (i >= WARMUP) durations.push(ms);
    if (i % 100 === 0) process.stderr.write(`call ${i}/${WARMUP + CALLS}\n`);
  }
  durations.sort((a, b) => a - b);
  const pick = (q) => durations[Math.min(durations.length - 1, Math.floor(q * durations.length))];
  const total = durations.reduce((sum, ms) => sum + ms, 0);
  const round = (x) => Math.round(x * 100) / 100;
  console.log(
    JSON.stringify({
      p50_ms: round(pick(0.5)),
      p99_ms: round(pick(0.99)),
      calls: CALLS,
      calls_per_sec: round((CALLS / total) * 1000),
    }),
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
