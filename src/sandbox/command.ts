// The exact Deno command of a sandbox process (docs/sandbox.md "Sandbox"): explicit minimal environment,
// no config/lock/remote/npm, the heap flag, the allow list (if any) and ALWAYS the private-range deny
// list. The harness file is the entry module; tool code never is.
//
// DENO_DIR: the recipe's throwaway per-process DENO_DIR exists so that nothing (localStorage, caches,
// compiled code) survives a process. We go one step further: DENO_DIR points below /dev/null, a path
// that can never be created, so Deno keeps every cache in memory and writes nothing at all (measured:
// 8-12 ms less per spawn on this machine, where SQLite cache files and their removal dominated).
// The transpile and V8 code caches are off too (`DENO_EMIT_CACHE_MODE=disable`, `--no-code-cache`).
// An import map refuses every node: built-in (they would reach the network around the harness's
// effect counting). The service writes it once to a file of its private temp dir, beside the
// transpiled harness (a 15 KB inline map made every `ps` line unreadable); Deno reads an import map
// at start-up like its entry module, with no read permission, and tool code cannot read the file.
// The harness's one argument `net` says the process may use the network.

import { fileURLToPath } from 'node:url';
import { DENY_NET } from './net-policy.js';

/** Path of the trusted harness (same relative place from src/sandbox and dist/sandbox). */
export const HARNESS_PATH = fileURLToPath(new URL('../../sandbox/harness.ts', import.meta.url));

/** A DENO_DIR that cannot exist: Deno falls back to in-memory caches and persists nothing. */
export const DENO_DIR_NOWHERE = '/dev/null/deno-dir';

/** Fixed PATH of the child: Deno needs no PATH lookups, and nothing of the service's env leaks. */
export const CHILD_PATH = '/usr/local/bin:/usr/bin:/bin';

/**
 * Node built-ins a tool could import (`node:net`, `node:http`, ... and their bare names) reach the
 * network around the harness's counting wrappers; tools are self-contained (screening refuses every
 * import), so the import map of every sandbox process maps them all to a module that throws.
 */
export const NODE_BUILTINS: readonly string[] = Object.freeze([
  '_http_agent',
  '_http_common',
  '_http_outgoing',
  '_http_server',
  '_stream_duplex',
  '_stream_passthrough',
  '_stream_readable',
  '_stream_transform',
  '_stream_writable',
  '_tls_common',
  '_tls_wrap',
  'assert',
  'assert/strict',
  'async_hooks',
  'buffer',
  'child_process',
  'cluster',
  'console',
  'constants',
  'crypto',
  'dgram',
  'diagnostics_channel',
  'dns',
  'dns/promises',
  'domain',
  'events',
  'fs',
  'fs/promises',
  'http',
  'http2',
  'https',
  'inspector',
  'inspector/promises',
  'module',
  'net',
  'os',
  'path',
  'path/posix',
  'path/win32',
  'perf_hooks',
  'process',
  'punycode',
  'querystring',
  'readline',
  'readline/promises',
  'repl',
  'sqlite',
  'stream',
  'stream/consumers',
  'stream/promises',
  'stream/web',
  'string_decoder',
  'sys',
  'test',
  'test/reporters',
  'timers',
  'timers/promises',
  'tls',
  'trace_events',
  'tty',
  'url',
  'util',
  'util/types',
  'v8',
  'vm',
  'wasi',
  'worker_threads',
  'zlib',
]);

/** The import map: every node built-in (prefixed and bare) resolves to a module that throws. */
export const IMPORT_MAP_JSON = JSON.stringify({
  imports: Object.fromEntries(
    NODE_BUILTINS.flatMap((name) => {
      const refusal = `data:application/javascript,throw new Error(${JSON.stringify(`node:${name} is not available to tools`)})`;
      return [
        [`node:${name}`, refusal],
        [name, refusal],
      ];
    }),
  ),
});

/** The import map inline, as a `--import-map` value (15 KB on every command line: the service writes it to a file instead). */
export const IMPORT_MAP = `data:application/json,${IMPORT_MAP_JSON}`;

/** What varies between sandbox processes. */
export interface DenoCommandInput {
  denoPath: string;
  /** Already validated and normalised hosts ("api.example.com:443"); [] = no network. */
  net: readonly string[];
  /** The `--deny-net` list; DENY_NET unless the tool has operator-granted private hosts (net-policy denyNetFor). */
  deny?: readonly string[];
  /** Extra permissions granted as `--allow-<name>` (already checked against the operator's policy); `net` = any host by name. */
  extra?: readonly string[];
  memoryMb: number;
  /** DENO_DIR; DENO_DIR_NOWHERE unless a test needs a real one. */
  denoDir?: string;
  /** Per-process empty working directory. */
  cwd: string;
  harnessPath?: string;
  /** A file holding IMPORT_MAP_JSON (the service's private temp dir); absent: the map inline. */
  importMapPath?: string;
}

/** A complete spawn recipe: binary, arguments, environment, working directory. */
export interface DenoCommand {
  file: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  /** Niceness the launcher gives the process right after it started (best effort); absent: unchanged. */
  niceness?: number;
  /**
   * Whether the process gets a session and process group of its own (setsid), so that whatever it
   * starts dies with it: only a process granted `run` can start anything. Every other one stays in its
   * launcher's session: on a kernel with autogroup scheduling (most Linux distributions) every session
   * is weighed as one against all others, whatever the niceness of its processes, so one session per
   * sandbox process gave each as much CPU as the whole service (docs/sandbox.md "Priority"); and the
   * setsid exec cost each process ~0.5-0.9 ms of CPU. Absent: true.
   */
  ownGroup?: boolean;
}

/** Whether `cmd` asks for a session and process group of its own (DenoCommand.ownGroup; absent: yes). */
export function wantsOwnGroup(cmd: Pick<DenoCommand, 'ownGroup'>): boolean {
  return cmd.ownGroup !== false;
}

/** The whole environment of a sandbox process (and of the relay launcher that starts them). */
export function sandboxEnv(denoDir: string): Record<string, string> {
  return {
    PATH: CHILD_PATH,
    DENO_DIR: denoDir,
    DENO_NO_PACKAGE_JSON: '1',
    DENO_NO_UPDATE_CHECK: '1',
    DENO_EMIT_CACHE_MODE: 'disable',
    // Trust the OS certificate store as well as Deno's bundled roots, so tools reach HTTPS hosts
    // behind a corporate/egress proxy CA the operator installed system-wide.
    DENO_TLS_CA_STORE: 'mozilla,system',
    NO_COLOR: '1',
  };
}

/** Builds the command line, environment and cwd of one sandbox process. */
export function buildDenoCommand(input: DenoCommandInput): DenoCommand {
  const args = [
    'run',
    '-q',
    '--no-prompt',
    '--no-config',
    '--no-lock',
    '--no-remote',
    '--no-npm',
    // the DENO_DIR is thrown away with the process: caching compiled code there is pure cost
    '--no-code-cache',
    `--import-map=${input.importMapPath ?? IMPORT_MAP}`,
    `--v8-flags=--max-old-space-size=${Math.floor(input.memoryMb)}`,
  ];
  if (input.net.length > 0) args.push(`--allow-net=${input.net.join(',')}`);
  for (const name of input.extra ?? []) args.push(`--allow-${name}`);
  args.push(`--deny-net=${(input.deny ?? DENY_NET).join(',')}`);
  args.push(input.harnessPath ?? HARNESS_PATH);
  // the harness refuses Workers (unwrapped globals) in a process that may use the network
  if (input.net.length > 0 || (input.extra ?? []).includes('net')) args.push('net');
  return {
    file: input.denoPath,
    args,
    env: sandboxEnv(input.denoDir ?? DENO_DIR_NOWHERE),
    cwd: input.cwd,
    ownGroup: (input.extra ?? []).includes('run'),
  };
}
