// Benchmark: the agent on a main table of 1,000,000 routes (issue 12, item 5). Run as
// root: `npm run bench:scale` (ROUTES=1000000, CHURN=100000, PASSES=20, REPAIRS=20).
// A throwaway namespace with the seed's node and ROUTES unrelated /32 routes (ip -batch).
//  1. A full reconcile pass in process: the owner loop (src/agent/agent.ts) with the
//     real kernel dataplane, /proc probe and journal, a pass forced by settle()
//     (reads the mode file, observes, plans, decides; each one dump of the table): the
//     first, then the median of PASSES. Beside it: `ip route show table
//     main exact 10.96.0.0/16` as a whole process, on the same table.
//  2. Churn: the real agent converged (local); REPAIRS outside changes of a service
//     route, each on a CIDR not yet fought over (CIDRS extra service CIDRs 10.97.N.0/24,
//     in local shape), each timed to its repair from this process's route notifications,
//     first on the quiet table, then while `ip -batch` replaces CHURN unrelated routes,
//     each by another next hop (the real changes are counted from their notifications);
//     how many times the agent lost notifications meanwhile (each costs a full pass) and
//     its failed passes (their log lines: a failed pass is retried after a backoff);
//     its subscription socket's fill (the most bytes queued, sampled every 10 ms from
//     /proc/PID/net/netlink: a lower bound) and the notifications the kernel dropped on
//     it (Drops, the kernel's own count);
//     the agent's VmRSS once converged and after the churn.
// COMPARE_FLAGS='--max-semi-space-size=1 --v8-pool-size=1' (Node or V8 flags) runs 1 and 2
// twice on the same table, without and then with those flags (the in-process passes'
// process and the agent alike), so that the flags' cost is read from one run.
import { systemClock } from '../src/clock.js';
import { execFile, execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { FakeOvnkube } from '../test/helpers/agent.js';
import { seedNode } from '../test/helpers/netns.js';
import { terminate } from '../src/demo/process.js';
import { parseOsRelease } from '../src/core/platform.js';
import { rhcosOsRelease } from '../test/helpers/os-release.js';

const ROUTES = Number(process.env.ROUTES ?? 1_000_000);
const CHURN = Number(process.env.CHURN ?? 100_000);
const PASSES = Number(process.env.PASSES ?? 20);
const REPAIRS = Number(process.env.REPAIRS ?? 20);
const CIDRS = REPAIRS + 80;
const COMPARE_FLAGS = (process.env.COMPARE_FLAGS ?? '').split(' ').filter(Boolean);
// AGENT_ROOT: another build of the agent to run (its dist/, native/build and node_modules).
const CLI = process.env.AGENT_ROOT
  ? path.join(process.env.AGENT_ROOT, 'dist', 'src', 'cli', 'main.js')
  : fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] ?? NaN;
const summary = (xs: number[]) => ({
  runs: xs.length,
  p50: +pct(xs, 50).toFixed(2),
  p99: +pct(xs, 99).toFixed(2),
  max: +Math.max(...xs).toFixed(2),
});

/** Inside the namespace: full passes of the owner loop, in process. */
async function passes(dir: string): Promise<void> {
  const { pino } = await import('pino');
  const { Agent } = await import('../src/agent/agent.js');
  const { KernelDataplane } = await import('../src/dataplane/kernel.js');
  const { Journal } = await import('../src/restart/journal.js');
  const { NoRestart } = await import('../src/restart/strategy.js');
  const { readModeSource } = await import('../src/mode/source.js');
  const { scanOvnkubeProcesses, summarise } = await import('../src/ovnkube/proc.js');
  const { parseCidr } = await import('../src/net/cidr.js');
  const dp = new KernelDataplane();
  const agent = new Agent(
    {
      dataplane: dp,
      strategy: new NoRestart(),
      journal: new Journal(path.join(dir, 'state-inproc')),
      probe: async () => summarise(scanOvnkubeProcesses(), null),
      log: pino({ level: 'silent' }),
      readMode: () => readModeSource(path.join(dir, 'mode')),
      watchMode: () => ({ close: async () => undefined }),
      clock: systemClock,
      random: Math.random,
    },
    {
      config: {
        serviceCidrs: [parseCidr('10.96.0.0/16')],
        gatewayInterface: 'br-ex',
        managementInterface: 'ovn-k8s-mp0',
        layout: 'auto',
        ovnkubeModeCheck: 'proc',
        mtu: 1400,
        gatewayNexthop: {},
        masqueradeNexthops: [],
        osRelease: parseOsRelease(rhcosOsRelease('4.9'), 'os-release'),
        confEvidence: null,
        dryRun: true,
      },
      modePath: path.join(dir, 'mode'),
      resyncIntervalMs: 3_600_000,
      restart: {
        strategy: 'none',
        limit: { minIntervalMs: 0, maxPerHour: 3 },
        timeoutMs: 300_000,
        settleMs: 0,
        retryBaseMs: 5000,
        retryMaxMs: 300_000,
        modeChecked: true,
      },
    },
  );
  await agent.init();
  let t = performance.now();
  agent.start();
  await agent.settle();
  const firstMs = performance.now() - t;
  const times: number[] = [];
  for (let i = 0; i < PASSES; i++) {
    t = performance.now();
    await agent.settle();
    times.push(performance.now() - t);
  }
  const s = agent.status();
  await agent.stop();
  dp.close();
  process.stdout.write(
    JSON.stringify({ firstPassMs: +firstMs.toFixed(1), steadyPass: summary(times), sawRoute: s.routes[0]?.observed }),
  );
}

/** Inside the namespace: repairs of the service route, quiet then under churn. */
async function repairs(ns: string, round: number): Promise<void> {
  const { nativeTransport } = await import('../src/dataplane/channel.js');
  const { parseDatagram, decodeRoute, RTM_NEWROUTE, RTNLGRP_IPV4_ROUTE } = await import('../src/dataplane/codec.js');
  const { addressFromBytes } = await import('../src/net/cidr.js');
  const { KernelDataplane } = await import('../src/dataplane/kernel.js');
  // Every notification of a service route is kept: the agent's answer may come in the same read as the change it answers.
  const seen = new Map<string, number[]>();
  let waiter: { key: string; after: number; resolve: (t: number) => void } | undefined;
  /** The churn's real changes: its /32 notifications (a replace by an identical route sends none). */
  let churned = 0;
  /** ENOBUFS on this bench's own socket: churned is then a lower bound. */
  let benchLost = 0;
  const drain = () => {
    for (;;) {
      let d: Buffer | null;
      try {
        d = socket.recv();
      } catch {
        benchLost++;
        continue; // The service route's messages may be lost too: the waiter's timeout tells.
      }
      if (d === null) return;
      const t = performance.now();
      for (const msg of parseDatagram(d)) {
        if (msg.type === RTM_NEWROUTE && msg.data[1] === 32) churned++;
        // Byte 1 of rtmsg is the destination's length: the service routes are /24s, the churn /32s.
        if (msg.type !== RTM_NEWROUTE || msg.data[1] !== 24) continue;
        const r = decodeRoute(msg.data);
        if (!r.dst || !r.gateway) continue;
        const key = `${addressFromBytes(r.dst).text}/24 via ${addressFromBytes(r.gateway).text}`;
        seen.set(key, [...(seen.get(key) ?? []), t]);
        if (waiter && waiter.key === key && t >= waiter.after) {
          const w = waiter;
          waiter = undefined;
          w.resolve(t);
        }
      }
    }
  };
  const socket = nativeTransport.open({ groups: [RTNLGRP_IPV4_ROUTE], rcvbuf: 256 << 20 }, drain);
  const next = (prefix: string, gateway: string, after = performance.now()) => {
    const key = `${prefix} via ${gateway}`;
    const already = (seen.get(key) ?? []).find((t) => t >= after);
    if (already !== undefined) return Promise.resolve(already);
    return new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no notification of ${key} in 20 s`)), 20_000);
      waiter = { key, after, resolve: (t) => (clearTimeout(timer), resolve(t)) };
    });
  };
  const dp = new KernelDataplane();
  const brEx = (await dp.links(['br-ex', 'ovn-k8s-mp0'])).find((l) => l.name === 'br-ex')!.index;
  let cidr = 0;
  /** The comparison: this process's own replace until its notification (what the kernel allows at that moment). */
  let own: number[] = [];
  const one = async () => {
    if (cidr >= CIDRS) throw new Error(`all ${CIDRS} service CIDRs fought over`);
    const prefix = `10.97.${cidr++}.0/24`;
    const bad = next(prefix, '172.18.0.1');
    const t0 = performance.now();
    await dp.replaceRoute({
      key: { prefix, family: 4, table: 254, priority: 0 },
      protocol: 3,
      scope: 0,
      type: 1,
      to: { dev: 'br-ex', oif: brEx, gateway: '172.18.0.1', mtu: 1400 },
    });
    const tBad = await bad;
    own.push(tBad - t0);
    return (await next(prefix, '10.244.1.1', tBad)) - tBad;
  };
  const quiet: number[] = [];
  for (let i = 0; i < REPAIRS; i++) {
    quiet.push(await one());
    await sleep(100);
  }
  const ownQuiet = own;
  own = [];
  const lines: string[] = [];
  // Every route of the churn changes in every round: the table was filled via .1, round 0
  // moves them all to .3, round 1 back to .1 (a replace by an identical route would change
  // nothing and send no notification). The changes are counted from the notifications.
  for (let i = 0; i < CHURN; i++)
    lines.push(
      `route replace 100.${64 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32 via 172.18.0.${round % 2 === 0 ? 3 : 1} dev br-ex`,
    );
  churned = 0;
  benchLost = 0;
  const churn = spawn('ip', ['-batch', '-'], { stdio: ['pipe', 'ignore', 'inherit'] });
  const churnDone = new Promise<number>((r) => churn.once('exit', () => r(performance.now())));
  const t0 = performance.now();
  churn.stdin.end(lines.join('\n') + '\n');
  const busy: number[] = [];
  let running = true;
  void churnDone.then(() => (running = false));
  while ((running || busy.length === 0) && cidr < CIDRS) {
    busy.push(await one());
    await sleep(20);
  }
  const churnMs = (await churnDone) - t0;
  // The kernel queued every notification before ip exited: read what is left.
  drain();
  socket.close();
  dp.close();
  process.stdout.write(
    JSON.stringify({
      quietRepair: summary(quiet),
      repairDuringChurn: summary(busy),
      outsideReplaceInProcessQuiet: summary(ownQuiet),
      outsideReplaceInProcessDuringChurn: summary(own),
      churn: { replacesSent: CHURN, changes: churned, benchSocketLosses: benchLost, ms: Math.round(churnMs) },
      ns,
    }),
  );
}

/** VmRSS of a process, in MB. */
function rssMb(pid: number): number {
  const kb = Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
  return +(kb / 1024).toFixed(1);
}

/** The inodes of a process's sockets. */
function socketInodes(pid: number): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // Closed meanwhile.
    }
  }
  return inodes;
}

/**
 * The agent's subscription sockets (netlink sockets of its own, in multicast groups), as
 * /proc/PID/net/netlink shows them in its namespace: bytes queued (Rmem) and the
 * notifications the kernel dropped for want of room (Drops), summed.
 */
function subscriptionSockets(pid: number, inodes: Set<string>): { rmem: number; drops: number } {
  let rmem = 0;
  let drops = 0;
  for (const line of readFileSync(`/proc/${pid}/net/netlink`, 'utf8').split('\n').slice(1)) {
    // sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode
    const f = line.trim().split(/\s+/);
    if (f.length < 10 || f[1] !== '0' || /^0+$/.test(f[3]!) || !inodes.has(f[9]!)) continue;
    rmem += Number(f[4]);
    drops += Number(f[8]);
  }
  return { rmem, drops };
}

function timeWhole(ns: string, args: string[], runs = 5): number {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const r = spawnSync('ip', ['netns', 'exec', ns, ...args], { maxBuffer: 1 << 30 });
    if (r.status !== 0) throw new Error(`${args.join(' ')}: ${r.stderr}`);
    times.push(performance.now() - t);
  }
  return +pct(times, 50).toFixed(1);
}

async function main(): Promise<void> {
  if (process.argv[2] === '--passes') return passes(process.argv[3]!);
  if (process.argv[2] === '--repairs') return repairs(process.argv[3]!, Number(process.argv[4] ?? 0));
  const ns = seedNode({ gw0: true });
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-scale-'));
  const ovnkube = new FakeOvnkube(ns, dir);
  let agent: ChildProcess | undefined;
  try {
    const lines: string[] = [];
    for (let i = 0; i < ROUTES; i++)
      lines.push(`route add 100.${64 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32 via 172.18.0.1 dev br-ex`);
    ns.batch(lines);
    ns.batch(Array.from({ length: CIDRS }, (_, i) => `route add 10.97.${i}.0/24 via 10.244.1.1 dev ovn-k8s-mp0`));
    writeFileSync(path.join(dir, 'mode'), 'local\n');
    ovnkube.start('local', { respawn: true });
    const ipExactMs = timeWhole(ns.name, ['ip', 'route', 'show', 'table', 'main', 'exact', '10.96.0.0/16']);
    const runs: Record<string, unknown>[] = [];
    const flagSets = COMPARE_FLAGS.length > 0 ? [[], COMPARE_FLAGS] : [[]];
    for (const [round, flags] of flagSets.entries()) {
      const inProcess = JSON.parse(
        execFileSync('ip', ['netns', 'exec', ns.name, process.execPath, ...flags, SELF, '--passes', dir], {
          encoding: 'utf8',
        }),
      ) as Record<string, unknown>;
      let out = '';
      let lost = 0;
      /** The agent's failed passes (their log lines), to tell a repair's wait for a retry from others. */
      const failures: string[] = [];
      let partial = '';
      // The state directory is kept: its journal says the migration to local is done, so
      // the next round's repairs are repairs, not a new migration owing a restart.
      agent = spawn(
        'ip',
        [
          'netns',
          'exec',
          ns.name,
          process.execPath,
          ...flags,
          CLI,
          'run',
          '--log-level',
          process.env.AGENT_LOG_LEVEL ?? 'info',
          '--mode-file',
          path.join(dir, 'mode'),
          '--service-cidr',
          ['10.96.0.0/16', ...Array.from({ length: CIDRS }, (_, i) => `10.97.${i}.0/24`)].join(','),
          '--mtu',
          '1400',
          '--settle',
          '0',
          '--layout',
          'legacy',
          '--restart',
          'signal',
          '--socket',
          path.join(dir, 'run', 'agent.sock'),
          '--state-dir',
          path.join(dir, 'state'),
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      agent.stdout!.on('data', (d: Buffer) => {
        const lines = (partial + d.toString()).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) {
          if (line.includes('notifications were lost')) lost++;
          if (line.includes('"msg":"reconcile failed"')) failures.push(line.slice(0, 600));
        }
        out = (out + d.toString()).slice(-20_000);
      });
      agent.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
      for (let i = 0; !/"msg":"phase Converged"/.test(out); i++) {
        if (i > 1200) throw new Error(`never Converged:\n${out}`);
        await sleep(50);
      }
      const rssConvergedMb = rssMb(agent.pid!);
      const lostBefore = lost;
      const failedBefore = failures.length;
      let churn: Record<string, unknown>;
      // Sampled while the repairs and the churn run: how full the agent's receive buffer got.
      const inodes = socketInodes(agent.pid!);
      const before = subscriptionSockets(agent.pid!, inodes);
      let peakRmem = before.rmem;
      // Every 10 ms: often enough to see a buffer filling, seldom enough not to compete with the agent.
      const sampler = setInterval(
        () => (peakRmem = Math.max(peakRmem, subscriptionSockets(agent!.pid!, inodes).rmem)),
        10,
      );
      try {
        // Not execFileSync: this process must keep reading the agent's output meanwhile
        // (a full pipe would stop the agent's logging, and the agent), and count from it.
        const { stdout } = await promisify(execFile)(
          'ip',
          ['netns', 'exec', ns.name, process.execPath, SELF, '--repairs', ns.name, String(round)],
          { encoding: 'utf8', maxBuffer: 1 << 26 },
        );
        churn = JSON.parse(stdout) as Record<string, unknown>;
        // What the agent wrote until the end of the repairs, read before counting.
        await sleep(500);
      } catch (err) {
        clearInterval(sampler);
        throw new Error(
          `repairs failed (node flags: ${flags.join(' ') || 'none'}); the agent's last output:\n${out.slice(-15000)}`,
          { cause: err },
        );
      }
      clearInterval(sampler);
      const after = subscriptionSockets(agent.pid!, inodes);
      // The peak is a lower bound (sampled); the drops are the kernel's own count.
      const agentSubscription = {
        peakQueuedKiBAtLeast: +(peakRmem / 1024).toFixed(1),
        kernelDrops: after.drops - before.drops,
      };
      runs.push({
        nodeFlags: flags.join(' ') || 'none',
        inProcess,
        ...churn,
        agentLostNotificationsDuringChurn: lost - lostBefore,
        agentSubscription,
        agentFailedPassesDuringRepairs: failures.slice(failedBefore),
        agentVmRssMb: { converged: rssConvergedMb, afterChurn: rssMb(agent.pid!) },
      });
      await terminate(agent);
      agent = undefined;
    }
    console.log(
      JSON.stringify({ routesInMainTable: ROUTES, ipRouteShowExactWholeProcessMs: ipExactMs, runs }, null, 2),
    );
  } finally {
    await terminate(agent);
    ovnkube.stop();
    ns.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
