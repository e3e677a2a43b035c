// `tools-runner start`: the service — embedded store (unless --store-url) plus the runner.

import { startService } from '../../service/service.js';
import type { Command } from '../command.js';
import { serviceExtensions } from '../extensions.js';

export const startCommand: Command = {
  name: 'start',
  summary: 'run the runner (with the embedded store unless --store-url is given)',
  usage: 'tools-runner start [--store-url URL] [--port P] [--data-dir D] [--admin-port P] ...',
  async run({ config, logger, out, signal }) {
    const service = await startService({ config, logger, out, extensions: serviceExtensions(config) });
    if (!signal.aborted) {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    }
    await service.stop();
    logger.info('stopped');
    return 0;
  },
};
