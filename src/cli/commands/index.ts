// The command table: names, help text, options and exit codes of every subcommand, with a loader
// that imports the command's code only when it runs (a `call` must not pay for the service).

import { EXIT, type Command } from '../command.js';

const USAGE: [number, string] = [EXIT.Usage, 'bad usage: unknown option, invalid value, missing or malformed argument'];
const STORE: [number, string] = [EXIT.Unavailable, 'no store reachable at the store URL, or it refused the CLI\'s credentials'];
const CLIENT_OPTIONS = ['storeUrl', 'host', 'port', 'storeToken', 'ownerId', 'adminKey', 'workspace'] as const;

/** Every subcommand, in the order `tools-runner help` lists them. */
export const COMMANDS: readonly Command[] = [
  {
    name: 'start',
    summary: 'run the runner (with the embedded store unless --store-url is given)',
    usage: 'tools-runner start [--store-url URL] [--port P] [--data-dir D] [--admin-port P] ...',
    description: [
      'Runs the service until SIGTERM/SIGINT: the embedded store (unless --store-url), the runner, and the admin port.',
      'Prints "store listening on http://HOST:PORT" and "runner ready" on stdout; log lines go to stderr',
      '(human-readable on a terminal, JSON otherwise; --log-format). Bootstraps --bootstrap-dir unless --no-bootstrap.',
    ],
    options: ['storeUrl', 'host', 'port', 'dataDir', 'adminHost', 'adminPort', 'bootstrap', 'bootstrapDir', 'skipExamples', 'allowPrivateHosts', 'manifests', 'logLevel', 'logFormat', 'workspace'],
    exits: [[EXIT.Ok, 'stopped by SIGTERM/SIGINT after draining'], [EXIT.Failed, 'start-up failed (the reason is on stderr)'], USAGE, [EXIT.Interrupted, 'a second signal: exited without draining']],
    client: false,
    load: async () => (await import('./start.js')).run,
  },
  {
    name: 'store',
    summary: 'run the embedded RCRT-compatible breadcrumb store (HTTP + SQLite)',
    usage: 'tools-runner store [--host H] [--port P] [--data-dir D] [--auth-secret S --admin-key K] [--secrets-key K]',
    description: ['Runs the embedded store alone until SIGTERM/SIGINT; prints "store listening on http://HOST:PORT" once it accepts connections.'],
    options: ['host', 'port', 'dataDir', 'maxBodyBytes', 'authSecret', 'adminKey', 'secretsKey', 'pingIntervalMs', 'eventRetention'],
    exits: [[EXIT.Ok, 'stopped by SIGTERM/SIGINT'], [EXIT.Failed, 'the store could not start (port in use, data dir not writable, ...)'], USAGE],
    client: false,
    load: async () => (await import('./store.js')).run,
  },
  {
    name: 'call',
    summary: 'run a tool through the store and print its response',
    usage: 'tools-runner call <tool> [json | -] [--store-url URL] [--call-timeout-ms MS] [--call-progress]',
    description: [
      'Writes a tool.request.v1 for <tool> with the JSON input (an argument, or "-" to read stdin; default {}),',
      'waits for its tool.response.v1 and prints the response context as JSON on stdout. Needs a running runner.',
    ],
    options: [...CLIENT_OPTIONS, 'callTimeoutMs', 'callProgress'],
    exits: [
      [EXIT.Ok, 'the tool answered with success'],
      [EXIT.Failed, 'the tool answered with an error (printed), or the store refused the request (e.g. 413: input over the store\'s --max-body-bytes)'],
      [EXIT.Usage, 'bad usage, or the input is not valid JSON'],
      [EXIT.Timeout, 'no response within --call-timeout-ms'],
      STORE,
      [EXIT.Interrupted, 'stopped by SIGINT/SIGTERM before the response came'],
    ],
    client: true,
    load: async () => (await import('./call.js')).run,
  },
  {
    name: 'tail',
    summary: 'print executions as they happen (from the admin port)',
    usage: 'tools-runner tail [json] [--admin-host H] [--admin-port P]',
    description: [
      'Follows the runner\'s admin WebSocket /live: one line per execution start and finish, or the raw JSON messages',
      'with the positional "json". Tool names and ids chosen by agents are shown with control characters escaped.',
    ],
    options: ['adminHost', 'adminPort'],
    exits: [[EXIT.Ok, 'stopped by SIGINT/SIGTERM'], [EXIT.Failed, 'the admin port is not reachable, or the runner closed the feed'], USAGE],
    client: true,
    load: async () => (await import('./tail.js')).run,
  },
  {
    name: 'test',
    summary: 'validate tool files and run their examples in the sandbox',
    usage: 'tools-runner test <file|dir> [...] [--network-probe HOST:PORT]',
    description: [
      'Validates every tool JSON file (operator policy) and runs each example in the real sandbox; prints a per-tool,',
      'per-example report. Examples marked "requires_network": true are skipped, with the reason, when the network is',
      'unreachable (checked once, up front: a TCP connect to --network-probe, default the tool\'s first host on port 443).',
    ],
    options: ['networkProbe', 'workspace', 'bootstrapAllow', 'allowPrivateHosts', 'secretsFile', 'denoPath'],
    exits: [[EXIT.Ok, 'every tool valid and every example passed (or was skipped)'], [EXIT.Failed, 'a file is invalid or an example failed'], USAGE],
    client: false,
    load: async () => (await import('./test.js')).run,
  },
  {
    name: 'bootstrap',
    summary: 'upsert tool JSON files into the store (default dir: --bootstrap-dir)',
    usage: 'tools-runner bootstrap [dir] [--store-url URL] [--skip-examples]',
    description: [
      'Validates every tool JSON file of [dir], runs its examples in the sandbox (a tool whose example fails is',
      'rejected, unless --skip-examples), and upserts the rest: created / updated / unchanged / rejected, with the reason.',
      'Only tools from the runner\'s own --bootstrap-dir are trusted as operator tools; a tool bootstrapped from another',
      'directory is validated by the runner like an agent\'s tool (agent policy).',
    ],
    options: [...CLIENT_OPTIONS, 'bootstrapDir', 'skipExamples', 'networkProbe', 'bootstrapAllow', 'allowPrivateHosts', 'secretsFile'],
    exits: [[EXIT.Ok, 'every file created, updated or unchanged'], [EXIT.Failed, 'a file was rejected (invalid, failing example, store refusal)'], USAGE, STORE],
    client: true,
    load: async () => (await import('./bootstrap.js')).run,
  },
  {
    name: 'export',
    summary: 'print the runnable catalog as OpenAI tools, MCP tools, a RAP toolset or TypeScript types',
    usage: 'tools-runner export [--format openai|mcp|rap|typescript|aruntime] [--store-url URL --runner-secret S | --from-files [--bootstrap-dir D] [--manifests M]]',
    description: [
      'Prints the workspace\'s runnable catalog (tool.catalog.v1, kept by a running runner and sealed with its runner secret) in one',
      'format, with the reverse name map; the same mapping the live MCP endpoint serves. --from-files builds it offline from',
      '--bootstrap-dir and --manifests instead. Tools that cannot be exported are reported on stderr and make the exit code 1.',
    ],
    options: [...CLIENT_OPTIONS, 'runnerSecret', 'format', 'fromFiles', 'bootstrapDir', 'manifests', 'grantedCapabilities'],
    exits: [[EXIT.Ok, 'printed'], [EXIT.Failed, 'no sealed catalog in the store (no runner with this secret has run), a tool left out, or no valid tool file'], USAGE, STORE],
    client: true,
    load: async () => (await import('./export.js')).run,
  },
  {
    name: 'approvals',
    summary: 'list the calls of the workspace waiting for an approval',
    usage: 'tools-runner approvals [json] [--store-url URL --runner-secret S]',
    description: [
      'Lists the runner\'s waiting tool.approval.request.v1 records (sealed with the runner secret; not expired, not decided,',
      'request not answered): id, tool@version, requesting agent, expires in, approvers and the redacted input preview.',
      'With the positional "json": a JSON array. Decide one with `tools-runner approve|deny <id>`.',
    ],
    options: [...CLIENT_OPTIONS, 'runnerSecret', 'dataDir'],
    exits: [[EXIT.Ok, 'listed (possibly none)'], USAGE, STORE],
    client: true,
    load: async () => (await import('./approvals.js')).run,
  },
  {
    name: 'approve',
    summary: 'approve a waiting call (tools-runner approvals lists them)',
    usage: 'tools-runner approve <approval id> [--reason TEXT] [--store-url URL --runner-secret S]',
    description: [
      'Writes the operator\'s approval (a tool.approval.response.v1 sealed with the runner secret) for one approval request;',
      'the runner then runs the call with metadata.approval_id. Refused for unknown ids, approvals the operator may not decide',
      '(the contract names other approvers), decided or expired ones, and requests already answered.',
    ],
    options: [...CLIENT_OPTIONS, 'runnerSecret', 'dataDir', 'reason'],
    exits: [[EXIT.Ok, 'approved'], [EXIT.Failed, 'unknown id, not decidable by the operator, already decided, expired or answered (the reason is on stderr)'], USAGE, STORE],
    client: true,
    load: async () => (await import('./approve.js')).run,
  },
  {
    name: 'deny',
    summary: 'deny a waiting call (answered approval.required with your --reason)',
    usage: 'tools-runner deny <approval id> [--reason TEXT] [--store-url URL --runner-secret S]',
    description: [
      'Writes the operator\'s denial for one approval request; the runner answers the call approval.required naming the operator',
      'and the reason. Refused like approve for unknown, undecidable, decided, expired or answered approvals.',
    ],
    options: [...CLIENT_OPTIONS, 'runnerSecret', 'dataDir', 'reason'],
    exits: [[EXIT.Ok, 'denied'], [EXIT.Failed, 'unknown id, not decidable by the operator, already decided, expired or answered (the reason is on stderr)'], USAGE, STORE],
    client: true,
    load: async () => (await import('./deny.js')).run,
  },
  {
    name: 'mcp',
    summary: 'serve the catalog over MCP on stdio (a client of --store-url, or an embedded service)',
    usage: 'tools-runner mcp [--store-url URL --runner-secret S] [--data-dir D] [--admin-port P] ...',
    description: [
      'An MCP server on stdio for desktop clients: tools/list is the runnable catalog, tools/call runs a tool through the runner.',
      'With --store-url it is a client of that store (a runner with the same --runner-secret must be serving it); without, it embeds',
      'the whole service (store, runner, admin port with /mcp) like `start`. stdout carries only MCP frames; logs go to stderr.',
    ],
    options: ['storeUrl', 'runnerSecret', 'dataDir', 'port', 'adminHost', 'adminPort', 'adminToken', 'mcpProgressMs', 'callTimeoutMs', 'workspace', 'logLevel'],
    exits: [[EXIT.Ok, 'stdin closed or stopped by SIGTERM/SIGINT'], [EXIT.Failed, 'the embedded service or the MCP extension did not start'], USAGE],
    client: false,
    load: async () => (await import('./mcp.js')).run,
  },
  {
    name: 'config',
    summary: 'print the effective configuration (or `config markdown`: the reference table)',
    usage: 'tools-runner config [markdown] [--any-flag value ...]',
    description: ['Prints the effective configuration as JSON (secrets hidden), or with "markdown" the reference table of docs/configuration.md.'],
    options: [],
    exits: [[EXIT.Ok, 'printed'], USAGE],
    client: true,
    load: async () => (await import('./config.js')).run,
  },
];
