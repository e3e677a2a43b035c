// A TCP proxy between a store replica and PostgreSQL that, once armed, cuts the first connection
// that writes inside a transaction: it forwards that write statement (through its Sync) and then
// stops forwarding that connection's bytes both ways, as a network cut mid-write does — the server
// sees a session idle in its transaction, the replica an answer that never comes. It reads the
// protocol's message framing only (type byte + length). Plain JavaScript (types in
// pg-cut-proxy.d.mts), shared by test/store/pg-stall.test.ts and bench/pg-cut.mjs.

import net from 'node:net';

const WRITE = /^\s*(INSERT|UPDATE|DELETE|WITH)\b|\bFOR UPDATE\b/i;
const SSL_REQUEST = 80877103;

// The SQL text of a simple Query ('Q') or Parse ('P') message; '' for any other.
function sqlOf(type, message) {
  if (type === 'Q') return message.subarray(5, message.length - 1).toString();
  if (type !== 'P') return '';
  const start = message.indexOf(0, 5) + 1;
  return message.subarray(start, message.indexOf(0, start)).toString();
}

/** Starts a proxy to `target` (a postgres:// URL object) on a free port of 127.0.0.1. */
export async function startCutProxy(target) {
  const sockets = new Set();
  let armed = false;
  let cutDone = () => {};
  let cut = Promise.resolve();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    sockets.add(client).add(upstream);
    let frozen = false;
    let started = false;
    let inTx = false;
    let cutAfterSync = false;
    let pending = Buffer.alloc(0);
    client.on('data', (chunk) => {
      if (frozen) return;
      pending = Buffer.concat([pending, chunk]);
      for (;;) {
        if (!started) {
          if (pending.length < 4 || pending.length < pending.readInt32BE(0)) return;
          const startup = pending.subarray(0, pending.readInt32BE(0));
          pending = pending.subarray(startup.length);
          upstream.write(startup);
          started = !(startup.length === 8 && startup.readInt32BE(4) === SSL_REQUEST);
          continue;
        }
        if (pending.length < 5) return;
        const type = String.fromCharCode(pending[0]);
        const length = pending.readInt32BE(1) + 1;
        if (pending.length < length) return;
        const message = pending.subarray(0, length);
        pending = pending.subarray(length);
        upstream.write(message);
        const sql = sqlOf(type, message);
        if (/^\s*BEGIN\b/i.test(sql)) inTx = true;
        else if (/^\s*(COMMIT|ROLLBACK)\b/i.test(sql)) inTx = false;
        else if (armed && inTx && WRITE.test(sql)) cutAfterSync = true;
        if (cutAfterSync && (type === 'S' || type === 'Q')) {
          frozen = true;
          armed = false;
          cutDone();
          return;
        }
      }
    });
    upstream.on('data', (chunk) => {
      if (!frozen) client.write(chunk);
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: server.address().port,
    arm() {
      armed = true;
      cut = new Promise((resolve) => (cutDone = resolve));
      return cut;
    },
    close() {
      server.close();
      for (const socket of sockets) socket.destroy();
    },
  };
}

/** Resolves once a session named `name` is idle inside a transaction (the cut write ran); rejects after `boundMs`. */
export async function idleInTransaction(pg, url, name, boundMs) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const deadline = Date.now() + boundMs;
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      const sql = "SELECT 1 FROM pg_stat_activity WHERE application_name = $1 AND state = 'idle in transaction'";
      if ((await client.query(sql, [name])).rows.length > 0) return;
      await new Promise((resolve) => setTimeout(resolve, Math.min(5 * 2 ** attempt, 50)));
    }
    throw new Error(`no session of ${name} was idle in a transaction within ${boundMs} ms`);
  } finally {
    await client.end();
  }
}
