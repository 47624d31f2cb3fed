// The status socket under abuse, in process (no root): methods, paths, sizes, the
// connection cap and slow clients. The real agent under a hostile flood is in
// socket-flood.test.ts; the long run is bench/socket-abuse.ts.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { MAX_CONNECTIONS, MAX_URL_BYTES, StatusServer } from '../../src/status/server.js';
import type { StatusReport } from '../../src/status/report.js';
import { CLI } from '../helpers/agent.js';
import { get, slowClients } from '../helpers/hostile-http.js';
import { within } from '../helpers/wait.js';

async function withServer(fn: (socket: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-abuse-'));
  const socket = path.join(dir, 'run', 'agent.sock');
  const server = await StatusServer.listen(socket, {
    status: () => ({ phase: 'Converged' }) as unknown as StatusReport,
    alive: () => true,
    ready: () => true,
  });
  try {
    await fn(socket);
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Raw bytes in, the whole answer out (the server closes, or the bound ends it). */
function raw(socket: string, text: string): Promise<string> {
  return within(
    new Promise<string>((resolve) => {
      const c = net.connect(socket);
      let out = '';
      c.on('data', (d: Buffer) => (out += d.toString('latin1')));
      c.on('error', () => resolve(out));
      c.on('close', () => resolve(out));
      c.once('connect', () => c.end(text));
    }),
    10_000,
    `an answer to ${JSON.stringify(text.slice(0, 60))}`,
  );
}

const statusLine = (answer: string) => answer.split('\r\n')[0];

test('every method but GET and HEAD is 405 with Allow on every path, and the connection closes', async () => {
  await withServer(async (socket) => {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'PROPFIND']) {
      for (const p of ['/status', '/healthz', '/nope']) {
        const answer = await raw(
          socket,
          `${method} ${p} HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /status HTTP/1.1\r\nHost: x\r\n\r\n`,
        );
        assert.equal(statusLine(answer), 'HTTP/1.1 405 Method Not Allowed', `${method} ${p}`);
        assert.match(answer, /\r\nallow: GET, HEAD\r\n/i);
        // The smuggled GET behind the body is never answered: the connection closed.
        assert.equal(answer.match(/HTTP\/1\.1 /g)?.length, 1, `${method} ${p}: one answer only`);
      }
    }
    assert.equal(
      statusLine(await raw(socket, 'HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')),
      'HTTP/1.1 200 OK',
    );
  });
});

test('no path reads a file: traversal, encoded, absolute-form and prototype names are 404 and echo no file', async () => {
  await withServer(async (socket) => {
    for (const p of [
      '/../../etc/passwd',
      '/%2e%2e/%2e%2e/etc/passwd',
      '//etc/passwd',
      '/status/../../../etc/passwd',
      '/__proto__',
      '/constructor',
      '/hasOwnProperty',
      '/toString',
      '/status%00',
      '/STATUS',
      '/status/',
      'http://localhost/etc/passwd',
      '*',
    ]) {
      const answer = await raw(socket, `GET ${p} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      assert.equal(statusLine(answer), 'HTTP/1.1 404 Not Found', p);
      assert.doesNotMatch(answer, /root:x?:0:0/, p);
    }
  });
});

test('a URL over the limit is 414, headers over 8 KiB are 431, a garbled request line is 400', async () => {
  await withServer(async (socket) => {
    assert.equal(
      statusLine(await raw(socket, `GET /${'a'.repeat(MAX_URL_BYTES)} HTTP/1.1\r\nHost: x\r\n\r\n`)),
      'HTTP/1.1 414 URI Too Long',
    );
    assert.equal(
      statusLine(await raw(socket, `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(9000)}\r\n\r\n`)),
      'HTTP/1.1 431 Request Header Fields Too Large',
    );
    assert.equal(
      statusLine(await raw(socket, `GET /${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`)),
      'HTTP/1.1 431 Request Header Fields Too Large',
    );
    assert.equal(statusLine(await raw(socket, 'GET /healthz HTTP/1.1 junk\r\n\r\n')), 'HTTP/1.1 400 Bad Request');
    assert.equal((await get(socket, '/healthz')).code, 200);
  });
});

/** The server closes a half-sent request, with a 408 or nothing at all. */
async function assertCut(slow: net.Socket): Promise<void> {
  const answer = await within(
    new Promise<string>((resolve) => {
      let out = '';
      slow.on('data', (d: Buffer) => (out += d.toString('latin1')));
      slow.on('close', () => resolve(out));
    }),
    30_000,
    'the server closes the half-sent request',
  );
  assert.ok(answer === '' || answer.startsWith('HTTP/1.1 408 Request Timeout'), answer);
}

test('a client that never finishes its headers is cut by the server', async () => {
  await withServer(async (socket) => {
    const [slow] = await slowClients(socket, 1);
    await assertCut(slow!);
  });
});

test('a client that never finishes its headers is cut also when it comes after the socket sat with no connection open', async () => {
  await withServer(async (socket) => {
    // A whole exchange, then none open: the server's timeout checks pause until the next connection.
    assert.equal((await get(socket, '/healthz')).code, 200);
    await new Promise((r) => setTimeout(r, 100));
    const [slow] = await slowClients(socket, 1);
    await assertCut(slow!);
  });
});

test('GET /status is the report as of its last change: built once per change, whatever the number of requests', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-status-cache-'));
  const socket = path.join(dir, 'run', 'agent.sock');
  let version = 1;
  let built = 0;
  const report = () => ({ phase: version === 1 ? 'Converged' : 'Waiting' }) as unknown as StatusReport;
  const server = await StatusServer.listen(socket, {
    status: () => (built++, report()),
    statusVersion: () => version,
    alive: () => true,
    ready: () => true,
  });
  try {
    for (let i = 0; i < 5; i++)
      assert.deepEqual(JSON.parse((await get(socket, '/status')).body), { phase: 'Converged' });
    assert.equal(built, 1);
    version = 2;
    assert.deepEqual(JSON.parse((await get(socket, '/status')).body), { phase: 'Waiting' });
    assert.equal(built, 2);
  } finally {
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('slow clients past the connection cap do not keep /healthz out; the oldest are evicted, silently, not left to the headers timeout', async () => {
  const SLOW = MAX_CONNECTIONS + 72;
  await withServer(async (socket) => {
    // In batches, each followed by a request answered (so accepted, as were those queued before it):
    // a burst past the listen backlog (511) is refused by the kernel (EAGAIN) before the server sees it.
    const slow: Awaited<ReturnType<typeof slowClients>> = [];
    for (let n = 0; n < SLOW; n += 100) {
      slow.push(...(await slowClients(socket, Math.min(100, SLOW - n))));
      assert.equal((await get(socket, '/healthz')).code, 200);
    }
    const heard = slow.map((c) => {
      let text = '';
      c.on('data', (d: Buffer) => (text += d.toString('latin1')));
      return () => text;
    });
    const closed = slow.map((c) => new Promise((resolve) => (c.destroyed ? resolve(null) : c.once('close', resolve))));
    try {
      for (let i = 0; i < 20; i++) assert.equal((await get(socket, '/healthz')).code, 200, `probe ${i}`);
      // The first ones were cut to make room, and at most the cap are still held.
      await within(Promise.all(closed.slice(0, SLOW - MAX_CONNECTIONS)), 10_000, 'the oldest slow clients are cut');
      assert.ok(slow.filter((c) => !c.destroyed).length <= MAX_CONNECTIONS);
      // Cut by the cap, without a word: the headers timeout (2 s) would have answered 408.
      // (The batches above take a small part of those 2 s.)
      const answered = heard.slice(0, SLOW - MAX_CONNECTIONS).filter((h) => h() !== '');
      assert.deepEqual(
        answered.map((h) => h().split('\r\n')[0]),
        [],
        'the oldest were evicted, not timed out',
      );
    } finally {
      for (const c of slow) c.destroy();
    }
  });
});

test('--socket-group takes a gid or a name of /etc/group; anything else exits 2 naming the flag', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-group-'));
  try {
    const run = (group: string) =>
      spawnSync(
        process.execPath,
        [
          CLI,
          'run',
          '--mode-file',
          path.join(dir, 'mode'),
          '--service-cidr',
          '10.96.0.0/16',
          '--socket',
          path.join(dir, 'agent.sock'),
          '--state-dir',
          dir,
          '--socket-group',
          group,
        ],
        { encoding: 'utf8', timeout: 60_000 },
      );
    const unknown = run('no-such-group-here');
    assert.equal(unknown.status, 2);
    assert.equal(unknown.stderr, 'ovn-gwmode-agent: --socket-group: no group "no-such-group-here" in /etc/group\n');
    const huge = run('99999999999');
    assert.equal(huge.status, 2);
    assert.equal(huge.stderr, 'ovn-gwmode-agent: --socket-group: "99999999999" is not a gid\n');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
