// The status socket's edges: a client that never finishes its request, and a socket
// file whose owner is alive but busy.
import { strict as assert } from 'node:assert';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { SocketInUseError, StatusServer } from '../../src/status/server.js';
import { curl, waitForStatus, withAgent } from '../helpers/agent.js';
import { skipWithoutKernel } from '../helpers/netns.js';
import { within } from '../helpers/wait.js';

const connect = (socket: string) =>
  within(
    new Promise<net.Socket>((resolve, reject) => {
      const c = net.connect(socket);
      c.once('connect', () => resolve(c)).once('error', reject);
    }),
    10_000,
    `a connection to ${socket}`,
  );

test('SIGTERM stops the agent although a client sent half a request and another idles on keep-alive', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local' }, async ({ scratch, agent }) => {
    await waitForStatus(agent, (s) => s.lastReconcile !== null, 'a pass');
    const half = await connect(scratch.socket);
    half.write('GET /status HTTP/1.1\r\nHost: loc');
    const halfClosed = new Promise((resolve) => half.once('close', resolve));
    const idle = await connect(scratch.socket);
    idle.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
    await within(new Promise((resolve) => idle.once('data', resolve)), 10_000, 'the keep-alive answer');
    // Connections are accepted in order: an answer on a later one means the half
    // request is in the server's hands.
    assert.equal(curl(scratch.socket, '/healthz').code, 200);

    agent.child.kill('SIGTERM');
    const code = await within(agent.exited, 30_000, 'the agent exits on SIGTERM').catch((err: Error) => {
      agent.child.kill('SIGKILL');
      throw err;
    });
    assert.equal(code, 0, agent.output);
    await within(halfClosed, 10_000, 'the half-sent connection is closed');
    idle.destroy();
    assert.equal(existsSync(scratch.socket), false, 'the socket is removed');
  });
});

test('a socket file whose listener has a full backlog (EAGAIN) is not taken for stale', async (t) => {
  if (spawnSync('python3', ['--version']).error) {
    process.stderr.write(`SKIPPED (python3 is not installed): ${t.name}\n`);
    t.skip('python3 is not installed');
    return;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-sock-'));
  const socket = path.join(dir, 'agent.sock');
  // A listener that never accepts, with a backlog of one: a second connect gets EAGAIN.
  const listener = spawn(
    'python3',
    [
      '-c',
      'import socket,sys,time\ns=socket.socket(socket.AF_UNIX)\ns.bind(sys.argv[1])\ns.listen(0)\nprint("ready",flush=True)\ntime.sleep(600)',
      socket,
    ],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const clients: net.Socket[] = [];
  try {
    await within(new Promise((resolve) => listener.stdout.once('data', resolve)), 10_000, 'the listener');
    clients.push(await connect(socket));
    const handlers = {
      status: () => {
        throw new Error('not asked');
      },
      alive: () => true,
      ready: () => true,
    };
    // A server that did listen is closed again, so that a failure cannot hold the test open.
    const refusal = await within(
      StatusServer.listen(socket, handlers).then(
        (server) => server.close().then(() => undefined),
        (err: unknown) => err,
      ),
      10_000,
      'listen decides',
    );
    assert.ok(
      refusal instanceof SocketInUseError,
      `listen took over the socket, or failed otherwise: ${String(refusal)}`,
    );
    assert.equal(refusal.message, `cannot tell whether ${socket} is in use (EAGAIN): not removing it`);
    assert.ok(existsSync(socket), 'the live socket file is left alone');
  } finally {
    for (const c of clients) c.destroy();
    listener.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});
