// Benchmark: how fast the running agent reacts (issue 12, items 1 and 2), on the real
// agent in a throwaway namespace with the seed's node. Run as root: `npm run bench:react`
// (RUNS=100 by default; PODS, AGENT_ROOT and AGENT_NODE_OPTIONS below). COMPARE_FLAGS='--max-semi-space-size=1
// --v8-pool-size=1': the whole bench twice, one after the other, the agent without and then with
// those flags (AGENT_NODE_OPTIONS), printed together.
//  - reaction: a ConfigMap-style `..data` swap to local (the rename of kubelet's atomic
//    writer) until the kernel holds the local-mode service route; before each, a swap to
//    shared and the br-ex route put back as ovnkube-node would; the agent runs with
//    `--ovnkube-mode-check off --restart none`, so that every swap is a migration;
//  - repair: an outside replace of a service route until the agent has put it back,
//    each run on a CIDR not yet fought over (RUNS CIDRs 10.97.N.0/24, already in local
//    shape, beside the seed's stale 10.96.0.0/16 which the agent migrates first; the
//    agent converged with a stand-in ovnkube-node in local mode).
// Times are taken by this process from its own route notifications (a raw rtnetlink
// socket in the namespace): reaction from just before the rename to the notification of
// the agent's replace; repair from the notification of the outside change to that of
// the agent's. Beside them, from the same run: an inotify watch (fs.watch) seeing the
// rename, `ip route replace` as a whole process until its notification, and one
// in-process netlink replace until its notification.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { FakeOvnkube } from '../test/helpers/agent.js';
import { seedNode } from '../test/helpers/netns.js';

const RUNS = Number(process.env.RUNS ?? 100);
// PODS: veth pairs added to the node, both ends up (each with its IPv6 link-local address), as the
// host ends of a node's pods: every pass must not grow with them.
const PODS = Number(process.env.PODS ?? 0);
// AGENT_ROOT: another build of the agent to time (a directory holding its dist/, native/build
// and node_modules), e.g. a copy of main for the "before" figures; this bench's own code runs either way.
const CLI = process.env.AGENT_ROOT
  ? path.join(process.env.AGENT_ROOT, 'dist', 'src', 'cli', 'main.js')
  : fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const LOCAL_GW = '10.244.1.1';
const SHARED_GW = '172.18.0.1';

export const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] ?? NaN;
export const summary = (xs: number[]) => ({
  runs: xs.length,
  p50: +pct(xs, 50).toFixed(2),
  p99: +pct(xs, 99).toFixed(2),
  max: +Math.max(...xs).toFixed(2),
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Route notifications of the namespace, as (prefix, gateway) with the time they were read. */
async function routeWatcher() {
  const { nativeTransport } = await import('../src/dataplane/channel.js');
  const { parseDatagram, decodeRoute, RTM_NEWROUTE, RTNLGRP_IPV4_ROUTE } = await import('../src/dataplane/codec.js');
  const { addressFromBytes } = await import('../src/net/cidr.js');
  // Every notification is kept: the agent's answer may come in the same read as the change it answers.
  const seen = new Map<string, number[]>();
  let waiter: { key: string; after: number; resolve: (t: number) => void } | undefined;
  const socket = nativeTransport.open({ groups: [RTNLGRP_IPV4_ROUTE], rcvbuf: 8 << 20 }, () => {
    for (let d = socket.recv(); d !== null; d = socket.recv()) {
      const t = performance.now();
      for (const msg of parseDatagram(d)) {
        if (msg.type !== RTM_NEWROUTE) continue;
        const r = decodeRoute(msg.data);
        if (!r.dst || !r.gateway) continue;
        const key = `${addressFromBytes(r.dst).text}/${r.dstLen} via ${addressFromBytes(r.gateway).text}`;
        seen.set(key, [...(seen.get(key) ?? []), t]);
        if (waiter && waiter.key === key && t >= waiter.after) {
          const w = waiter;
          waiter = undefined;
          w.resolve(t);
        }
      }
    }
  });
  return {
    /** Resolves with the time of the first notification of prefix via gateway read at or after `after`. */
    next(prefix: string, gateway: string, what: string, after = performance.now()): Promise<number> {
      const key = `${prefix} via ${gateway}`;
      const already = (seen.get(key) ?? []).find((t) => t >= after);
      if (already !== undefined) return Promise.resolve(already);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no notification of ${key} in 10 s (${what})`)), 10_000);
        waiter = { key, after, resolve: (t) => (clearTimeout(timer), resolve(t)) };
      });
    },
    close: () => socket.close(),
  };
}

/** Inside the namespace: the measurements. argv: --inside PHASE VOLUME */
async function inside(phase: string, volume: string): Promise<void> {
  const { KernelDataplane } = await import('../src/dataplane/kernel.js');
  const routes = await routeWatcher();
  const out: Record<string, unknown> = {};
  if (phase === 'reaction') {
    let seen: () => void = () => undefined;
    const inotify = watch(volume, () => seen());
    const reaction: number[] = [];
    const notified: number[] = [];
    const swap = (i: number, mode: string) => {
      const dir = path.join(volume, `..bench_${i}_${mode}`);
      mkdirSync(dir);
      writeFileSync(path.join(dir, 'mode'), mode);
      symlinkSync(path.basename(dir), path.join(volume, '..data_tmp'));
      renameSync(path.join(volume, '..data_tmp'), path.join(volume, '..data'));
    };
    const socket = path.join(volume, '..', 'run', 'agent.sock');
    /** Until the agent's status says it has read this desired mode. */
    const desired = async (mode: string) => {
      for (let t = 0; t < 200; t++) {
        const r = spawnSync('curl', ['-s', '-m', '2', '--unix-socket', socket, 'http://localhost/status'], {
          encoding: 'utf8',
        });
        if (new RegExp(`"desiredMode":\\s*"${mode}"`).test(r.stdout)) return;
        await sleep(10);
      }
      throw new Error(`the agent never read desired mode ${mode}`);
    };
    for (let i = 0; i < RUNS; i++) {
      // Back to shared: the agent never writes a route towards shared mode, ovnkube-node
      // does (here, the bench), once the agent has read the mode (else it would repair
      // the change); then the timed swap to local.
      swap(i, 'shared');
      await desired('shared');
      const r = spawnSync('ip', ['route', 'replace', '10.96.0.0/16', 'via', SHARED_GW, 'dev', 'br-ex', 'mtu', '1400']);
      if (r.status !== 0) throw new Error(`ip route replace: ${r.stderr}`);
      await sleep(30 + (i % 7) * 10);
      const kernel = routes.next('10.96.0.0/16', LOCAL_GW, `swap ${i} to local`);
      const fsEvent = new Promise<number>((r) => (seen = () => r(performance.now())));
      const t0 = performance.now();
      swap(i, 'local');
      notified.push((await fsEvent) - t0);
      reaction.push((await kernel) - t0);
    }
    inotify.close();
    out.reaction = summary(reaction);
    out.inotifySeesRename = summary(notified);
  } else {
    const dp = new KernelDataplane();
    const links = await dp.links(['br-ex', 'ovn-k8s-mp0']);
    const brEx = links.find((l) => l.name === 'br-ex')!.index;
    const shared = { dev: 'br-ex', oif: brEx, gateway: SHARED_GW, mtu: 1400 };
    const outside = (prefix: string) =>
      dp.replaceRoute({
        key: { prefix, family: 4, table: 254, priority: 0 },
        protocol: 3,
        scope: 0,
        type: 1,
        to: shared,
      });
    const repair: number[] = [];
    const ipReplace: number[] = [];
    const netlinkReplace: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const prefix = `10.97.${i}.0/24`;
      const bad = routes.next(prefix, SHARED_GW, `outside change ${i}`);
      const t0 = performance.now();
      await outside(prefix);
      const tBad = await bad;
      netlinkReplace.push(tBad - t0);
      const good = routes.next(prefix, LOCAL_GW, `repair ${i}`, tBad);
      repair.push((await good) - tBad);
      await sleep(30);
    }
    // The comparison: the same change made by `ip route replace`, a whole process, on a prefix no agent watches.
    spawnSync('ip', ['route', 'add', '10.98.0.0/24', 'via', LOCAL_GW, 'dev', 'ovn-k8s-mp0']);
    for (let i = 0; i < RUNS; i++) {
      const gw = i % 2 === 0 ? SHARED_GW : LOCAL_GW;
      const seen = routes.next('10.98.0.0/24', gw, `ip route replace ${i}`);
      const t0 = performance.now();
      const r = spawnSync('ip', [
        'route',
        'replace',
        '10.98.0.0/24',
        'via',
        gw,
        'dev',
        gw === SHARED_GW ? 'br-ex' : 'ovn-k8s-mp0',
      ]);
      if (r.status !== 0) throw new Error(`ip route replace: ${r.stderr}`);
      ipReplace.push((await seen) - t0);
    }
    dp.close();
    out.repair = summary(repair);
    out.outsideReplaceInProcess = summary(netlinkReplace);
    out.ipRouteReplaceWholeProcess = summary(ipReplace);
  }
  routes.close();
  process.stdout.write(JSON.stringify(out));
}

function agent(ns: string, args: string[]): { child: ChildProcess; output: () => string } {
  let output = '';
  // AGENT_NODE_OPTIONS: e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile the agent.
  const nodeArgs = (process.env.AGENT_NODE_OPTIONS ?? '').split(' ').filter(Boolean);
  const child = spawn(
    'ip',
    ['netns', 'exec', ns, process.execPath, ...nodeArgs, CLI, 'run', '--log-level', 'info', ...args],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
  child.stderr.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-20_000)));
  return { child, output: () => output };
}

async function waitFor(what: string, pred: () => boolean, out: () => string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (pred()) return;
    await sleep(50);
  }
  throw new Error(`never saw ${what}:\n${out().slice(-3000)}`);
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

function measure(ns: string, phase: string, volume: string): Record<string, unknown> {
  const r = spawnSync('ip', ['netns', 'exec', ns, process.execPath, SELF, '--inside', phase, volume], {
    encoding: 'utf8',
    maxBuffer: 1 << 24,
  });
  if (r.status !== 0) throw new Error(`${phase} failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Record<string, unknown>;
}

async function main(): Promise<void> {
  if (process.argv[2] === '--inside') return inside(process.argv[3]!, process.argv[4]!);
  const compare = process.env.COMPARE_FLAGS ?? '';
  if (compare.trim() !== '') {
    const runs: unknown[] = [];
    for (const flags of ['', compare]) {
      const r = spawnSync(process.execPath, [SELF], {
        env: { ...process.env, COMPARE_FLAGS: '', AGENT_NODE_OPTIONS: flags },
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'inherit'],
        maxBuffer: 1 << 24,
      });
      if (r.status !== 0) throw new Error(`bench:react with agent flags '${flags}' failed`);
      runs.push({ agentNodeFlags: flags || 'none', ...(JSON.parse(r.stdout) as object) });
    }
    process.stdout.write(JSON.stringify(runs, null, 2) + '\n');
    return;
  }
  const ns = seedNode({ gw0: true });
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-bench-'));
  const ovnkube = new FakeOvnkube(ns, dir);
  const result: Record<string, unknown> = {};
  let a: ReturnType<typeof agent> | undefined;
  try {
    // Repair: a converged local node with RUNS extra service CIDRs already in local shape.
    ns.batch(Array.from({ length: RUNS }, (_, i) => `route add 10.97.${i}.0/24 via ${LOCAL_GW} dev ovn-k8s-mp0`));
    ns.batch(
      Array.from({ length: PODS }, (_, i) => [
        `link add pod${i} type veth peer name veth${i}`,
        `link set pod${i} up`,
        `link set veth${i} up`,
      ]).flat(),
    );
    writeFileSync(path.join(dir, 'mode'), 'local\n');
    ovnkube.start('local', { respawn: true });
    const cidrs = ['10.96.0.0/16', ...Array.from({ length: RUNS }, (_, i) => `10.97.${i}.0/24`)].join(',');
    const common = [
      '--socket',
      path.join(dir, 'run', 'agent.sock'),
      '--state-dir',
      path.join(dir, 'state'),
      '--mtu',
      '1400',
      '--settle',
      '0',
      // The demo node is no RHCOS host: the operator states its layout.
      '--layout',
      'legacy',
    ];
    const first = agent(ns.name, [
      ...common,
      '--mode-file',
      path.join(dir, 'mode'),
      '--service-cidr',
      cidrs,
      '--restart',
      'signal',
    ]);
    a = first;
    await waitFor('Converged', () => /"msg":"phase Converged"/.test(first.output()), first.output);
    result.repairCidrs = RUNS;
    result.podVethPairs = PODS;
    try {
      Object.assign(result, measure(ns.name, 'repair', dir));
    } catch (err) {
      const sock = path.join(dir, 'run', 'agent.sock');
      const st = spawnSync('curl', ['-s', '-m', '5', '--unix-socket', sock, 'http://localhost/status'], {
        encoding: 'utf8',
      });
      const pid = first.child.pid!;
      const wchan = spawnSync(
        'sh',
        ['-c', `for t in /proc/${pid}/task/*; do echo $t $(cat $t/wchan) $(grep State $t/status); done`],
        { encoding: 'utf8' },
      );
      throw new Error(
        `${(err as Error).message}\nstatus: ${st.status} ${st.stdout.slice(0, 3000)}\nthreads:\n${wchan.stdout}\nthe agent's last output:\n${first.output().slice(-3000)}`,
      );
    }
    await stop(first.child);
    ovnkube.stop();

    // Reaction: a ConfigMap volume, each swap a migration.
    const volume = path.join(dir, 'volume');
    mkdirSync(path.join(volume, '..bench_start'), { recursive: true });
    writeFileSync(path.join(volume, '..bench_start', 'mode'), 'local');
    symlinkSync('..bench_start', path.join(volume, '..data'));
    symlinkSync('..data/mode', path.join(volume, 'mode'));
    ns.ip('route replace 10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400');
    const second = agent(ns.name, [
      ...common,
      '--state-dir',
      path.join(dir, 'state2'),
      '--mode-file',
      volume,
      '--service-cidr',
      '10.96.0.0/16',
      '--restart',
      'none',
      '--ovnkube-mode-check',
      'off',
    ]);
    a = second;
    await waitFor('the local route', () => ns.routes('10.96.0.0/16')[0]?.includes(LOCAL_GW) === true, second.output);
    try {
      Object.assign(result, measure(ns.name, 'reaction', volume));
    } catch (err) {
      throw new Error(`${(err as Error).message}\nthe agent's last output:\n${second.output().slice(-3000)}`);
    }
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } finally {
    if (a) await stop(a.child);
    ovnkube.stop();
    ns.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
