// Benchmark: the agent's status socket under abuse, on a real agent in a throwaway
// namespace (root). Reports, for the issue's figures:
//  - /healthz latency (median, p99, max of PROBES probes) while SLOW=200 slow clients
//    hold half-sent requests, against the 100 ms budget; then while they reconnect when cut;
//  - a seeded flood of COUNT=100000 malformed or hostile requests (GWMODE_ABUSE_SEED),
//    a good request after every burst, and the agent's RSS before, during and after.
//  - the same probe phases against a plain node:http server in the same run, the yardstick
//    for what of the tail is the machine and the client process rather than the agent.
// Run: `npm run build && node dist/bench/socket-abuse.js` (or `npm run bench:socket`).
// CPU_PROF=DIR runs the agent with V8's CPU profiler (bench/profiled-agent.ts), its profile
// written to DIR when it stops.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { waitForStatus, withNode } from '../test/helpers/agent.js';
import { flood, get } from '../test/helpers/hostile-http.js';
import { prng, seedFrom } from '../test/helpers/prng.js';

const COUNT = Number(process.env.COUNT ?? 100_000);
const SLOW = Number(process.env.SLOW ?? 200);
const PROBES = Number(process.env.PROBES ?? 500);
const seed = seedFrom('GWMODE_ABUSE_SEED', 20261202);

const rssKb = (pid: number) => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;

/** n connections that send half a request and say no more; with reconnect, each cut one comes back. */
function holdSlow(socket: string, n: number, reconnect: boolean): { stop: () => void; reconnects: () => number } {
  let stopped = false;
  let reconnects = 0;
  const conns = new Set<net.Socket>();
  const open = () => {
    if (stopped) return;
    const c = net.connect(socket);
    conns.add(c);
    c.on('error', () => undefined);
    // Read (and drop) what comes: a client cut with a 408 must see the end of the stream
    // behind that answer, or it never learns it was cut and never comes back.
    c.resume();
    c.once('connect', () => c.write('GET /status HTTP/1.1\r\nHost: local'));
    c.once('close', () => {
      conns.delete(c);
      if (!reconnect || stopped) return;
      reconnects++;
      setTimeout(open, 5);
    });
  };
  for (let i = 0; i < n; i++) open();
  return {
    stop: () => {
      stopped = true;
      for (const c of conns) c.destroy();
    },
    reconnects: () => reconnects,
  };
}

/**
 * The probe phases against `socket`: PROBES /healthz probes while SLOW slow clients
 * hold their connections, then while each one cut comes straight back.
 */
async function probePhases(socket: string, who: string): Promise<void> {
  for (const reconnect of [false, true]) {
    const slow = holdSlow(socket, SLOW, reconnect);
    await new Promise((r) => setTimeout(r, 1000));
    const latencies: number[] = [];
    let failed = 0;
    for (let i = 0; i < PROBES; i++) {
      const t0 = performance.now();
      const r = await get(socket, '/healthz').catch(() => ({ code: 0 }));
      latencies.push(performance.now() - t0);
      if (r.code !== 200) failed++;
      await new Promise((r) => setTimeout(r, 10));
    }
    slow.stop();
    const over = latencies.filter((l) => l > 100).length;
    console.log(
      `${who}: /healthz under ${SLOW} slow clients${reconnect ? `, reconnecting when cut (${slow.reconnects()} times)` : ' holding their connections'}: ${PROBES} probes, ${failed} failed, median ${pct(latencies, 50).toFixed(1)} ms, p99 ${pct(latencies, 99).toFixed(1)} ms, max ${Math.max(...latencies).toFixed(1)} ms, ${over} over 100 ms`,
    );
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * The yardstick: a plain node:http server with Node's defaults and no limits of ours,
 * in a process of its own as the agent is, answering /healthz the same way. Whatever
 * tail it shows under the same abuse in the same run is the machine's and the
 * client's, not the agent's.
 */
const PLAIN_SERVER = `
const http = require('node:http');
const server = http.createServer((req, res) => {
  const body = JSON.stringify({ ok: true }, null, 2) + '\\n';
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.listen(process.argv[1], () => process.stdout.write('listening\\n'));
process.on('SIGTERM', () => { server.closeAllConnections(); server.close(() => process.exit(0)); });
`;

async function plainServer(socket: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', PLAIN_SERVER, socket], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
  return child;
}

await withNode({ gw0: true }, async ({ scratch, ovnkube, startAgent }) => {
  scratch.writeMode('local');
  ovnkube.start('local', { respawn: true });
  const args = ['--service-cidr', '10.96.0.0/16', '--mtu', '1400', '--log-level', 'info'];
  const a = process.env.CPU_PROF
    ? startAgent(
        args,
        { CPU_PROF_DIR: path.resolve(process.env.CPU_PROF) },
        fileURLToPath(new URL('./profiled-agent.js', import.meta.url)),
      )
    : startAgent(args);
  await waitForStatus(a, (s) => s.lastReconcile !== null, 'a pass');
  const pid = a.child.pid!;
  const rssStart = rssKb(pid);

  // The issue's case: SLOW clients that hold their connection; then a harder one, where
  // every client cut to make room comes straight back. Then the same against a plain server.
  await probePhases(scratch.socket, 'agent');
  const plainSocket = path.join(scratch.dir, 'plain.sock');
  const plain = await plainServer(plainSocket);
  try {
    await probePhases(plainSocket, 'plain node:http server');
  } finally {
    plain.kill('SIGTERM');
  }

  const samples: number[] = [];
  const t0 = performance.now();
  const result = await flood(scratch.socket, prng(seed), {
    count: COUNT,
    concurrency: 50,
    burst: 1000,
    afterBurst: async (sent) => {
      if (a.child.exitCode !== null)
        throw new Error(`the agent exited after ${sent} requests:\n${a.output.slice(-2000)}`);
      const r = await get(scratch.socket, '/healthz');
      if (r.code !== 200) throw new Error(`/healthz answered ${r.code} after ${sent}`);
      if (sent % 10_000 === 0) samples.push(rssKb(pid));
    },
  });
  const seconds = (performance.now() - t0) / 1000;
  console.log(
    `flood (seed ${seed}): ${result.cases} connections, ${result.requests} requests in ${seconds.toFixed(1)} s; a good request answered after each of ${Math.ceil(result.cases / 1000)} bursts`,
  );
  console.log(`by kind: ${JSON.stringify(result.byKind)}`);
  console.log(`RSS: ${rssStart} kB at start; every 10,000: ${samples.join(', ')} kB; end ${rssKb(pid)} kB`);
});
