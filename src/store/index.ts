// Public surface of the embedded store.
export { createStore, type Store, type StoreOptions } from './store.js';
export { DEFAULT_OWNER_ID, ROLES } from './auth.js';
export { DEFAULT_NN } from './search.js';
export { STREAM_EXTENSIONS, type StreamExtension } from './sse.js';
export { createHttpEmbedder, createCommandEmbedder, type Embedder } from './embeddings.js';
export type { LocalEndpoint, LocalReply, LocalRequest, LocalStreamSink } from './local.js';
