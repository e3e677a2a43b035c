// Public surface of the host-tool module: tools defined by the operator's tools.json
// manifests (agentcli or Runloop), run as host programs or HTTP calls outside the Deno sandbox.
// The runner loads them with loadHostTools, publishes/routes them, and calls executeHostTool.

export { loadManifest } from './load-manifest.js';
export { loadHostTools, type HostToolsLoad, type LoadHostToolsOptions } from './load-host-tools.js';
export { executeHostTool, type ExecuteHostToolOptions, type RemoteCall } from './execute.js';
export { normalizeHostInput } from './input.js';
export { neverSent, REFUSED_BEFORE_ACTING, type CallOutcome, type OnSend } from './call-outcome.js';
export {
  exportOpenAI,
  mangleToolName,
  MAX_EXPORTED_NAME,
  type OpenAIExport,
  type OpenAITool,
} from './export-openai.js';
export { secretEnvName } from './secrets.js';
export { createSchemaCache, type SchemaCache, type SchemaIssue } from './schema-validator.js';
export { isCapabilityGranted, missingCapabilities, type CapAuditRecord } from './capabilities.js';
// The request path's audit and approval policies import these from here until they import src/audit/ directly.
export { writeAuditRecord, type CallAuditRecord } from '../audit/audit-log.js';
export { createRedactor, REDACTED, type Redactor } from '../audit/redact.js';
export { blake3Hex } from './runloop-bundle.js';
export {
  CAPABILITY_FAMILIES,
  CONFIRMATION_REFUSED,
  type DeniedHostTool,
  type ExecTransport,
  type HostTool,
  type HostToolConfig,
  type HostToolFormat,
  type HostTransport,
  type HttpTransport,
  type RapTransport,
  type ManifestLoadResult,
} from './types.js';
/** Publication of host tools as tool.v1 breadcrumbs (descriptions only). */
export { publishHostTools, unpublishHostTools, legacyContext, type PublishResult } from './publish.js';
