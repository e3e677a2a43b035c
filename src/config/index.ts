// Public surface of the configuration module.
export {
  loadConfig,
  defaultConfig,
  defaultDataDir,
  hostEnvironment,
  parseArgv,
  type LoadInput,
  type Loaded,
} from './load.js';
export {
  OPTIONS,
  SHIPPED_BOOTSTRAP_DIR,
  configSchema,
  envName,
  flagName,
  type Config,
  type OptionKey,
} from './schema.js';
export { optionDefault, renderConfigTable, spliceConfigTable } from './table.js';
export { AGENT_TOOLS } from './values.js';
