// Loads a frozen Config from environment variables and CLI flags (flags win over env, env over
// defaults). This is the only module that looks at `process.env`, and only when no env is passed.

import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import { ErrorCode, RunnerError } from '../errors.js';
import { OPTIONS, configSchema, envName, flagName, type Config, type OptionKey } from './schema.js';

export interface LoadInput {
  /** Environment; defaults to process.env. */
  env?: Record<string, string | undefined>;
  /** Arguments after the subcommand, e.g. ['--port', '0', 'file.json']. */
  argv?: readonly string[];
  /** Values set by code (tests, embedding); they win over env and flags. */
  overrides?: Partial<Record<OptionKey, unknown>>;
}

export interface Loaded {
  config: Config;
  /** Arguments that are not flags, in order. */
  positionals: string[];
}

const KEY_BY_FLAG = new Map<string, OptionKey>(
  (Object.keys(OPTIONS) as OptionKey[]).map((key) => [flagName(key), key]),
);

function isBoolean(key: OptionKey): boolean {
  return typeof OPTIONS[key].schema.safeParse(undefined).data === 'boolean';
}

/** Splits argv into flag values (by config key) and positionals. Unknown flags are an error. */
export function parseArgv(argv: readonly string[]): {
  values: Partial<Record<OptionKey, string>>;
  positionals: string[];
} {
  const values: Partial<Record<OptionKey, string>> = {};
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i] as string;
    if (token === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (!token.startsWith('--')) {
      positionals.push(token);
      continue;
    }
    const eq = token.indexOf('=');
    let name = eq === -1 ? token.slice(2) : token.slice(2, eq);
    let value: string | undefined = eq === -1 ? undefined : token.slice(eq + 1);
    let key = KEY_BY_FLAG.get(name);
    if (!key && name.startsWith('no-') && value === undefined) {
      const negated = KEY_BY_FLAG.get(name.slice(3));
      if (negated && isBoolean(negated)) {
        key = negated;
        name = name.slice(3);
        value = 'false';
      }
    }
    if (!key) {
      throw new RunnerError(
        ErrorCode.ConfigInvalid,
        `unknown option "--${name}" (run "tools-runner help" for the list)`,
      );
    }
    if (value === undefined) {
      const next = argv[i + 1];
      if (isBoolean(key)) {
        if (next !== undefined && /^(true|false|1|0|yes|no|on|off)$/i.test(next)) {
          value = next;
          i++;
        } else {
          value = 'true';
        }
      } else {
        if (next === undefined) {
          throw new RunnerError(ErrorCode.ConfigInvalid, `option "--${name}" needs a value`);
        }
        value = next;
        i++;
      }
    }
    values[key] = value;
  }
  return { values, positionals };
}

/** Builds the configuration; throws RunnerError(config.invalid) naming the option, its source and value. */
export function loadConfig(input: LoadInput = {}): Loaded {
  const env = input.env ?? process.env;
  const { values: flags, positionals } = parseArgv(input.argv ?? []);
  const raw: Record<string, unknown> = {};
  const source: Record<string, string> = {};
  for (const key of Object.keys(OPTIONS) as OptionKey[]) {
    const fromEnv = env[envName(key)];
    if (fromEnv !== undefined && fromEnv !== '') {
      raw[key] = fromEnv;
      source[key] = envName(key);
    }
    const fromFlag = flags[key];
    if (fromFlag !== undefined) {
      raw[key] = fromFlag;
      source[key] = '--' + flagName(key);
    }
    if (input.overrides && key in input.overrides) {
      raw[key] = input.overrides[key];
      source[key] = 'overrides';
    }
  }
  // Defaults that depend on the environment, never on the working directory.
  raw['dataDir'] ??= defaultDataDir(env);
  raw['auditDir'] ??= join(raw['dataDir'] === ':memory:' ? defaultDataDir(env) : String(raw['dataDir']), 'audit');
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const key = String(issue.path[0] ?? '');
      const shown = key in OPTIONS && OPTIONS[key as OptionKey].meta.secret ? '<hidden>' : JSON.stringify(raw[key]);
      return `${source[key] ?? key}=${shown}: ${issue.message}`;
    });
    throw new RunnerError(ErrorCode.ConfigInvalid, `invalid configuration: ${problems.join('; ')}`);
  }
  return { config: Object.freeze(parsed.data), positionals };
}

/**
 * The default `--data-dir`: `$XDG_DATA_HOME/tools-runner` (when XDG_DATA_HOME is an absolute path, as
 * the XDG spec requires), else `$HOME/.local/share/tools-runner`.
 */
export function defaultDataDir(env: Record<string, string | undefined>): string {
  const xdg = env['XDG_DATA_HOME'];
  if (xdg !== undefined && isAbsolute(xdg)) return join(xdg, 'tools-runner');
  const home = env['HOME'] !== undefined && env['HOME'] !== '' ? env['HOME'] : homedir();
  return join(home, '.local', 'share', 'tools-runner');
}

/**
 * The configuration with every default and the given overrides; for tests and embedding. No
 * TOOLS_RUNNER_* variable is read; the default data directory still follows XDG_DATA_HOME / HOME.
 */
export function defaultConfig(overrides: Partial<Record<OptionKey, unknown>> = {}): Config {
  return loadConfig({
    env: { XDG_DATA_HOME: process.env['XDG_DATA_HOME'], HOME: process.env['HOME'] },
    argv: [],
    overrides,
  }).config;
}

/**
 * The runner's own environment, for the one consumer that needs it: host tools' `envPassthrough`
 * allowlist (only listed keys are ever passed on). Kept here so that `config/` stays the only
 * reader of process.env.
 */
export function hostEnvironment(): Readonly<Record<string, string | undefined>> {
  return { ...process.env };
}
