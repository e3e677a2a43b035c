// The container image without a Docker engine (none on the test machine; `docker build` itself is
// unverified here, see docs/deployment.md): the Dockerfile's build stage is run command by command
// in a temp copy of the build context (its apt-get lines excepted: they install the compiler this
// machine already has), the runtime stage's COPY'd files are assembled the same way, and the image's
// ENTRYPOINT/CMD (without tini, which is not installed here) starts the service from them with the
// image's ENV: the HEALTHCHECK passes, the admin port asks for its token, the shipped tools are served.
// The compose example is checked for restart policies, health conditions, one init and the ports.

import { execFileSync, execSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupAll, runCli, tempDir } from '../e2e/harness.js';
import { composeServices, copyOf, envOf, parseDockerfile, type Stage } from './dockerfile.js';
import { localPrebuilds } from './install-helpers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const stages = parseDockerfile(readFileSync(join(root, 'Dockerfile'), 'utf8'));
const compose = readFileSync(join(root, 'docs', 'docker-compose.example.yml'), 'utf8');
const services = composeServices(compose);
const runtime = stages.at(-1) as Stage;
const TOKEN = 'dockerfile-test-admin-token-0123';
const shipped = readdirSync(join(root, 'bootstrap-breadcrumbs', 'tools-self-contained')).filter((f) =>
  f.endsWith('.json'),
).length;

/** COPY into `appDir` (the stage's WORKDIR /app), from the build context or another stage's /app. */
function copy(args: ReturnType<typeof copyOf>, appDir: string, stageDirs: Map<string, string>): void {
  const fromDir = args.from ? stageDirs.get(args.from) : root;
  if (!fromDir) throw new Error(`COPY --from=${args.from}: no such stage`);
  for (const source of args.sources) {
    const src = join(fromDir, source.replace(/^\/app\/?/, ''));
    const into =
      args.dest.endsWith('/') || args.sources.length > 1
        ? join(appDir, args.dest, basename(source))
        : join(appDir, args.dest);
    cpSync(src, into, { recursive: true });
  }
}

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });

let runtimeDir: string;
let runtimeEnv: Record<string, string>;
const ran: string[] = [];

beforeAll(async () => {
  const work = tempDir('tr-docker-');
  const prebuilds = localPrebuilds(work);
  const stageDirs = new Map<string, string>();
  for (const stage of stages) {
    const appDir = join(work, `stage-${stage.name}`, 'app');
    mkdirSync(appDir, { recursive: true });
    stageDirs.set(stage.name, appDir);
    for (const step of stage.steps) {
      if (step.op === 'COPY') copy(copyOf(step), appDir, stageDirs);
      if (step.op !== 'RUN' || stage === runtime) continue;
      if (step.args.startsWith('apt-get')) continue;
      ran.push(step.args);
      execSync(step.args, {
        cwd: appDir,
        stdio: 'pipe',
        // The npm cache holds every dependency; better-sqlite3 from this checkout's compiled module.
        env: {
          ...process.env,
          npm_config_prefer_offline: 'true',
          npm_config_better_sqlite3_local_prebuilds: prebuilds,
        },
      });
    }
  }
  runtimeDir = stageDirs.get(runtime.name) as string;
  const env = Object.assign({}, ...runtime.steps.filter((s) => s.op === 'ENV').map(envOf)) as Record<string, string>;
  runtimeEnv = {
    ...env,
    TOOLS_RUNNER_DATA_DIR: join(work, 'data'),
    TOOLS_RUNNER_ADMIN_PORT: String(await freePort()),
    TOOLS_RUNNER_PORT: '0',
  };
}, 900_000);

afterAll(cleanupAll);

describe('Dockerfile', () => {
  it('installs dependencies once (one compile of better-sqlite3), builds, then prunes the dev dependencies', () => {
    const all = stages.flatMap((s) => s.steps.filter((step) => step.op === 'RUN').map((step) => step.args));
    expect(all.filter((cmd) => /\bnpm (ci|install)\b/.test(cmd))).toEqual(['npm ci --no-audit --no-fund']);
    expect(ran).toEqual(['npm ci --no-audit --no-fund', 'npm run build', 'npm prune --omit=dev --no-audit --no-fund']);
    const copies = runtime.steps.filter((s) => s.op === 'COPY').map(copyOf);
    expect(copies.find((c) => c.dest === './node_modules')?.from).toBe('build');
    // Pruned: no dev dependency reaches the image.
    expect(existsSync(join(runtimeDir, 'node_modules', 'vitest'))).toBe(false);
    expect(
      existsSync(join(runtimeDir, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node')),
    ).toBe(true);
  });

  it('one init (tini), the admin port on 0.0.0.0, audit logs under the data volume', () => {
    const entry = JSON.parse(runtime.steps.find((s) => s.op === 'ENTRYPOINT')?.args ?? '[]') as string[];
    expect(entry.slice(0, 2)).toEqual(['/usr/bin/tini', '--']);
    expect(compose).not.toMatch(/^\s+init:/m);
    expect(runtimeEnv['TOOLS_RUNNER_ADMIN_HOST']).toBe('0.0.0.0');
    expect(runtimeEnv['TOOLS_RUNNER_AUDIT_DIR']).toBeUndefined();
    expect(runtime.steps.find((s) => s.op === 'EXPOSE')?.args.split(' ')).toEqual(['8081', '8082']);
  });

  it('the runtime stage refuses to start without the admin token its 0.0.0.0 admin port needs, naming it', async () => {
    const cli = runCli(
      ['dist/cli/main.js', 'start', '--no-bootstrap'],
      { ...runtimeEnv, TOOLS_RUNNER_RUNNER_SECRET: '', TOOLS_RUNNER_ADMIN_TOKEN: '' },
      { cwd: runtimeDir, bin: process.execPath },
    );
    expect(await cli.exited).toBe(1);
    expect(cli.stderr.join('')).toMatch(/0\.0\.0\.0.*admin.?token|admin.?token.*0\.0\.0\.0/i);
  });

  it('the runtime stage starts the service from its copied files: HEALTHCHECK passes, the admin port wants the token, the shipped tools are served', async () => {
    const entry = JSON.parse(runtime.steps.find((s) => s.op === 'ENTRYPOINT')?.args ?? '[]') as string[];
    const cmd = JSON.parse(runtime.steps.find((s) => s.op === 'CMD')?.args ?? '[]') as string[];
    const [node, ...args] = [...entry.slice(2), ...cmd];
    expect(node).toBe('node');
    const env: Record<string, string> = {
      ...runtimeEnv,
      TOOLS_RUNNER_RUNNER_SECRET: '',
      TOOLS_RUNNER_ADMIN_TOKEN: TOKEN,
      TOOLS_RUNNER_NETWORK_PROBE: '127.0.0.1:1',
    };
    const adminPort = env['TOOLS_RUNNER_ADMIN_PORT'] as string;
    const dataDir = env['TOOLS_RUNNER_DATA_DIR'] as string;
    const service = runCli(args, env, { cwd: runtimeDir, bin: process.execPath });
    const storeUrl = (await service.line(/^store listening on /, 120_000)).replace('store listening on ', '');
    await service.line(/^runner ready$/, 300_000);

    const health = runtime.steps.find((s) => s.op === 'HEALTHCHECK')?.args ?? '';
    const probe = JSON.parse(health.slice(health.indexOf('CMD ') + 4)) as string[];
    expect(probe[0]).toBe('node');
    execFileSync(process.execPath, probe.slice(1), { env: { ...process.env, TOOLS_RUNNER_ADMIN_PORT: adminPort } });

    const admin = `http://127.0.0.1:${adminPort}`;
    expect((await fetch(`${admin}/metrics`)).status).toBe(401);
    expect((await fetch(`${admin}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);

    const client = runCli(
      ['dist/cli/main.js', 'export', '--port', new URL(storeUrl).port],
      { TOOLS_RUNNER_DATA_DIR: dataDir, TOOLS_RUNNER_RUNNER_SECRET: '' },
      { cwd: runtimeDir, bin: process.execPath },
    );
    expect(await client.exited).toBe(0);
    expect((JSON.parse(client.stdout.join('\n')) as { tools: unknown[] }).tools).toHaveLength(shipped);
  });
});

describe('docs/docker-compose.example.yml', () => {
  it('every service restarts; dependencies wait on health (Postgres) or start; no second init', () => {
    expect([...services.keys()]).toEqual(['db', 'nats', 'rcrt', 'tools-runner']);
    for (const [name, body] of services) expect(body, name).toMatch(/^ {4}restart: unless-stopped$/m);
    expect(services.get('db')).toContain('pg_isready');
    expect(services.get('rcrt')).toMatch(/db: \{ condition: service_healthy \}/);
    expect(services.get('tools-runner')).toMatch(/rcrt: \{ condition: service_started \}/);
    for (const body of services.values()) expect(body).not.toMatch(/depends_on: \[/);
  });

  it('tools-runner: the store by its service name on the compose network, the admin port mapped with its token required', () => {
    const body = services.get('tools-runner') as string;
    expect(body).toContain('TOOLS_RUNNER_STORE_URL: http://rcrt:8081');
    expect(body).toContain('ports: ["8082:8082"]');
    expect(body).toMatch(/TOOLS_RUNNER_ADMIN_TOKEN: \$\{TOOLS_RUNNER_ADMIN_TOKEN:\?/);
    expect(body).toMatch(/TOOLS_RUNNER_RUNNER_SECRET: \$\{TOOLS_RUNNER_RUNNER_SECRET:\?/);
  });
});
