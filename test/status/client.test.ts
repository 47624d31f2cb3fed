// The CLI's socket client (node:http over the agent's UNIX socket): the answer's code and
// body, and each way of failing said as what it means for the caller.
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mock, test } from 'node:test';
import { AgentUnreachableError, fetchPath } from '../../src/status/client.js';

test('fetchPath stops reading an answer that goes past the cap', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-client-'));
  const endless = net.createServer((c) => {
    c.on('error', () => {});
    c.write('HTTP/1.1 200 OK\r\n\r\n');
    const block = Buffer.alloc(1 << 20, 0x20);
    const more = () => {
      while (!c.destroyed && c.write(block));
    };
    c.on('drain', more);
    more();
  });
  try {
    const sock = path.join(dir, 'endless.sock');
    await new Promise<void>((resolve) => endless.listen(sock, resolve));
    await assert.rejects(
      fetchPath(sock, '/status', 60_000),
      (err: Error) => err instanceof AgentUnreachableError && /longer than \d+ bytes/.test(err.message),
    );
  } finally {
    endless.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

// A UNIX-socket listener that does not accept: its backlog filled, a connect fails at once
// with EAGAIN. On "go" on stdin it accepts, and answers the first request 200.
const FULL_BACKLOG = `
import socket, sys
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind(path); s.listen(0)
fillers = []
while True:
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); c.setblocking(False)
    try:
        c.connect(path)
    except BlockingIOError:
        c.close(); break
    fillers.append(c)
print('full', flush=True)
sys.stdin.readline()
for c in fillers: c.close()
while True:
    conn, _ = s.accept()
    data = b''
    while b'\\r\\n\\r\\n' not in data:
        more = conn.recv(4096)
        if not more: break
        data += more
    if data:
        conn.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\n{}')
        conn.close(); break
    conn.close()
`;

test('fetchPath retries a connect refused with EAGAIN (a listener whose backlog is full) until it gets in', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-client-'));
  const sock = path.join(dir, 'full.sock');
  const py = spawn('python3', ['-c', FULL_BACKLOG, sock], { stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    await new Promise<void>((resolve, reject) => {
      py.stdout.on('data', (d: Buffer) => d.toString().includes('full') && resolve());
      py.on('exit', (code) => reject(new Error(`the listener exited ${code}`)));
    });
    // The backlog is full: a plain connect fails at once.
    const refused = await new Promise<string | undefined>((resolve) => {
      const c = net.connect(sock, () => (c.destroy(), resolve(undefined)));
      c.on('error', (err: NodeJS.ErrnoException) => resolve(err.code));
    });
    assert.equal(refused, 'EAGAIN');
    let settled = false;
    const answer = fetchPath(sock, '/healthz', 60_000).finally(() => (settled = true));
    // Some tries fail meanwhile; the call is still trying.
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(settled, false, 'EAGAIN is retried, not reported');
    py.stdin.write('go\n');
    assert.deepEqual(await answer, { code: 200, body: {} });
  } finally {
    py.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('fetchPath keeps retrying for its whole timeout when the wall clock is stepped forward past it meanwhile (the timeout is a duration)', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-client-'));
  const sock = path.join(dir, 'full.sock');
  const py = spawn('python3', ['-c', FULL_BACKLOG, sock], { stdio: ['pipe', 'pipe', 'inherit'] });
  mock.timers.enable({ apis: ['Date'], now: Date.now() });
  try {
    await new Promise<void>((resolve, reject) => {
      py.stdout.on('data', (d: Buffer) => d.toString().includes('full') && resolve());
      py.on('exit', (code) => reject(new Error(`the listener exited ${code}`)));
    });
    let settled = false;
    const answer = fetchPath(sock, '/healthz', 60_000).finally(() => (settled = true));
    // NTP steps the clock two minutes forward while it retries.
    mock.timers.setTime(Date.now() + 120_000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(settled, false, 'still trying: 60 s have not passed');
    py.stdin.write('go\n');
    assert.deepEqual(await answer, { code: 200, body: {} });
  } finally {
    mock.timers.reset();
    py.kill();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('fetchPath reads node:http answers of either framing over a UNIX socket, and says so when the other end is not HTTP', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-client-'));
  const servers: Array<http.Server | net.Server> = [];
  const listen = (s: http.Server | net.Server, name: string) =>
    new Promise<string>((resolve) => s.listen(path.join(dir, name), () => resolve(path.join(dir, name))));
  try {
    const plain = http.createServer((req, res) => {
      const text = JSON.stringify({ path: req.url, many: 'x'.repeat(100_000) });
      if (req.url === '/chunked') {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.write(text.slice(0, 10));
        res.end(text.slice(10));
      } else {
        res.writeHead(200, { 'content-length': Buffer.byteLength(text) });
        res.end(text);
      }
    });
    servers.push(plain);
    const sock = await listen(plain, 'http.sock');
    const a = await fetchPath(sock, '/status');
    assert.equal(a.code, 200);
    assert.equal((a.body as { path: string }).path, '/status');
    const b = await fetchPath(sock, '/chunked');
    assert.equal(b.code, 503);
    assert.equal((b.body as { many: string }).many.length, 100_000);

    const rude = net.createServer((c) => c.end('nonsense\r\n\r\n'));
    servers.push(rude);
    const rudeSock = await listen(rude, 'rude.sock');
    await assert.rejects(
      fetchPath(rudeSock, '/status'),
      (err: Error) =>
        err instanceof AgentUnreachableError && /^bad answer on .*rude\.sock: not an HTTP answer/.test(err.message),
    );
    await assert.rejects(
      fetchPath(path.join(dir, 'none.sock'), '/status'),
      /cannot reach the agent on .*none\.sock \(ENOENT\): is the agent running\?/,
    );
  } finally {
    for (const s of servers) s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a socket that accepts but never answers is given up on at the timeout: the agent unreachable, not a crash', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-client-'));
  const open: net.Socket[] = [];
  const mute = net.createServer((c) => void open.push(c));
  try {
    const sock = path.join(dir, 'mute.sock');
    await new Promise<void>((resolve) => mute.listen(sock, resolve));
    await assert.rejects(
      fetchPath(sock, '/healthz', 200),
      (err: Error) =>
        err instanceof AgentUnreachableError &&
        /^cannot reach the agent on .*mute\.sock \(timed out\): is the agent running\?$/.test(err.message),
    );
  } finally {
    for (const c of open) c.destroy();
    mute.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
