// The optional parts `start` adds to the service (tool authoring, bootstrap), chosen by config.

import type { Config } from '../config/index.js';
import type { ServiceExtension } from '../service/service.js';

/** Extensions enabled by this configuration. */
export function serviceExtensions(_config: Config): ServiceExtension[] {
  return [];
}
