// Contract tests of docs/compat.md, rows "GET /breadcrumbs" and "GET /breadcrumbs/search". Each
// test names the upstream behaviour it pins (crates/rcrt-server/src/main.rs: list_breadcrumbs,
// vector_search).
import http from 'node:http';
import { describe, expect, it } from 'vitest';
import { call, crumb, onCleanup, startStore, tempDir } from '../store/helpers.js';

async function seed(
  base: string,
  count: number,
  extra: (i: number) => Record<string, unknown> = () => ({}),
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 50) {
    const batch = Array.from({ length: Math.min(50, count - i) }, (_, k) =>
      call(base, 'POST', '/breadcrumbs', {
        body: crumb({ title: `row ${i + k}`, tags: ['bulk'], schema_name: 'bulk.v1', ...extra(i + k) }),
      }),
    );
    for (const reply of await Promise.all(batch)) ids.push(reply.body.id as string);
  }
  return ids;
}

describe('compat: GET /breadcrumbs (upstream list_breadcrumbs)', () => {
  for (const mode of ['file', 'memory'] as const) {
    it(`upstream has no default limit and accepts any positive limit: 1,234 rows without limit and with limit=5000 (${mode} store)`, async () => {
      const store = await startStore(mode === 'file' ? { dataDir: tempDir() } : {});
      const ids = await seed(store.url, 1234);
      const newestFirst = [...ids].reverse();
      for (const path of [
        '/breadcrumbs',
        '/breadcrumbs?limit=5000',
        '/breadcrumbs?tag=bulk',
        '/breadcrumbs?schema_name=bulk.v1&limit=5000',
      ]) {
        const reply = await call(store.url, 'GET', path);
        expect(reply.status).toBe(200);
        expect(reply.body.map((b: { id: string }) => b.id)).toEqual(newestFirst);
      }
      const withContext = await call(store.url, 'GET', '/breadcrumbs?include_context=true');
      expect(withContext.body).toHaveLength(1234);
      expect(withContext.body[0]).toEqual({
        id: newestFirst[0],
        title: 'row 1233',
        tags: ['bulk'],
        schema_name: 'bulk.v1',
        version: 1,
        updated_at: expect.any(String),
        context: { n: 1 },
      });
      const page = await call(store.url, 'GET', '/breadcrumbs?limit=1000&offset=1000');
      expect(page.body.map((b: { id: string }) => b.id)).toEqual(newestFirst.slice(1000));
    });
  }

  it('upstream clamps limit with max(1) and offset with max(0); a non-integer is a 400', async () => {
    const store = await startStore();
    const ids = (await seed(store.url, 3)).reverse();
    expect((await call(store.url, 'GET', '/breadcrumbs?limit=0')).body.map((b: { id: string }) => b.id)).toEqual(
      ids.slice(0, 1),
    );
    expect((await call(store.url, 'GET', '/breadcrumbs?limit=-7')).body).toHaveLength(1);
    expect((await call(store.url, 'GET', '/breadcrumbs?offset=-1')).body.map((b: { id: string }) => b.id)).toEqual(ids);
    expect((await call(store.url, 'GET', '/breadcrumbs?limit=99999999999999999999999')).body).toHaveLength(3);
    expect(await call(store.url, 'GET', '/breadcrumbs?limit=2.5')).toMatchObject({
      status: 400,
      body: { code: 'invalid_query', error: 'query parameter "limit" must be an integer, got "2.5"' },
    });
  });

  it('upstream ignores parameters it does not know (the SDK sends owner_id, updated_since, q, nn, tags) and rejects a repeated tag', async () => {
    const store = await startStore();
    await seed(store.url, 2);
    const reply = await call(
      store.url,
      'GET',
      '/breadcrumbs?owner_id=x&updated_since=2020-01-01&q=zzz&nn=1&tags=a&tags=b',
    );
    expect(reply.body).toHaveLength(2);
    expect(await call(store.url, 'GET', '/breadcrumbs?tag=a&tag=b')).toMatchObject({
      status: 400,
      body: { code: 'invalid_query' },
    });
  });

  it('a large listing streams under backpressure: a reader that pauses still gets every row, and the store keeps serving meanwhile', async () => {
    const store = await startStore({ dataDir: tempDir() });
    const big = 'x'.repeat(20_000);
    await seed(store.url, 300, () => ({ context: { big } }));
    // A raw reader that stops reading after the first bytes, so the socket fills up.
    const chunks: Buffer[] = [];
    let pausedRes: http.IncomingMessage | undefined;
    const firstBytes = new Promise<void>((resolve) => {
      http.get(`${store.url}/breadcrumbs?include_context=true`, (res) => {
        pausedRes = res;
        res.once('data', (chunk: Buffer) => {
          chunks.push(chunk);
          res.pause();
          resolve();
        });
      });
    });
    await firstBytes;
    expect(pausedRes?.headers['content-length']).toBeUndefined();
    // While that listing waits for its reader, writes and reads are served.
    const created = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'during' }) });
    expect(created.status).toBe(201);
    expect((await call(store.url, 'GET', `/breadcrumbs/${created.body.id}`)).body.title).toBe('during');
    const rest = new Promise<void>((resolve) => {
      pausedRes!.on('data', (chunk: Buffer) => chunks.push(chunk));
      pausedRes!.once('end', () => resolve());
    });
    pausedRes!.resume();
    await rest;
    const rows = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Array<{
      title: string;
      context: { big: string };
    }>;
    // A snapshot: the row created while the listing streamed is not in it; all 300 are, whole.
    expect(rows).toHaveLength(300);
    expect(rows.every((row) => row.context.big === big)).toBe(true);
  });
});

describe('compat: GET /breadcrumbs/search (upstream vector_search)', () => {
  it('upstream returns nn results (default 5; nn=3 returns 3; nn<=0 returns 1) and [] without q and qvec', async () => {
    const store = await startStore();
    await seed(store.url, 12, (i) => ({ title: `apple report ${i}` }));
    expect((await call(store.url, 'GET', '/breadcrumbs/search?q=apple&nn=3')).body).toHaveLength(3);
    expect((await call(store.url, 'GET', '/breadcrumbs/search?q=apple')).body).toHaveLength(5);
    expect((await call(store.url, 'GET', '/breadcrumbs/search?q=apple&nn=0')).body).toHaveLength(1);
    expect((await call(store.url, 'GET', '/breadcrumbs/search?q=apple&nn=100')).body).toHaveLength(12);
    expect((await call(store.url, 'GET', '/breadcrumbs/search?nn=3')).body).toEqual([]);
  });

  it("upstream orders by embedding distance to qvec with unembedded records last; both qvec forms (a,b and the SDK's [a,b])", async () => {
    const store = await startStore();
    const east = await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb({ title: 'east', embedding: [1, 0, 0] }),
    });
    const north = await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb({ title: 'north', embedding: [0, 1, 0] }),
    });
    const northEast = await call(store.url, 'POST', '/breadcrumbs', {
      body: crumb({ title: 'north-east', embedding: [0.7, 0.7, 0] }),
    });
    const plain = await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'no vector' }) });
    const order = [north, northEast, east, plain].map((r) => r.body.id);
    expect(
      (await call(store.url, 'GET', '/breadcrumbs/search?qvec=0.1,1,0&nn=4')).body.map((b: { id: string }) => b.id),
    ).toEqual(order);
    expect(
      (await call(store.url, 'GET', `/breadcrumbs/search?qvec=${encodeURIComponent('[0.1,1,0]')}&nn=4`)).body.map(
        (b: { id: string }) => b.id,
      ),
    ).toEqual(order);
    // A PATCH with a new embedding moves the record.
    await call(store.url, 'PATCH', `/breadcrumbs/${plain.body.id}`, { body: { embedding: [0, 1, 0.5] } });
    expect(
      (await call(store.url, 'GET', '/breadcrumbs/search?qvec=0,1,0.5&nn=1')).body.map((b: { id: string }) => b.id),
    ).toEqual([plain.body.id]);
  });

  it("q is embedded by the operator's embedder command (a real process) and ranked by cosine; the records were embedded after their writes", async () => {
    // A toy embedder: letter counts a..e. The store only sees "a command that prints numbers".
    const script =
      "let t='';process.stdin.on('data',d=>t+=d).on('end',()=>{const v=[0,0,0,0,0];for(const c of t.toLowerCase()){const i='abcde'.indexOf(c);if(i>=0)v[i]++;}console.log(JSON.stringify(v.map(x=>x+0.001)))})";
    const store = await startStore({ embedCommand: `${process.execPath} -e "${script}"` });
    const aaa = await call(store.url, 'POST', '/breadcrumbs', { body: { title: 'aaaa', context: {}, tags: [] } });
    const eee = await call(store.url, 'POST', '/breadcrumbs', { body: { title: 'eeee', context: {}, tags: [] } });
    await store.embeddingsIdle();
    expect(
      (await call(store.url, 'GET', '/breadcrumbs/search?q=eeeee&nn=1')).body.map((b: { id: string }) => b.id),
    ).toEqual([eee.body.id]);
    expect(
      (await call(store.url, 'GET', '/breadcrumbs/search?q=aaaaa&nn=1')).body.map((b: { id: string }) => b.id),
    ).toEqual([aaa.body.id]);
  });

  it('an HTTP embedder that fails makes q fall back to FTS5 ranking (upstream answers [] when embedding fails)', async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(503);
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onCleanup(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as { port: number };
    const store = await startStore({ embedUrl: `http://127.0.0.1:${port}/embed` });
    await call(store.url, 'POST', '/breadcrumbs', { body: crumb({ title: 'kiwi notes' }) });
    await store.embeddingsIdle();
    expect(
      (await call(store.url, 'GET', '/breadcrumbs/search?q=kiwi')).body.map((b: { title: string }) => b.title),
    ).toEqual(['kiwi notes']);
  });
});
