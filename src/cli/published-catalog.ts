// The catalog a running runner published to the store (src/export/catalog-source.ts), for client
// commands (export, list, describe): the store and the runner key found as `call` finds them, and one
// line on stderr, with the command's exit code, when there is none to read.

import { missingCatalogReason, readCatalog, type CatalogTool } from '../export/index.js';
import { EXIT, type CommandContext } from './command.js';
import { cliKeys, cliStoreClient, exitForStoreProblem } from './store-client.js';

/** The published catalog's tools, or the exit code after a one-line explanation on `err`. */
export async function publishedCatalog(
  { config, logger, err }: CommandContext,
  command: string,
  /** `export`: how to do without a store (--from-files). */
  offline?: { clause: string; sentence: string },
): Promise<CatalogTool[] | number> {
  const client = cliStoreClient(config, logger, 'tools-runner-cli', ['subscriber']);
  const tail = offline ? `; ${offline.clause}` : '';
  try {
    // The store first: "no store" is the more basic problem to report.
    await client.token();
    const keys = cliKeys({ config, logger }, command);
    if (typeof keys === 'string') {
      err(`${keys}${tail}`);
      return EXIT.Usage;
    }
    const read = await readCatalog(client, config.workspace, keys);
    if (!read.catalog) {
      err(
        `tools-runner ${command}: no catalog to ${command === 'export' ? 'export' : 'read'}: ${missingCatalogReason(read, config.workspace)}${tail}`,
      );
      return EXIT.Failed;
    }
    return read.catalog.tools;
  } catch (error) {
    return exitForStoreProblem(error, { config, err }, command, offline?.sentence);
  } finally {
    client.close();
  }
}
