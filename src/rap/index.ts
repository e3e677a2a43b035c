// Public surface of src/rap: the RAP tool server (our catalog for RAP runtimes), the RAP runtime
// (remote toolsets as host tools) and the pieces tests and other parts use directly.

export { configuredRapBase, createRap, rapInvokeUrl, type Rap, type RapOptions } from './rap.js';
export {
  createRapRuntime,
  checkServerList,
  type RapRuntime,
  type RapRuntimeStatus,
  type RapServerStatus,
} from './runtime.js';
export { createRapToolServer, resultText, type RapToolServer, type ToolServerOptions } from './tool-server.js';
export { createRapCaller, answerOf, synthesizedError, type RapCall, type RapCaller } from './caller.js';
export { startRapListener, type RapListener } from './listener.js';
export { checkCallbackUrl } from './callback-url.js';
export { deliverCallback, DEFAULT_DELIVERY, type DeliveryPolicy, type RapToolResult } from './deliver.js';
export { renderDisplay, evaluateDisplayScript, defaultDisplay } from './display-script.js';
export { buildServedToolset, rapToolName, type ServableTool } from './served-toolset.js';
export {
  discoveryUrl,
  fetchToolset,
  validateToolset,
  WELL_KNOWN_PATH,
  type RapToolDef,
  type RapToolset,
  type ToolsetFetch,
} from './toolset.js';
