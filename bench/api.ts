// Benchmark: `GET /status` over the agent's UNIX socket under load while migrations
// run (issue 12, item 6). Run as root: `npm run bench:api` (SECONDS=10, CONNECTIONS=32).
// The real agent on the seed's node in a throwaway namespace, its mode a ConfigMap
// volume swapped between local and shared every SWAP_MS=100 ms during the load (with
// `--ovnkube-mode-check off --restart none` every swap is a migration: journal synced,
// route replaced, verified). autocannon (socketPath) with CONNECTIONS keep-alive
// clients, in this process. Beside it, in the same run and the same way: a plain
// node:http server on a UNIX socket answering the same status body, in its own process.
// AGENT_NODE_OPTIONS: Node or V8 flags for the agent. COMPARE_FLAGS='--max-semi-space-size=1
// --v8-pool-size=1': the whole bench twice, one after the other, the agent without and then
// with those flags (each with its own plain comparison), printed together.
import autocannon from 'autocannon';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { seedNode } from '../test/helpers/netns.js';
import { terminate } from '../src/demo/process.js';

const SECONDS = Number(process.env.SECONDS ?? 10);
const CONNECTIONS = Number(process.env.CONNECTIONS ?? 32);
const SWAP_MS = Number(process.env.SWAP_MS ?? 100);
const CLI = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const NODE_ARGS = (process.env.AGENT_NODE_OPTIONS ?? '').split(' ').filter(Boolean);
const COMPARE_FLAGS = process.env.COMPARE_FLAGS ?? '';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function load(socketPath: string) {
  return new Promise<autocannon.Result>((resolve, reject) =>
    autocannon(
      { url: 'http://localhost/status', socketPath, connections: CONNECTIONS, duration: SECONDS },
      (err, result) => (err ? reject(err) : resolve(result)),
    ),
  );
}

const figures = (r: autocannon.Result) => ({
  requestsPerSecond: Math.round(r.requests.average),
  requests: r.requests.total,
  latencyMs: { p50: r.latency.p50, p99: r.latency.p99, max: r.latency.max },
  non2xx: r.non2xx,
  errors: r.errors,
  timeouts: r.timeouts,
});

function getBody(socketPath: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ socketPath, path: '/status' }, (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

/** The comparison: node:http on a UNIX socket, answering a fixed body, in a process of its own. */
const PLAIN = `
const http = require('node:http');
const body = process.env.BODY;
http.createServer((req, res) => { res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }); res.end(body); })
  .listen(process.env.SOCK, () => process.stdout.write('listening\\n'));
`;

if (COMPARE_FLAGS.trim() !== '') {
  const runs: unknown[] = [];
  for (const flags of ['', COMPARE_FLAGS]) {
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url)], {
      env: { ...process.env, COMPARE_FLAGS: '', AGENT_NODE_OPTIONS: flags },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    if (r.status !== 0) throw new Error(`bench:api with agent flags '${flags}' failed`);
    runs.push({ agentNodeFlags: flags || 'none', ...(JSON.parse(r.stdout) as object) });
  }
  console.log(JSON.stringify(runs, null, 2));
  process.exit(0);
}

const ns = seedNode({ gw0: true });
const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-api-'));
let agent: ChildProcess | undefined;
let plain: ChildProcess | undefined;
try {
  const volume = path.join(dir, 'volume');
  let n = 0;
  const swap = (mode: string) => {
    const ts = path.join(volume, `..bench_${++n}`);
    mkdirSync(ts, { recursive: true });
    writeFileSync(path.join(ts, 'mode'), mode);
    symlinkSync(path.basename(ts), path.join(volume, '..data_tmp'));
    renameSync(path.join(volume, '..data_tmp'), path.join(volume, '..data'));
  };
  swap('local');
  symlinkSync('..data/mode', path.join(volume, 'mode'));
  const socket = path.join(dir, 'run', 'agent.sock');
  let out = '';
  let replaced = 0;
  agent = spawn(
    'ip',
    [
      'netns',
      'exec',
      ns.name,
      process.execPath,
      ...NODE_ARGS,
      CLI,
      'run',
      '--mode-file',
      volume,
      '--service-cidr',
      '10.96.0.0/16',
      '--mtu',
      '1400',
      '--restart',
      'none',
      '--ovnkube-mode-check',
      'off',
      // The seed's node is no RHCOS host: the operator states its layout.
      '--layout',
      'legacy',
      '--socket',
      socket,
      '--state-dir',
      path.join(dir, 'state'),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  agent.stdout!.on('data', (d: Buffer) => {
    replaced += d.toString().split('"msg":"replaced route').length - 1;
    out = (out + d.toString()).slice(-20_000);
  });
  agent.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  for (let i = 0; !ns.routes('10.96.0.0/16')[0]?.includes('10.244.1.1'); i++) {
    if (i > 600) throw new Error(`never migrated:\n${out}`);
    await sleep(50);
  }
  const body = await getBody(socket);

  let swaps = 0;
  let swapping = true;
  const swapper = (async () => {
    while (swapping) {
      swap(swaps % 2 === 0 ? 'shared' : 'local');
      swaps++;
      await sleep(SWAP_MS);
    }
  })();
  const replacedBefore = replaced;
  const agentResult = await load(socket);
  swapping = false;
  await swapper;
  replaced -= replacedBefore;

  const plainSocket = path.join(dir, 'plain.sock');
  plain = spawn(process.execPath, ['-e', PLAIN], {
    env: { ...process.env, BODY: body, SOCK: plainSocket },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise((r) => plain!.stdout!.once('data', r));
  const plainResult = await load(plainSocket);

  console.log(
    JSON.stringify(
      {
        connections: CONNECTIONS,
        seconds: SECONDS,
        statusBodyBytes: Buffer.byteLength(body),
        agent: { ...figures(agentResult), modeSwapsDuringLoad: swaps, routeReplacesLogged: replaced },
        plainNodeHttpOnUnixSocket: figures(plainResult),
      },
      null,
      2,
    ),
  );
} finally {
  plain?.kill();
  await terminate(agent);
  ns.destroy();
  rmSync(dir, { recursive: true, force: true });
}
