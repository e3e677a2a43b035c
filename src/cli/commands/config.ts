// `tools-runner config`: prints the effective configuration (secrets hidden) or, with the
// positional `markdown`, the reference table that docs/configuration.md embeds.

import { OPTIONS, renderConfigTable, type OptionKey } from '../../config/index.js';
import { EXIT, type CommandContext } from '../command.js';
import { safeJson } from '../sanitize.js';

/** Runs `tools-runner config`. */
export async function run({ config, positionals, out, err }: CommandContext): Promise<number> {
  if (positionals[0] === 'markdown' && positionals.length === 1) {
    out(renderConfigTable().trimEnd());
    return EXIT.Ok;
  }
  if (positionals.length > 0) {
    err(
      `tools-runner config: unexpected argument ${JSON.stringify(positionals[0])} (usage: tools-runner config [markdown])`,
    );
    return EXIT.Usage;
  }
  const shown: Record<string, unknown> = {};
  for (const key of Object.keys(OPTIONS) as OptionKey[]) {
    const value = config[key];
    shown[key] = OPTIONS[key].meta.secret && value !== undefined ? '<hidden>' : value;
  }
  out(safeJson(shown, 2));
  return EXIT.Ok;
}
