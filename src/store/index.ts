// Public surface of the embedded store.
export { createStore, type Store, type StoreOptions } from './store.js';
export { DEFAULT_OWNER_ID, ROLES } from './auth.js';
export { DEFAULT_LIMIT, MAX_LIMIT } from './breadcrumb-reads.js';
