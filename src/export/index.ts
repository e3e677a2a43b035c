// Public surface of the export module: the catalog → target mapping shared by `tools-runner export`
// and the live MCP endpoint (src/mcp), and the reader of the published catalog.

export {
  missingCatalogReason,
  readCatalog,
  readPublishedCatalog,
  type CatalogRead,
  type RejectedCatalogTool,
} from './catalog-source.js';
export {
  EXPORT_FORMATS,
  META_PREFIX,
  renderExport,
  toARuntimeTool,
  toMcpTool,
  toOpenAITool,
  toRapTool,
  type ExportFormat,
  type ExportOptions,
  type McpTool,
  type OpenAIFunctionTool,
  type RapTool,
  type RenderedExport,
} from './formats.js';
export { asObjectRoot, derefSchema, emptyObjectSchema, qualifiesForOpenAIStrict } from './schemas.js';
export { contractOf, policyOf, sideEffectOf } from './side-effects.js';
export { buildToolViews, type CatalogTool, type Omission, type ToolView, type ToolViews } from './tool-views.js';
export { emitTypeScript, schemaToType } from './typescript.js';
