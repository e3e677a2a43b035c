// Public surface of the store client: REST client, event-stream reader, errors and message shapes.
export {
  createStoreClient,
  type StoreClient,
  type StoreClientOptions,
  type RequestOptions,
  type ListQuery,
  type SearchQuery,
  type SecretCreate,
} from './client.js';
export { openEventStream, type EventStreamOptions } from './events.js';
export { StoreError, isConflict, isNotFound, isVersionMismatch, conflictId } from './store-error.js';
export type { StoreAuth } from './token-source.js';
export * from './messages.js';
export {
  agentLabelOf,
  callerOf,
  createStoreAuthProbe,
  STORE_AUTH_TTL_MS,
  type Caller,
  type StoreAuthProbe,
} from './caller.js';
export {
  createRequestKeys,
  sameText,
  ANSWER_TAG_PREFIX,
  type RequestKeys,
  type ClaimMacFields,
  type IdempotencyBinding,
} from './request-keys.js';
export {
  createRequestClient,
  verifiedAnswer,
  type RequestClient,
  type RequestClientOptions,
  type ToolCall,
  type WrittenRequest,
  type Answered,
  type WaitOutcome,
} from './request-client.js';
