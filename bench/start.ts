// Benchmark: how fast the agent starts and how light it and its probe commands are (root).
// In one run, on the seed's node in a throwaway namespace, each figure beside its comparison:
//  - start to ready: from spawning `ip netns exec NS node main.js run` until the socket answers
//    /readyz 200 (the first reconcile is done), with --restart signal and with --restart cri;
//    beside `ip netns exec NS node -e 0` (a whole process) and a plain node HTTP server on a
//    UNIX socket (spawn until it answers; its RSS after 200 requests), timed the same way;
//  - the daemon's RSS (VmRSS) when ready, after 200 GET /status, and 2 s later;
//  - the CLI commands probes and users run often (status, status --brief, health, health
//    --ready) as whole processes against the running agent, with their peak RSS, beside
//    `node -e 0`.
// RUNS (default 10) sets the repetitions; BENCH_EACH=1 prints each start's figures too (Node 24
// starts in two modes); AGENT_NODE_FLAGS, Node or V8 flags for the agent's
// runs; COMPARE_FLAGS, a second set of flags timed beside the first in the same run;
// AGENT_ROOT, another build of the agent to time (a directory holding
// dist/src/cli/main.js, e.g. a copy of main for the "before" figures); COMPARE_ROOT, a
// second build timed beside it in the same run (each of its starts interleaved with
// those of the first, as the flag sets are).
// The agent's starts are interleaved: each round starts every configuration (restart
// strategy, flags) once, in an order that rotates from round to round, so that none is
// always first (on a cold cache) or always at the same moment of the machine's load.
// Run: `npm run bench:start`.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { FakeOvnkube, Scratch } from '../test/helpers/agent.js';
import { seedNode } from '../test/helpers/netns.js';
import { socketGet, statusKb } from './socket-get.js';

const RUNS = Number(process.env.RUNS ?? 10);
const ROOT = process.env.AGENT_ROOT ?? fileURLToPath(new URL('../..', import.meta.url));
const CLI = path.join(ROOT, 'dist', 'src', 'cli', 'main.js');
const COMPARE_CLI =
  process.env.COMPARE_ROOT === undefined
    ? undefined
    : path.join(process.env.COMPARE_ROOT, 'dist', 'src', 'cli', 'main.js');
const NODE_FLAGS = (process.env.AGENT_NODE_FLAGS ?? '').split(' ').filter(Boolean);
const COMPARE_FLAGS =
  process.env.COMPARE_FLAGS === undefined ? undefined : process.env.COMPARE_FLAGS.split(' ').filter(Boolean);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const range = (xs: number[]) =>
  `median ${median(xs).toFixed(0)} (min ${Math.min(...xs).toFixed(0)}, max ${Math.max(...xs).toFixed(0)})`;
const mb = (kb: number) => (kb / 1024).toFixed(1);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Milliseconds from spawning until the socket answers urlPath with 200 (polled every millisecond). */
async function untilAnswer(
  start: () => ChildProcess,
  socket: string,
  urlPath: string,
): Promise<{ ms: number; child: ChildProcess }> {
  const t0 = performance.now();
  const child = start();
  let output = '';
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  for (;;) {
    if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode} before answering: ${output}`);
    if ((await socketGet(socket, urlPath)) === 200) return { ms: performance.now() - t0, child };
    await pause(1);
  }
}

async function stopped(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const done = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await done;
}

/** A whole process: wall milliseconds, and its peak RSS from /usr/bin/time. */
function whole(cmd: string[]): { ms: number; kb: number; code: number | null } {
  const t0 = performance.now();
  const r = spawnSync('/usr/bin/time', ['-f', '%M', ...cmd], { encoding: 'utf8' });
  const ms = performance.now() - t0;
  return { ms, kb: Number(r.stderr.trim().split('\n').at(-1)), code: r.status };
}

const ns = seedNode({ gw0: true });
const scratch = new Scratch();
const ovnkube = new FakeOvnkube(ns, scratch.dir);
const run =
  (restart: string, flags = NODE_FLAGS, cli = CLI) =>
  () =>
    spawn(
      'ip',
      [
        'netns',
        'exec',
        ns.name,
        process.execPath,
        ...flags,
        cli,
        'run',
        '--mode-file',
        scratch.modeFile,
        '--socket',
        scratch.socket,
        '--state-dir',
        scratch.stateDir,
        '--service-cidr',
        '10.96.0.0/16',
        '--mtu',
        '1400',
        '--restart',
        restart,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
try {
  // A quiet node: the mode file says shared, ovnkube-node runs shared, the route is shared.
  scratch.writeMode('shared');
  ovnkube.start('shared');
  console.log(
    `agent: ${CLI}${COMPARE_CLI ? ` and ${COMPARE_CLI}` : ''}; node ${process.version}${NODE_FLAGS.length ? ` ${NODE_FLAGS.join(' ')}` : ''}; ${RUNS} runs each`,
  );

  const plainSocket = path.join(scratch.dir, 'plain.sock');
  const plain: number[] = [];
  const bare: number[] = [];
  const plainRss: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    rmSync(plainSocket, { force: true }); // the plain server leaves it behind
    const p = await untilAnswer(
      () =>
        spawn(
          'ip',
          [
            'netns',
            'exec',
            ns.name,
            process.execPath,
            '-e',
            `require('node:http').createServer((q, s) => s.end('ok')).listen(${JSON.stringify(plainSocket)})`,
          ],
          { stdio: 'ignore' },
        ),
      plainSocket,
      '/',
    );
    plain.push(p.ms);
    for (let n = 0; n < 200; n++) await socketGet(plainSocket, '/');
    plainRss.push(statusKb(p.child.pid!, 'VmRSS'));
    await stopped(p.child);
    bare.push(whole(['ip', 'netns', 'exec', ns.name, process.execPath, '-e', '0']).ms);
  }
  console.log(`comparison: ip netns exec node -e 0 (whole process) ${range(bare)} ms`);
  console.log(
    `comparison: plain node HTTP server on a UNIX socket, spawn to first answer ${range(plain)} ms; VmRSS after 200 requests ${mb(median(plainRss))} MB (max ${mb(Math.max(...plainRss))})`,
  );

  const flagSets = COMPARE_FLAGS === undefined ? [NODE_FLAGS] : [NODE_FLAGS, COMPARE_FLAGS];
  const clis = COMPARE_CLI === undefined ? [CLI] : [CLI, COMPARE_CLI];
  const configs = (['signal', 'cri'] as const).flatMap((restart) =>
    clis.flatMap((cli) =>
      flagSets.map((flags) => ({
        restart,
        flags,
        cli,
        ready: [] as number[],
        rss: [] as Array<[number, number, number]>,
      })),
    ),
  );
  for (let i = 0; i < RUNS; i++) {
    for (let k = 0; k < configs.length; k++) {
      const c = configs[(i + k) % configs.length]!;
      const a = await untilAnswer(run(c.restart, c.flags, c.cli), scratch.socket, '/readyz');
      c.ready.push(a.ms);
      const pid = a.child.pid!;
      const atReady = statusKb(pid, 'VmRSS');
      for (let n = 0; n < 200; n++) await socketGet(scratch.socket, '/status');
      const after = statusKb(pid, 'VmRSS');
      await pause(2000);
      c.rss.push([atReady, after, statusKb(pid, 'VmRSS')]);
      await stopped(a.child);
    }
  }
  for (const { restart, flags, cli, ready, rss } of configs) {
    console.log(
      `agent${clis.length > 1 ? ` ${cli}` : ''} --restart ${restart}${flagSets.length > 1 ? ` (node flags: ${flags.join(' ') || 'none'})` : ''}: start to ready ${range(ready)} ms`,
    );
    const col = (k: 0 | 1 | 2) => rss.map((r) => r[k]);
    if (process.env.BENCH_EACH)
      console.log(
        `  each start (in order): after 200 /status ${col(1).map(mb).join(', ')} MB; ready ${ready.map((x) => x.toFixed(0)).join(', ')} ms`,
      );
    console.log(
      `  VmRSS at ready ${mb(median(col(0)))} MB (max ${mb(Math.max(...col(0)))}), after 200 /status ${mb(median(col(1)))} MB (max ${mb(Math.max(...col(1)))}), 2 s later ${mb(median(col(2)))} MB (max ${mb(Math.max(...col(2)))})`,
    );
  }

  const agent = await untilAnswer(run('cri'), scratch.socket, '/readyz');
  try {
    const commands: Array<[string, string[]]> = [
      ['node -e 0', [process.execPath, '-e', '0']],
      ['status', [process.execPath, CLI, 'status', '--socket', scratch.socket]],
      ['status --brief', [process.execPath, CLI, 'status', '--brief', '--socket', scratch.socket]],
      ['health', [process.execPath, CLI, 'health', '--socket', scratch.socket]],
      ['health --ready', [process.execPath, CLI, 'health', '--ready', '--socket', scratch.socket]],
    ];
    for (const [name, cmd] of commands) {
      const rs = Array.from({ length: RUNS }, () => whole(cmd));
      if (rs.some((r) => r.code !== 0)) throw new Error(`${name} failed: exit ${rs.map((r) => r.code).join(',')}`);
      console.log(
        `${name.padEnd(15)} whole process ${range(rs.map((r) => r.ms))} ms, peak RSS ${mb(median(rs.map((r) => r.kb)))} MB (max ${mb(Math.max(...rs.map((r) => r.kb)))})`,
      );
    }
  } finally {
    await stopped(agent.child);
  }
} finally {
  ovnkube.stop();
  ns.destroy();
  scratch.remove();
}
