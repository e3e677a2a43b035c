// Embeddings of the embedded store: the pluggable embedder an operator provides (an HTTP endpoint
// or a command; no model ships), the background queue that embeds records after their write
// commits, and the decoding of stored vectors for nearest-neighbour search.
//
// Queue states per record: absent → QUEUED (latest title+context text kept, older text replaced)
// → EMBEDDING (one at a time) → stored only if the record is still at the version that was
// embedded (a newer write re-queues it). The queue is bounded; past the bound the oldest entry is
// dropped with a warning (that record stays findable by text search, not by vector). The same
// queue serves both backends; a VectorStore keeps the vectors (SQLite blob, PostgreSQL bytea).

import { spawn } from 'node:child_process';
import { coerceError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { MaybePromise } from './backend.js';
import { encodeVector } from './breadcrumb-writes.js';
import type { Db } from './db.js';
import { MAX_EMBEDDING_DIM } from './validate.js';

/** Turns text into a vector; provided by the operator (`embedUrl` / `embedCommand`). */
export interface Embedder {
  /** Where the vectors come from, for logs. */
  describe: string;
  embed(text: string, signal: AbortSignal): Promise<number[]>;
}

/** The background embedding of written records. */
export interface EmbeddingQueue {
  schedule(id: string, version: number, text: string): void;
  /** Resolves once nothing is queued or running (tests, shutdown). */
  idle(): Promise<void>;
  close(): void;
}

const EMBED_TIMEOUT_MS = 30_000;
const MAX_QUEUE = 10_000;
const MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

function checkVector(value: unknown, source: string): number[] {
  if (
    !Array.isArray(value) ||
    value.length === 0 ||
    value.length > MAX_EMBEDDING_DIM ||
    !value.every((n) => typeof n === 'number' && Number.isFinite(n))
  ) {
    throw new Error(`${source} did not return an array of 1 to ${MAX_EMBEDDING_DIM} finite numbers`);
  }
  return value as number[];
}

/** An embedder behind an HTTP endpoint: POST `{"text"}` → `{"embedding": [numbers]}` (or a bare array). */
export function createHttpEmbedder(url: string): Embedder {
  return {
    describe: `POST ${url}`,
    async embed(text, signal) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ text }),
        signal: AbortSignal.any([signal, AbortSignal.timeout(EMBED_TIMEOUT_MS)]),
      });
      if (!response.ok) throw new Error(`embedder ${url} answered ${response.status}`);
      const body = (await response.json()) as unknown;
      return checkVector(
        Array.isArray(body) ? body : (body as { embedding?: unknown } | null)?.embedding,
        `embedder ${url}`,
      );
    },
  };
}

/** An embedder run as a command (through /bin/sh): text on stdin, a JSON array of numbers on stdout. */
export function createCommandEmbedder(command: string): Embedder {
  return {
    describe: `command ${JSON.stringify(command)}`,
    embed(text, signal) {
      return new Promise((resolve, reject) => {
        const child = spawn('/bin/sh', ['-c', command], {
          stdio: ['pipe', 'pipe', 'ignore'],
          signal: AbortSignal.any([signal, AbortSignal.timeout(EMBED_TIMEOUT_MS)]),
        });
        const chunks: Buffer[] = [];
        let size = 0;
        child.stdout.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_OUTPUT_BYTES) child.kill('SIGKILL');
          else chunks.push(chunk);
        });
        child.once('error', reject);
        child.once('close', (code) => {
          if (code !== 0) return reject(new Error(`embedder command exited with ${code ?? 'a signal'}`));
          try {
            resolve(checkVector(JSON.parse(Buffer.concat(chunks).toString('utf8')), 'embedder command'));
          } catch (error) {
            reject(error instanceof SyntaxError ? new Error('embedder command did not print JSON') : error);
          }
        });
        child.stdin.on('error', () => {});
        child.stdin.end(text);
      });
    },
  };
}

/** The embedder configured by `embedUrl` / `embedCommand`, or undefined. */
export function embedderFromConfig(options: {
  embedUrl?: string | undefined;
  embedCommand?: string | undefined;
}): Embedder | undefined {
  if (options.embedUrl) return createHttpEmbedder(options.embedUrl);
  if (options.embedCommand) return createCommandEmbedder(options.embedCommand);
  return undefined;
}

/** Decodes a stored vector blob. */
export function decodeVector(blob: Buffer): Float32Array {
  const copy = new Uint8Array(blob.byteLength);
  copy.set(blob);
  return new Float32Array(copy.buffer);
}

/** Cosine similarity of `a` and `b` (same length); 0 when either is all zeros. */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number;
    const y = b[i] as number;
    dot += x * y;
    na += x * x;
    nb += y * y;
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}

/** Where the queue keeps vectors (SQLite: `sqliteVectors`; PostgreSQL: pg/writes.ts). */
export interface VectorStore {
  /** Stores `vector` as the record's embedding if the record `id` is still at `version`. */
  storeIfAt(id: string, version: number, vector: number[]): MaybePromise<void>;
}

/** The vectors of the SQLite store `db`. */
export function sqliteVectors(db: Db): VectorStore {
  const currentVersion = db.prepare('SELECT version FROM breadcrumbs WHERE id = ?').pluck();
  const upsert = db.prepare(
    'INSERT INTO breadcrumb_embeddings (breadcrumb_id, dim, vec) VALUES (?, ?, ?) ON CONFLICT (breadcrumb_id) DO UPDATE SET dim = excluded.dim, vec = excluded.vec',
  );
  return {
    storeIfAt(id, version, vector) {
      if (currentVersion.get(id) === version) upsert.run(id, vector.length, encodeVector(vector));
    },
  };
}

/** Builds the background queue that embeds records with `embedder` and keeps their vectors in `vectors`. */
export function createEmbeddingQueue(vectors: VectorStore, embedder: Embedder, logger: Logger): EmbeddingQueue {
  const queued = new Map<string, { version: number; text: string }>();
  const controller = new AbortController();
  let running: Promise<void> | undefined;
  let waiters: Array<() => void> = [];

  const drain = async (): Promise<void> => {
    for (;;) {
      const next = queued.entries().next();
      if (next.done || controller.signal.aborted) break;
      const [id, job] = next.value;
      queued.delete(id);
      try {
        const vector = await embedder.embed(job.text, controller.signal);
        await vectors.storeIfAt(id, job.version, vector);
      } catch (error) {
        if (!controller.signal.aborted)
          logger.warn('embedding failed; record stays findable by text only', {
            id,
            embedder: embedder.describe,
            error: coerceError(error).message,
          });
      }
    }
    running = undefined;
    const done = waiters;
    waiters = [];
    for (const resolve of done) resolve();
  };

  return {
    schedule(id, version, text) {
      if (controller.signal.aborted) return;
      queued.delete(id);
      queued.set(id, { version, text });
      if (queued.size > MAX_QUEUE) {
        const oldest = queued.keys().next().value as string;
        queued.delete(oldest);
        logger.warn('embedding queue full; dropped the oldest record', { id: oldest, max: MAX_QUEUE });
      }
      running ??= drain();
    },
    idle: () => (running === undefined ? Promise.resolve() : new Promise<void>((resolve) => waiters.push(resolve))),
    close() {
      controller.abort();
      queued.clear();
    },
  };
}
