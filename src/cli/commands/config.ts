// `tools-runner config`: prints the effective configuration (secrets hidden) or, with
// `--markdown` as positional `markdown`, the reference table that the README embeds.

import { OPTIONS, renderConfigTable, type OptionKey } from '../../config/index.js';
import type { Command } from '../command.js';

export const configCommand: Command = {
  name: 'config',
  summary: 'print the effective configuration (or `config markdown`: the reference table)',
  usage: 'tools-runner config [markdown] [--any-flag value ...]',
  async run({ config, positionals, out }) {
    if (positionals[0] === 'markdown') {
      out(renderConfigTable().trimEnd());
      return 0;
    }
    const shown: Record<string, unknown> = {};
    for (const key of Object.keys(OPTIONS) as OptionKey[]) {
      const value = config[key];
      shown[key] = OPTIONS[key].meta.secret && value !== undefined ? '<hidden>' : value;
    }
    out(JSON.stringify(shown, null, 2));
    return 0;
  },
};
