// The store's HTTP helpers are the shared ones of src/http.ts (re-exported here so the store's
// routes keep their import path; new code imports src/http.ts directly).

export {
  HttpError,
  describe,
  httpErrors,
  isLoopbackHost,
  parseJsonObject,
  readBody,
  sendError,
  sendJson,
} from '../http.js';
