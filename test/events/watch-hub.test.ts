// The live view's hub on a real HTTP server: a watcher that stops reading is cut
// once a megabyte waits unread for it, and its slot is free again.
import { strict as assert } from 'node:assert';
import http from 'node:http';
import net from 'node:net';
import { test } from 'node:test';
import { pino } from 'pino';
import { EventHistory, MAX_UNREAD_BYTES, WatchHub } from '../../src/events/history.js';
import type { StatusReport } from '../../src/status/report.js';

test('a watcher that never reads is cut once a megabyte waits for it; the others keep their stream', async () => {
  const history = new EventHistory(
    { now: () => 0, wall: () => Date.parse('2026-12-02T12:00:00Z') },
    pino({ level: 'silent' }),
  );
  const hub = new WatchHub(history, () => ({ phase: 'Converged', reasons: [] }) as unknown as StatusReport);
  const server = http.createServer((req, res) => hub.serve(req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as net.AddressInfo).port;
  // The stalled client: sends its request, then never reads (its receive window fills).
  const stalled = net.connect(port, '127.0.0.1');
  stalled.pause();
  stalled.write('GET /v1/watch HTTP/1.1\r\nHost: x\r\n\r\n');
  const closed = new Promise<void>((r) => stalled.once('close', () => r()));
  try {
    await new Promise((r) => setTimeout(r, 100));
    // Each status differs, so each is broadcast: many times the limit, beyond what the kernel buffers.
    const padding = 'x'.repeat(64 * 1024);
    for (let i = 0; i < ((4 * MAX_UNREAD_BYTES) / padding.length) * 3; i++) {
      hub.onStatus({ phase: 'Progressing', reasons: [`${i} ${padding}`] } as unknown as StatusReport);
      await new Promise((r) => setImmediate(r));
    }
    // Read what was sent: the stream ends, cut by the hub (bounded: a hang fails the test).
    stalled.resume();
    const cut = await Promise.race([
      closed.then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), 10_000).unref()),
    ]);
    assert.equal(cut, true, 'the stalled watcher was cut');
  } finally {
    stalled.destroy();
    await new Promise((r) => server.close(r));
  }
});
