// The one configuration schema of tools-runner.
//
// Every option has a camelCase key, a CLI flag (`--kebab-case`) and an environment variable
// (`TOOLS_RUNNER_SCREAMING_CASE`), derived from the key so the three can never drift apart.
// Raw values from env and argv are strings; each option's zod schema coerces them.
// docs/configuration.md's table is generated from OPTIONS (`npm run docs:config`).

import { z } from 'zod';
import { SERVICE_OPTIONS } from './options-service.js';
import { TOOL_OPTIONS } from './options-tools.js';

export { SHIPPED_BOOTSTRAP_DIR, type OptionGroup, type OptionMeta } from './values.js';

/** All options, in documentation order (./options-service.ts, then ./options-tools.ts). */
export const OPTIONS = { ...SERVICE_OPTIONS, ...TOOL_OPTIONS } as const;

export type OptionKey = keyof typeof OPTIONS;

type Shape = { [K in OptionKey]: (typeof OPTIONS)[K]['schema'] };

function buildShape(): Shape {
  const shape = {} as Record<string, z.ZodType>;
  for (const [key, option] of Object.entries(OPTIONS)) shape[key] = option.schema;
  return shape as Shape;
}

/** The zod schema of a complete configuration. Unknown keys are rejected. */
export const configSchema = z.strictObject(buildShape());

export type Config = Readonly<z.output<typeof configSchema>>;

/** `dataDir` -> `--data-dir`. */
export function flagName(key: string): string {
  return key.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());
}

/** `dataDir` -> `TOOLS_RUNNER_DATA_DIR`. */
export function envName(key: string): string {
  return 'TOOLS_RUNNER_' + key.replace(/[A-Z]/g, (c) => '_' + c).toUpperCase();
}
