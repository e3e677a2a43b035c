// Stored embedding vectors on both backends (SQLite blob, PostgreSQL bytea): vectors given on
// write, vectors the operator's embedder computes after each write (src/store/embeddings.ts), and
// vector search over them — the same answers on SQLite and PostgreSQL.
import http from 'node:http';
import { expect, it } from 'vitest';
import type { Store } from '../../src/store/index.js';
import { call, crumb, describeBackends, onCleanup, startStore } from './helpers.js';

const ids = (reply: { body: Array<{ id: string }> }): string[] => reply.body.map((b) => b.id);
const vectorOf = async (store: Store, id: string): Promise<number[] | null> =>
  (await call(store.url, 'GET', `/breadcrumbs/${id}/full`)).body.embedding as number[] | null;

/** An HTTP embedder: letter counts a..e of the text (+0.001); `hold(word)` delays texts containing `word` until released. */
async function toyEmbedder(): Promise<{ url: string; hold(word: string): () => void; seen: string[] }> {
  const held = new Map<string, Promise<void>>();
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const text = (JSON.parse(body) as { text: string }).text;
      seen.push(text);
      const wait = [...held].find(([word]) => text.includes(word))?.[1] ?? Promise.resolve();
      void wait.then(() => {
        const v = [0, 0, 0, 0, 0];
        for (const c of text.toLowerCase()) {
          const i = 'abcde'.indexOf(c);
          if (i >= 0) v[i] = (v[i] as number) + 1;
        }
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ embedding: v.map((x) => x + 0.001) }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onCleanup(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/embed`,
    seen,
    hold(word) {
      let release = (): void => {};
      held.set(word, new Promise<void>((resolve) => (release = resolve)));
      return release;
    },
  };
}

describeBackends('store: embedding vectors', () => {
  it('keeps the vector given on write, ranks qvec search by cosine (unembedded last), and a PATCH replaces or removes it', async () => {
    const store = await startStore();
    const east = (
      await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'east', embedding: [1, 0, 0] }) })
    ).body.id as string;
    const north = (
      await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'north', embedding: [0, 1, 0] }) })
    ).body.id as string;
    const plain = (await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'plain' }) })).body
      .id as string;
    expect(await vectorOf(store, east)).toEqual([1, 0, 0]);
    expect(await vectorOf(store, plain)).toBeNull();
    expect(ids(await call(store.url, 'GET', '/breadcrumbs/search?qvec=0.1,1,0&nn=3'))).toEqual([north, east, plain]);
    await call(store.url, 'PATCH', `/breadcrumbs/${plain}`, { body: { embedding: [0.5, -1, 2] } });
    expect(await vectorOf(store, plain)).toEqual([0.5, -1, 2]);
    expect(ids(await call(store.url, 'GET', '/breadcrumbs/search?qvec=0.5,-1,2&nn=1'))).toEqual([plain]);
    await call(store.url, 'PATCH', `/breadcrumbs/${north}`, { body: { embedding: null } });
    expect(await vectorOf(store, north)).toBeNull();
    expect(ids(await call(store.url, 'GET', '/breadcrumbs/search?qvec=0,1,0&nn=3'))[2]).toBe(north);
  });

  it("the operator's embedder stores a vector for each written record after its write, re-embeds a changed one, and q is ranked by cosine", async () => {
    const embedder = await toyEmbedder();
    const store = await startStore({ embedUrl: embedder.url });
    const aaa = (await call(store.url, 'POST', '/breadcrumbs', { body: { title: 'aaaa', context: {}, tags: [] } })).body
      .id as string;
    const eee = (await call(store.url, 'POST', '/breadcrumbs', { body: { title: 'eeee', context: {}, tags: [] } })).body
      .id as string;
    const given = (
      await call(store.url, 'POST', '/breadcrumbs', { body: { title: 'bbbb', context: {}, tags: [], embedding: [9] } })
    ).body.id as string;
    await store.embeddingsIdle();
    // "aaaa {}": four a's; the stored vector is float32.
    const stored = (await vectorOf(store, aaa)) as number[];
    expect(stored).toHaveLength(5);
    expect(stored[0]).toBeCloseTo(4.001, 5);
    expect(stored[4]).toBeCloseTo(0.001, 5);
    expect(await vectorOf(store, given)).toEqual([9]); // a vector given on write is not replaced
    expect(embedder.seen.some((text) => text.startsWith('bbbb'))).toBe(false);
    expect(ids(await call(store.url, 'GET', '/breadcrumbs/search?q=eeeee&nn=1'))).toEqual([eee]);
    expect(ids(await call(store.url, 'GET', '/breadcrumbs/search?q=aaaaa&nn=1'))).toEqual([aaa]);
    // A changed title is embedded again.
    await call(store.url, 'PATCH', `/breadcrumbs/${aaa}`, { body: { title: 'dddd' } });
    await store.embeddingsIdle();
    expect(((await vectorOf(store, aaa)) as number[])[3]).toBeCloseTo(4.001, 5);
    expect(ids(await call(store.url, 'GET', '/breadcrumbs/search?q=ddddd&nn=1'))).toEqual([aaa]);
  });

  it('a vector computed for an older version is not stored once the record was written again', async () => {
    const embedder = await toyEmbedder();
    const store = await startStore({ embedUrl: embedder.url });
    const release = embedder.hold('cccc');
    const id = (await call(store.url, 'POST', '/breadcrumbs', { body: { title: 'cccc', context: {}, tags: [] } })).body
      .id as string;
    // Version 1 is being embedded (held); version 2 arrives meanwhile with a vector of its own.
    for (let i = 0; i < 400 && !embedder.seen.some((text) => text.startsWith('cccc')); i++)
      await new Promise((resolve) => setTimeout(resolve, 25));
    expect(embedder.seen.some((text) => text.startsWith('cccc'))).toBe(true);
    await call(store.url, 'PATCH', `/breadcrumbs/${id}`, { body: { embedding: [7, 7] } });
    release();
    await store.embeddingsIdle();
    expect(await vectorOf(store, id)).toEqual([7, 7]);
  });
});
