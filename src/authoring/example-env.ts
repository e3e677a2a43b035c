// Where operator-side example runs happen (`tools-runner test`, `bootstrap`, bootstrap at `start`):
// the sandbox (the caller's, or one created on first use) and, for tools granted `context.api`, a
// throwaway in-memory store, so examples never write into the real store. Both are created lazily
// and released by close().

import { createStoreClient, type StoreClient } from '../breadcrumbs/index.js';
import type { Config } from '../config/index.js';
import type { Logger } from '../logger.js';
import { createSandbox, type Sandbox } from '../sandbox/index.js';
import type { SchemaValidator, ToolDefinition } from '../screen/index.js';
import { createToolApi } from '../tool-context/tool-api.js';
import { createStore, type Store } from '../store/index.js';
import { runExamples, type ExampleReport } from './examples.js';
import type { NetworkStatus } from './network-probe.js';

/** Runs a tool's examples for the operator; close() stops what it started. */
export interface ExampleEnv {
  run(tool: ToolDefinition, network?: NetworkStatus): Promise<ExampleReport[]>;
  close(): Promise<void>;
}

/** Creates the environment; `sandbox` given = used and left open, else one is created on first use. */
export function createExampleEnv(options: {
  config: Config;
  logger: Logger;
  validator: SchemaValidator;
  sandbox?: Sandbox;
  /** Values of required secrets for examples (the CLI reads --secrets-file); never the real store's secrets. */
  secrets?: () => Promise<Record<string, string>>;
}): ExampleEnv {
  const { config, logger, validator } = options;
  let sandbox: Promise<Sandbox> | undefined = options.sandbox ? Promise.resolve(options.sandbox) : undefined;
  let ownSandbox = false;
  let fileSecrets: Promise<Record<string, string>> | undefined;
  let store: Promise<{ store: Store; client: StoreClient }> | undefined;
  const apiStore = (): Promise<{ store: Store; client: StoreClient }> =>
    (store ??= createStore({
      ...config,
      host: '127.0.0.1',
      port: 0,
      dataDir: ':memory:',
      authSecret: undefined,
      logger,
    }).then((s) => ({
      store: s,
      client: createStoreClient({ baseUrl: s.url, logger }),
    })));
  return {
    async run(tool, network) {
      if (!sandbox) {
        ownSandbox = true;
        sandbox = createSandbox({ config, logger });
      }
      const api = tool.api ? (await apiStore()).client : undefined;
      // examples get secrets only from the caller's loader (--secrets-file), never from the real store
      const secrets =
        options.secrets && tool.requiredSecrets.length > 0 ? await (fileSecrets ??= options.secrets()) : undefined;
      return runExamples(tool, {
        ...(secrets ? { secrets } : {}),
        skipWithoutSecrets: true,
        sandbox: await sandbox,
        validator,
        workspace: config.workspace,
        ...(network ? { network } : {}),
        ...(api
          ? {
              api: (t, i) =>
                createToolApi({
                  client: api,
                  tool: t.name,
                  rid: `example:${t.name}:${i + 1}`,
                  config,
                  schemas: t.apiSchemas,
                }),
            }
          : {}),
      });
    },
    async close() {
      if (ownSandbox && sandbox) await (await sandbox).close();
      if (store) {
        const { store: s, client } = await store;
        client.close();
        await s.close();
      }
    },
  };
}
