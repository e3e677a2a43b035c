// `tools-runner start`: the service — embedded store (unless --store-url) plus the runner.

import { startService } from '../../service/service.js';
import { EXIT, type CommandContext } from '../command.js';
import { serviceExtensions } from '../extensions.js';
import { applyTieringFlags } from '../v8-tiering.js';

/** Runs `tools-runner start` until the first SIGTERM/SIGINT/SIGHUP, then drains. */
export async function run({ config, logger, out, signal }: CommandContext): Promise<number> {
  const service = await startService({ config, logger, out, extensions: serviceExtensions(config), signal });
  // from here on the per-call path is what runs: let V8 optimise it sooner (v8-tiering.ts)
  applyTieringFlags();
  if (!signal.aborted) {
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  }
  await service.stop();
  logger.info('stopped');
  return EXIT.Ok;
}
