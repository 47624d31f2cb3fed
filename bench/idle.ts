// Benchmark: what the agent costs at rest (issue 12, item 4, the CPU half). Run as root:
// `npm run bench:idle` (IDLE_SECONDS=60, REQUESTS=200).
// A converged agent on the seed's node in a throwaway namespace, nothing changing, its
// resync at the default 60 s. For IDLE_SECONDS, from /proc: the CPU ticks it used
// (utime+stime of /proc/PID/stat, all threads) and its wake-ups (voluntary context
// switches summed over /proc/PID/task/*/status: every thread that slept and woke).
// Twice: after start, and after REQUESTS `GET /status` over the socket (keep-alive
// connections closed by the client). Beside it, in the same run: `node` idling on a
// timer (`setInterval(() => {}, 3600000)`), the floor of a Node.js process at rest. Then
// the VmRSS of both (idle RSS).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FakeOvnkube } from '../test/helpers/agent.js';
import { seedNode } from '../test/helpers/netns.js';
import { terminate } from '../src/demo/process.js';

const SECONDS = Number(process.env.IDLE_SECONDS ?? 60);
const REQUESTS = Number(process.env.REQUESTS ?? 200);
const CLI = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Sample {
  ticks: number;
  wakeups: number;
  byThread: Record<string, number>;
}

/** CPU ticks and voluntary context switches of a process, all threads. */
function sample(pid: number): Sample {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  let wakeups = 0;
  const byThread: Record<string, number> = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
      const n = Number(/^voluntary_ctxt_switches:\s+(\d+)$/m.exec(status)?.[1] ?? 0);
      const name = /^Name:\s+(.*)$/m.exec(status)?.[1] ?? tid;
      wakeups += n;
      byThread[`${name}/${tid}`] = n;
    } catch {
      // a thread that ended
    }
  }
  return { ticks, wakeups, byThread };
}

async function over(pid: number, seconds: number) {
  const a = sample(pid);
  await sleep(seconds * 1000);
  const b = sample(pid);
  const threads: Record<string, number> = {};
  for (const [k, v] of Object.entries(b.byThread))
    if (v - (a.byThread[k] ?? 0) > 0) threads[k] = v - (a.byThread[k] ?? 0);
  return { seconds, cpuTicks: b.ticks - a.ticks, wakeups: b.wakeups - a.wakeups, wakeupsByThread: threads };
}

function get(socketPath: string, agent: http.Agent): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.get({ socketPath, path: '/status', agent }, (res) => {
      res.resume();
      res.on('end', resolve);
    });
    req.on('error', reject);
  });
}

/** The pid of the node process under `ip netns exec` (ip execs it: same pid). */
const pidOf = (child: ChildProcess) => child.pid!;

const ns = seedNode({ gw0: true });
const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-idle-'));
const ovnkube = new FakeOvnkube(ns, dir);
let agent: ChildProcess | undefined;
let floor: ChildProcess | undefined;
try {
  writeFileSync(path.join(dir, 'mode'), 'local\n');
  ovnkube.start('local', { respawn: true });
  const socket = path.join(dir, 'run', 'agent.sock');
  let out = '';
  agent = spawn(
    'ip',
    [
      'netns',
      'exec',
      ns.name,
      process.execPath,
      CLI,
      'run',
      '--mode-file',
      path.join(dir, 'mode'),
      '--service-cidr',
      '10.96.0.0/16',
      '--mtu',
      '1400',
      '--settle',
      '0',
      // The seed's node is no RHCOS host: state its layout.
      '--layout',
      'legacy',
      '--restart',
      'signal',
      '--socket',
      socket,
      '--state-dir',
      path.join(dir, 'state'),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  agent.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  agent.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  floor = spawn(process.execPath, ['-e', 'setInterval(() => {}, 3600000)'], { stdio: 'ignore' });
  for (let i = 0; !/"msg":"phase Converged"/.test(out); i++) {
    if (i > 600) throw new Error(`never Converged:\n${out}`);
    await sleep(50);
  }
  await sleep(3000);
  const [quiet, node] = await Promise.all([over(pidOf(agent), SECONDS), over(pidOf(floor), SECONDS)]);
  const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 8 });
  await Promise.all(Array.from({ length: REQUESTS }, () => get(socket, keepAlive)));
  keepAlive.destroy();
  await sleep(1000);
  const afterRequests = await over(pidOf(agent), SECONDS);
  // Idle RSS: the agent's resident memory at the end, beside a node process idling on a timer.
  const vmRssMb = (pid: number) =>
    Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
  const rss = { agentMb: vmRssMb(pidOf(agent)), nodeOnATimerMb: vmRssMb(pidOf(floor)) };
  console.log(
    JSON.stringify(
      {
        agentQuiet: quiet,
        agentAfterRequests: { requests: REQUESTS, ...afterRequests },
        nodeIdlingOnATimer: node,
        rss,
      },
      null,
      2,
    ),
  );
} finally {
  floor?.kill();
  await terminate(agent);
  ovnkube.stop();
  ns.destroy();
  rmSync(dir, { recursive: true, force: true });
}
