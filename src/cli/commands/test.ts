// `tools-runner test <file|dir>...`: validates tool files and runs every example in the real
// sandbox (tools with `context.api` get a throwaway in-memory store). Prints a per-tool,
// per-example report; exit 1 when anything fails.

import { runExamples } from '../../authoring/examples.js';
import { loadToolFiles, type ToolFile } from '../../authoring/tool-files.js';
import { createStoreClient, type StoreClient } from '../../breadcrumbs/index.js';
import { createSandbox } from '../../sandbox/index.js';
import { createSchemaValidator, validateToolDefinition } from '../../screen/index.js';
import { createToolApi } from '../../service/tool-api.js';
import { createStore, type Store } from '../../store/index.js';
import type { Command } from '../command.js';

export const testCommand: Command = {
  name: 'test',
  summary: 'validate tool files and run their examples in the sandbox',
  usage: 'tools-runner test <file|dir> [...]',
  async run({ config, positionals, logger, out, err }) {
    if (positionals.length === 0) {
      err(`usage: ${testCommand.usage}`);
      return 2;
    }
    const files: ToolFile[] = [];
    for (const target of positionals) {
      try {
        files.push(...(await loadToolFiles(target, config.workspace)));
      } catch (error) {
        err(`tools-runner test: ${target}: ${(error as Error).message}`);
        return 2;
      }
    }
    const validator = createSchemaValidator();
    const quiet = logger.child({ component: 'test' });
    const sandbox = await createSandbox({ config, logger: quiet });
    let store: Store | undefined;
    let client: StoreClient | undefined;
    const apiClient = async (): Promise<StoreClient> => {
      if (!client) {
        store = await createStore({ ...config, host: '127.0.0.1', port: 0, dataDir: ':memory:', authSecret: undefined, logger: quiet });
        client = createStoreClient({ baseUrl: store.url, logger: quiet });
      }
      return client;
    };
    let tools = 0;
    let failedTools = 0;
    let examples = 0;
    let failedExamples = 0;
    try {
      for (const file of files) {
        tools++;
        if (!file.ok) {
          failedTools++;
          out(`✗ ${file.name ?? '?'}  (${file.path})\n    ${file.error}`);
          continue;
        }
        const check = validateToolDefinition(file.breadcrumb.context, { origin: 'bootstrap', config, validator });
        if (!check.ok) {
          failedTools++;
          out(`✗ ${file.name}  (${file.path}) — invalid definition`);
          for (const e of check.errors) out(`    ${e.code} ${e.path}${e.line ? ` ${e.line}:${e.column}` : ''}: ${e.message}`);
          continue;
        }
        const tool = check.tool;
        const apiFor = tool.api ? await apiClient() : undefined;
        const reports = await runExamples(tool, {
          sandbox,
          validator,
          workspace: config.workspace,
          ...(apiFor ? { api: (t, i) => createToolApi({ client: apiFor, tool: t.name, rid: `test:${t.name}:${i + 1}`, config }) } : {}),
        });
        const bad = reports.filter((r) => !r.ok).length;
        examples += reports.length;
        failedExamples += bad;
        if (bad > 0) failedTools++;
        const warn = check.warnings.length > 0 ? `, ${check.warnings.length} warning(s)` : '';
        out(`${bad === 0 ? '✓' : '✗'} ${tool.name} ${tool.version}  (${file.path})${warn}`);
        for (const w of check.warnings) out(`    warning ${w.path}: ${w.message}`);
        reports.forEach((r, i) => out(`    ${r.ok ? '✓' : '✗'} example ${i + 1}: ${r.description} (${r.duration_ms} ms)${r.error ? `\n        ${r.error}` : ''}`));
      }
    } finally {
      await sandbox.close();
      client?.close();
      await store?.close();
    }
    out(`${tools} tool(s), ${examples} example(s): ${tools - failedTools} tool(s) passed, ${failedTools} failed; ${examples - failedExamples} example(s) passed, ${failedExamples} failed`);
    return failedTools === 0 ? 0 : 1;
  },
};

