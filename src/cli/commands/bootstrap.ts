// `tools-runner bootstrap [dir]`: validates every tool JSON file of the directory, runs the examples
// of each tool that would change (unless --skip-examples) and upserts it into the store (created /
// updated / unchanged / rejected, with the reason); exit 1 when a file is rejected.

import { resolve } from 'node:path';
import { bootstrapTools, renderBootstrapTable } from '../../authoring/bootstrap.js';
import { createExampleEnv } from '../../authoring/example-env.js';
import { secretsLoader } from '../../tool-context/secrets.js';
import { checkNetwork } from '../../authoring/network-probe.js';
import { loadToolFiles } from '../../authoring/tool-files.js';
import { createStamper } from '../../catalog/deployment.js';
import { requestKeysOf, resolveRunnerKey, type RunnerKey } from '../../catalog/runner-key.js';
import { SCHEMA } from '../../breadcrumbs/messages.js';
import { createSchemaValidator, validateToolDefinition, type ToolDefinition } from '../../screen/index.js';
import { confirmLoaded, type WrittenTool } from '../bootstrap-confirm.js';
import { EXIT, type CommandContext } from '../command.js';
import { cliStoreClient, exitForStoreProblem } from '../store-client.js';

/** Runs `tools-runner bootstrap`. */
export async function run({ config, positionals, logger, out, err, signal }: CommandContext): Promise<number> {
  if (positionals.length > 1) {
    err(
      `tools-runner bootstrap: unexpected argument ${JSON.stringify(positionals[1])} (usage: tools-runner bootstrap [dir])`,
    );
    return EXIT.Usage;
  }
  const dir = positionals[0] ?? config.bootstrapDir;
  let files;
  try {
    files = await loadToolFiles(dir, config.workspace);
  } catch (error) {
    err(`tools-runner bootstrap: ${dir}: ${(error as Error).message}`);
    return EXIT.Usage;
  }
  const validator = createSchemaValidator();
  // Signed with the runner's key (the same --runner-secret, or the runner's <data-dir>/runner.key).
  let runnerKey: RunnerKey;
  try {
    runnerKey = resolveRunnerKey({
      runnerSecret: config.runnerSecret,
      dataDir: config.dataDir,
      logger,
      storeUrl: config.storeUrl,
    });
  } catch (error) {
    err(`tools-runner bootstrap: ${(error as Error).message}`);
    return EXIT.Usage;
  }
  const client = cliStoreClient(config, logger, config.agentId, ['curator', 'emitter', 'subscriber']);
  const env = config.skipExamples
    ? undefined
    : createExampleEnv({
        config,
        logger: logger.child({ component: 'examples' }),
        validator,
        ...secretsLoader(config, logger),
      });
  try {
    await client.token();
    const tools = files.flatMap((file) => {
      if (!file.ok || !env) return [];
      const check = validateToolDefinition(file.breadcrumb.context, { origin: 'bootstrap', config, validator });
      return check.ok ? [check.tool] : [];
    });
    // Probed once, on the first tool whose examples run (nothing probed when nothing changes).
    let probed: ReturnType<typeof checkNetwork> | undefined;
    const network = async (tool: ToolDefinition) => (await (probed ??= checkNetwork(tools, config.networkProbe)))(tool);
    const rows = await bootstrapTools({
      client,
      files,
      config,
      logger,
      validator,
      stamper: createStamper(runnerKey.key),
      ...(env ? { examples: { run: (tool, status) => env.run(tool, status), network } } : {}),
    });
    out(renderBootstrapTable(rows));
    // Written is not loaded: confirm the running service lists each tool at its file's version.
    const versions = new Map(
      files.flatMap((f) =>
        f.ok && f.breadcrumb.schema_name === SCHEMA.ToolCode
          ? [[f.path, String(f.breadcrumb.context['version'] ?? '')] as const]
          : [],
      ),
    );
    const written: WrittenTool[] = rows.flatMap((row) =>
      row.action !== 'rejected' && row.name && row.id && versions.has(row.file)
        ? [{ name: row.name, id: row.id, version: versions.get(row.file) as string }]
        : [],
    );
    let notLoaded = 0;
    if (config.bootstrapWaitMs > 0 && written.length > 0) {
      const failed = await confirmLoaded({
        client,
        keys: requestKeysOf(runnerKey),
        workspace: config.workspace,
        tools: written,
        waitMs: config.bootstrapWaitMs,
        signal,
      });
      for (const f of failed) out(`not loaded ${f.name}@${f.version} — ${f.reason}`);
      out(
        failed.length === 0
          ? `the running service lists all ${written.length} tool(s) at their new version`
          : `${failed.length} of ${written.length} tool(s) not loaded by the running service`,
      );
      notLoaded = failed.length;
    }
    if (resolve(dir) !== resolve(config.bootstrapDir) && rows.some((row) => row.action !== 'rejected')) {
      out(
        `note: ${dir} is not this runner's --bootstrap-dir (${config.bootstrapDir}): these tools are operator tools (stamped with the runner key) and run under the operator's policy, but the runner does not apply them again at its next start, and they do not hold their names against later edits the way its own directory's files do.`,
      );
    }
    return notLoaded > 0 || rows.some((row) => row.action === 'rejected') ? EXIT.Failed : EXIT.Ok;
  } catch (error) {
    return exitForStoreProblem(error, { config, err }, 'bootstrap');
  } finally {
    client.close();
    await env?.close();
  }
}
