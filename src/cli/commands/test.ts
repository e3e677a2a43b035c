// `tools-runner test <file|dir>...`: validates tool files and runs every example in the real
// sandbox (tools with `context.api` get a throwaway in-memory store). Examples marked
// `requires_network` are skipped with the reason when the network is unreachable (checked once, up
// front). Prints a per-tool, per-example report; exit 1 when anything fails.

import { createExampleEnv } from '../../authoring/example-env.js';
import { fixLine } from '../../authoring/fix-hint.js';
import { secretsLoader } from '../../tool-context/secrets.js';
import { checkNetwork } from '../../authoring/network-probe.js';
import { loadToolFiles, type ToolFile } from '../../authoring/tool-files.js';
import { createSchemaValidator, validateToolDefinition, type ToolDefinition } from '../../screen/index.js';
import { EXIT, type CommandContext } from '../command.js';

type Checked = { file: ToolFile; error?: string[]; fix?: string; tool?: ToolDefinition; warnings?: string[] };

/** Runs `tools-runner test`. */
export async function run({ config, positionals, logger, out, err }: CommandContext): Promise<number> {
  if (positionals.length === 0) {
    err('usage: tools-runner test <file|dir> [...]');
    return EXIT.Usage;
  }
  const files: ToolFile[] = [];
  for (const target of positionals) {
    try {
      files.push(...(await loadToolFiles(target, config.workspace)));
    } catch (error) {
      err(`tools-runner test: ${target}: ${(error as Error).message}`);
      return EXIT.Usage;
    }
  }
  const validator = createSchemaValidator();
  const checked: Checked[] = files.map((file) => {
    if (!file.ok) return { file, error: [file.error], fix: `fix: edit the file: ${file.error}` };
    const check = validateToolDefinition(file.breadcrumb.context, { origin: 'bootstrap', config, validator });
    const fileWarnings = (file.warnings ?? []).map((w) => `warning: ${w}`);
    if (!check.ok) {
      const fix = fixLine(check.errors);
      return {
        file,
        error: [
          ...fileWarnings,
          ...check.errors.map((e) => `${e.code} ${e.path}${e.line ? ` ${e.line}:${e.column}` : ''}: ${e.message}`),
        ],
        ...(fix ? { fix } : {}),
      };
    }
    return {
      file,
      tool: check.tool,
      warnings: [...fileWarnings, ...check.warnings.map((w) => `warning ${w.path}: ${w.message}`)],
    };
  });
  const network = await checkNetwork(
    checked.flatMap((c) => (c.tool ? [c.tool] : [])),
    config.networkProbe,
  );
  const env = createExampleEnv({
    config,
    logger: logger.child({ component: 'test' }),
    validator,
    ...secretsLoader(config, logger),
  });
  const count = { tools: 0, failedTools: 0, examples: 0, failedExamples: 0, skipped: 0 };
  try {
    for (const { file, error, fix, tool, warnings = [] } of checked) {
      count.tools++;
      if (!tool) {
        count.failedTools++;
        out(`✗ ${file.name ?? '?'}  (${file.path})${file.ok ? ' — invalid definition' : ''}`);
        for (const line of error ?? []) out(`    ${line}`);
        if (fix) out(`    ${fix}`);
        continue;
      }
      const reports = await env.run(tool, network(tool));
      const bad = reports.filter((r) => !r.ok).length;
      count.examples += reports.length;
      count.failedExamples += bad;
      count.skipped += reports.filter((r) => r.skipped).length;
      if (bad > 0) count.failedTools++;
      const warn = warnings.length > 0 ? `, ${warnings.length} warning(s)` : '';
      out(`${bad === 0 ? '✓' : '✗'} ${tool.name} ${tool.version}  (${file.path})${warn}`);
      for (const w of warnings) out(`    ${w}`);
      reports.forEach((r, i) => {
        if (r.skipped) out(`    - example ${i + 1}: ${r.description} skipped (${r.skipped})`);
        else
          out(
            `    ${r.ok ? '✓' : '✗'} example ${i + 1}: ${r.description} (${r.duration_ms} ms)${r.error ? `\n        ${r.error}` : ''}`,
          );
      });
    }
  } finally {
    await env.close();
  }
  const { tools, failedTools, examples, failedExamples, skipped } = count;
  out(
    `${tools} tool(s), ${examples} example(s): ${tools - failedTools} tool(s) passed, ${failedTools} failed; ${examples - failedExamples - skipped} example(s) passed, ${failedExamples} failed, ${skipped} skipped`,
  );
  return failedTools === 0 ? EXIT.Ok : EXIT.Failed;
}
