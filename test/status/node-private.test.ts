// The agent's one use of Node's private state (src/status/node-private.ts): these fail on a
// Node that moved or renamed the connection-check timer or its callback, and prove that
// the status server then serves as before and says so.
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import {
  CONNECTIONS_CHECK_SYMBOL,
  findConnectionsCheck,
  PausableConnectionsCheck,
} from '../../src/status/node-private.js';
import { StatusServer } from '../../src/status/server.js';

const handlers = {
  status: () => {
    throw new Error('not asked');
  },
  alive: () => true,
  ready: () => true,
};

function scratchSocket(): { socket: string; remove: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-private-'));
  return { socket: path.join(dir, 'agent.sock'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

const get = (socket: string, urlPath: string) =>
  new Promise<number>((resolve, reject) => {
    http
      .get({ socketPath: socket, path: urlPath, agent: false }, (res) => {
        res.resume();
        res.once('end', () => resolve(res.statusCode ?? 0));
      })
      .once('error', reject);
  });

test("this Node's lib/_http_server.js still names its connection-check symbol as the agent looks for it", () => {
  // The internal module itself, not a listening server: a rename fails here whatever else moved.
  const description = execFileSync(
    process.execPath,
    [
      '--expose-internals',
      '--no-warnings',
      '-e',
      "process.stdout.write(String(require('_http_server').kConnectionsCheckingInterval?.description))",
    ],
    { encoding: 'utf8' },
  );
  assert.equal(
    description,
    CONNECTIONS_CHECK_SYMBOL,
    `Node ${process.version} moved or renamed kConnectionsCheckingInterval`,
  );
});

test("a listening server holds Node's connection-check timer under that symbol, with its callback in _onTimeout; pausing and resuming puts a timer back there", async () => {
  const { socket, remove } = scratchSocket();
  const server = http.createServer({ connectionsCheckingInterval: 500 });
  try {
    await new Promise<void>((resolve) => server.listen(socket, resolve));
    const found = findConnectionsCheck(server);
    assert.ok(!('missing' in found), `Node ${process.version}: ${'missing' in found ? found.missing : ''}`);
    const checks = new PausableConnectionsCheck(server, 500);
    assert.equal(checks.pause(), undefined);
    assert.ok('missing' in findConnectionsCheck(server), 'paused: the timer was cleared, its callback dropped');
    checks.resume();
    const resumed = findConnectionsCheck(server);
    assert.ok(
      !('missing' in resumed) && resumed.check === found.check,
      "resumed: Node's own callback is back under Node's symbol",
    );
  } finally {
    server.close();
    remove();
  }
});

test('a server whose Node keeps no timer where expected is not paused, and pausing says why', () => {
  const listening = Object.defineProperty(Object.create(http.Server.prototype) as http.Server, 'listening', {
    value: true,
  });
  const checks = new PausableConnectionsCheck(listening, 500);
  assert.equal(checks.pause(), `the server has no symbol '${CONNECTIONS_CHECK_SYMBOL}'`);
  checks.resume();
  assert.deepEqual(findConnectionsCheck({ [Symbol(CONNECTIONS_CHECK_SYMBOL)]: {} }), {
    missing: `'${CONNECTIONS_CHECK_SYMBOL}' holds no timer with an _onTimeout callback`,
  });
});

test('the status server on a Node whose check is not where expected serves as before and logs it once', async () => {
  const { socket, remove } = scratchSocket();
  const warned: Array<{ obj: object; msg: string }> = [];
  const server = await StatusServer.listen(socket, handlers, {
    log: { warn: (obj, msg) => warned.push({ obj, msg }) },
  });
  try {
    assert.equal(warned.length, 0, `Node ${process.version} keeps the check where expected: nothing to say`);
    // The check is resumed while a connection is open; taken away meanwhile, the next
    // pause finds nothing, as on a Node that keeps it elsewhere.
    const inner = (server as unknown as { server: http.Server }).server;
    const client = http.get({ socketPath: socket, path: '/healthz', agent: new http.Agent({ keepAlive: true }) });
    const res = await new Promise<http.IncomingMessage>((resolve) => client.once('response', resolve));
    res.resume();
    const found = findConnectionsCheck(inner);
    assert.ok(!('missing' in found));
    clearInterval(found.timer);
    delete (inner as unknown as Record<symbol, unknown>)[found.symbol];
    const closed = new Promise((resolve) => client.socket?.once('close', resolve));
    client.socket?.destroy();
    await closed;
    assert.equal(await get(socket, '/healthz'), 200);
    assert.equal(await get(socket, '/readyz'), 200);
    assert.equal(warned.length, 1, JSON.stringify(warned));
    assert.deepEqual(warned[0]!.obj, { code: 'GWMODE_NODE_PRIVATE' });
    assert.match(
      warned[0]!.msg,
      /^Node's connection check of the status socket cannot be paused \(the server has no symbol 'http\.server\.connectionsCheckingInterval'\): it runs every 500 ms, connections or not$/,
    );
  } finally {
    await server.close();
    remove();
  }
});
