// The soak run, shared by its short form in `npm test` and bench/soak.ts: the real
// agent on the seed's node, `flips` mode flips (local <-> shared) written the way a
// ConfigMap volume is (kubelet's atomic writer: a new data directory, `..data` swapped
// to it by one rename; test/helpers/kubelet.ts), and outside route flaps (`ip route
// replace` of the service route to either shape, through one `ip -batch` process), the
// socket polled throughout (/healthz and /status every 20 ms, /metrics every second for
// the active handles; the event-loop delay is reported by the agent's wrapper,
// test/fixtures/agent-measured.ts), RSS and open fds sampled. Handles are
// prom-client's nodejs_active_handles (libuv handles the process holds: sockets, pipes,
// servers, child processes, by type) and nodejs_active_resources (the same and what keeps
// the loop alive beside them: timers, pending file-system requests), summed over their
// types; /proc shows fds but neither timers nor which fd is what. Each is as the agent
// reported it at its last scrape (the scrape's own connection included, one at a time).
// A volume's swap is taken at once (src/mode/settled.ts), so each pass takes in the mode of the moment: a plain file
// rewritten every millisecond would never be left alone for the 200 ms a plain file
// needs, and the agent would take in no flip at all. Accelerated: --restart none and
// --ovnkube-mode-check off, so that every pass that sees a new mode migrates (no
// ovnkube-node restart to wait for), and a 1 s resync. The headline figure is the
// number of mode changes the agent took in (its desired-mode changes counter), not
// the flips written: the owner loop coalesces flips that land between two passes.
// A flap may suspend repairs (docs/contract.md, "It never fights": set back more than twice within 10 minutes);
// the next change of the desired mode lifts that. At the end: a last mode and a new
// ovnkube-node (the restart the last migration owes), and the agent must converge.
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { AgentProcess, FakeOvnkube, Scratch, waitForStatus } from './agent.js';
import { get } from './hostile-http.js';
import { ConfigMapVolume } from './kubelet.js';
import { seedNode } from './netns.js';
import { SHIPPED_NODE_FLAGS } from './node-flags.js';
import { int, prng } from './prng.js';
import { fileURLToPath } from 'node:url';

/** The agent with its event-loop delay reported from inside (the product exports none). */
const MEASURED = fileURLToPath(new URL('../fixtures/agent-measured.js', import.meta.url));

export const SOAK_LOCAL = '10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0';
const SHAPES = ['10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400', SOAK_LOCAL];

export interface SoakOptions {
  seed: number;
  flips: number;
  /** One flap per this many flips, on average. */
  flapEvery: number;
  /** Flips written per timer turn (a turn is at least 1 ms). */
  flipsPerTurn: number;
  sampleEveryMs: number;
  log?: (line: string) => void;
}

export interface Sample {
  flips: number;
  rssKb: number;
  fds: number;
  /** The agent's event-loop delay p99 over the last second, in ms (test/fixtures/agent-measured.ts); null before one. */
  lagP99Ms: number | null;
  /** The same measure in an idle node process beside it: what the machine's load alone costs. */
  idleP99Ms: number | null;
  /** Sum of nodejs_active_handles over its types, at the last scrape; null before one. */
  handles: number | null;
  /** Sum of nodejs_active_resources (timers included), at the last scrape. */
  resources: number | null;
  /** nodejs_active_resources by type, at the last scrape. */
  resourceTypes: Record<string, number>;
}

export interface SoakResult {
  flips: number;
  flaps: number;
  seconds: number;
  requests: number;
  failedRequests: number;
  /** Changes of the desired mode the agent took in, and route replaces it carried out (migrations and repairs). */
  modeChanges: number;
  replaces: number;
  suspensionsSeen: number;
  samples: Sample[];
  /** Every per-second event-loop delay p99 the agent reported during the flips, in ms. */
  lagSeriesMs: number[];
  /** At rest before the first flip (the first migration done, nothing else under way): the handles' baseline. */
  start: Sample;
  warm: Sample;
  end: Sample;
  /** What the open fds are at the end (their link targets). */
  fdsAtEnd: string[];
  alive: boolean;
  /** Why it did not converge at the end (the last status), else the agent's last output (errors only). */
  outputTail: string;
  fatalLogged: boolean;
  convergedRoute: string[];
  finalPhase: string | undefined;
}

/** An idle node process that reports its own event-loop delay p99 each second, as the soak measures the agent's: the 10 ms timer's delay. */
const IDLE = `
const { monitorEventLoopDelay } = require('node:perf_hooks');
const h = monitorEventLoopDelay({ resolution: 10 });
h.enable();
setInterval(() => { process.stdout.write(String(Math.max(0, h.percentile(99) / 1e6 - 10)) + '\\n'); h.reset(); }, 1000);
`;

const rssKb = (pid: number) => Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
const fds = (pid: number) => readdirSync(`/proc/${pid}/fd`).length;
/** What each open fd is (socket:[inode], anon_inode:inotify, a path...), for a failure message. */
const fdTargets = (pid: number): string[] =>
  readdirSync(`/proc/${pid}/fd`).map((fd) => {
    try {
      return readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      return `${fd}: gone`;
    }
  });
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A gauge's series by their `type` label, from a scrape. */
const byType = (text: string, name: string): Record<string, number> =>
  Object.fromEntries(
    [...text.matchAll(new RegExp(`^${name}\\{type="([^"]*)"\\} (\\S+)$`, 'gm'))].map((m) => [m[1]!, Number(m[2])]),
  );
const sum = (o: Record<string, number>): number | null =>
  Object.keys(o).length === 0 ? null : Object.values(o).reduce((a, b) => a + b, 0);
const metric = (text: string, name: string) => {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : null;
};

export async function soak(o: SoakOptions): Promise<SoakResult> {
  const log = o.log ?? (() => undefined);
  const rng = prng(o.seed);
  const ns = seedNode({ gw0: true });
  const scratch = new Scratch();
  const ovnkube = new FakeOvnkube(ns, scratch.dir);
  let agent: AgentProcess | undefined;
  const ip = spawn('ip', ['-n', ns.name, '-force', '-batch', '-'], { stdio: ['pipe', 'ignore', 'ignore'] });
  const idle = spawn(process.execPath, ['-e', IDLE], { stdio: ['ignore', 'pipe', 'ignore'] });
  let idleP99Ms: number | null = null;
  idle.stdout.on('data', (d: Buffer) => (idleP99Ms = Number(d.toString().trim().split('\n').pop())));
  let polling = true;
  let poller: Promise<void> = Promise.resolve();
  try {
    // The mode as a ConfigMap volume (the agent's --mode-file is the volume's directory).
    const volume = new ConfigMapVolume(path.join(scratch.dir, 'volume'));
    const writeMode = (mode: string) => volume.update({ mode });
    writeMode('local');
    ovnkube.start('local');
    const args = [
      '--mode-file',
      volume.dir,
      '--service-cidr',
      '10.96.0.0/16',
      '--mtu',
      '1400',
      '--log-level',
      'error',
      '--restart',
      'none',
      '--ovnkube-mode-check',
      'off',
      '--resync-interval',
      '1',
      '--restart-min-interval',
      '0',
      '--restart-max-per-hour',
      '1000000',
    ];
    // Node's flags as the launchers give them (the systemd unit, the image, the .deb's unit;
    // test/packaging/launch-flags.test.ts); SOAK_NODE_OPTIONS='' runs without.
    agent = new AgentProcess(
      ns,
      scratch,
      args,
      { NODE_OPTIONS: process.env.SOAK_NODE_OPTIONS ?? SHIPPED_NODE_FLAGS.join(' ') },
      MEASURED,
    );
    const a = agent;
    await waitForStatus(a, (s) => s.routes[0]?.inSync === true, 'the first migration');
    const pid = a.child.pid!;

    let requests = 0;
    let failedRequests = 0;
    let lagP99Ms: number | null = null;
    let handleTypes: Record<string, number> = {};
    let resourceTypes: Record<string, number> = {};
    let suspensionsSeen = 0;

    const samples: Sample[] = [];
    const sample = (flips: number) => {
      const lag = /.*"soakEventLoopP99Ms":([0-9.e+-]+)/s.exec(a.output);
      lagP99Ms = lag ? Number(lag[1]) : null;
      const s = {
        flips,
        rssKb: rssKb(pid),
        fds: fds(pid),
        lagP99Ms,
        idleP99Ms,
        handles: sum(handleTypes),
        resources: sum(resourceTypes),
        resourceTypes,
      };
      samples.push(s);
      return s;
    };
    // The baseline, at rest: the end is at rest too, so the two compare like with like
    // (in the run, watchers and timers come and go with each swap and pass).
    await pause(500);
    const atRest = await get(scratch.socket, '/metrics');
    handleTypes = byType(atRest.body, 'nodejs_active_handles');
    resourceTypes = byType(atRest.body, 'nodejs_active_resources');
    // The scrape's own connection is let go before fds are counted.
    await pause(200);
    const start = sample(0);
    const outputAtStart = a.output.length;
    // Polled from here on: the baseline's scrape was the only connection.
    poller = (async () => {
      for (let i = 0; polling; i++) {
        const path = i % 50 === 0 ? '/metrics' : i % 2 === 0 ? '/healthz' : '/status';
        const r = await get(scratch.socket, path).catch(() => ({ code: 0, body: '' }));
        requests++;
        if (r.code !== 200) failedRequests++;
        else if (path === '/metrics') {
          handleTypes = byType(r.body, 'nodejs_active_handles');
          resourceTypes = byType(r.body, 'nodejs_active_resources');
        } else if (path === '/status' && /"repairsSuspended": "/.test(r.body)) suspensionsSeen++;
        await pause(20);
      }
    })();
    const t0 = Date.now();
    let lastSample = t0;
    let flaps = 0;
    let mode = 'local';
    let warm: Sample | undefined;
    for (let i = 0; i < o.flips;) {
      for (let k = 0; k < o.flipsPerTurn && i < o.flips; k++, i++) {
        mode = mode === 'local' ? 'shared' : 'local';
        writeMode(mode);
        if (int(rng, o.flapEvery) === 0) {
          ip.stdin.write(`route replace ${SHAPES[int(rng, 2)]}\n`);
          flaps++;
        }
      }
      await pause(1);
      if (a.child.exitCode !== null) break;
      if (warm === undefined && i >= o.flips / 10) warm = sample(i);
      if (Date.now() - lastSample >= o.sampleEveryMs) {
        lastSample = Date.now();
        const s = sample(i);
        log(
          `${i} flips, ${flaps} flaps, ${requests} requests: RSS ${s.rssKb} kB, ${s.fds} fds, ${s.handles} handles, ${s.resources} resources ${JSON.stringify(s.resourceTypes)}, event-loop p99 ${s.lagP99Ms?.toFixed(1)} ms (an idle process beside it: ${s.idleP99Ms?.toFixed(1)} ms)`,
        );
      }
    }
    const seconds = (Date.now() - t0) / 1000;
    // The seconds that began once the flips began: the first second of the agent's life
    // (loading its modules, its first pass) may be reported after outputAtStart.
    const tEnd = Date.now();
    const lagSeriesMs = [...a.output.slice(outputAtStart).matchAll(/"soakEventLoopP99Ms":([0-9.e+-]+),"at":(\d+)/g)]
      .filter((m) => Number(m[2]) - 1000 >= t0 && Number(m[2]) <= tEnd + 1000)
      .map((m) => Number(m[1]));
    // The flaps still queued in `ip` land before the end: one after it could suspend
    // repairs again with no input left to change (docs/contract.md, "It never fights").
    ip.stdin.end();
    await new Promise((resolve) => (ip.exitCode !== null ? resolve(null) : ip.once('exit', resolve)));

    // The end: a last mode, taken in (a migration to it may start only now); then the
    // new ovnkube-node that the last migration waits for, and that lifts a suspension.
    writeMode('local');
    await waitForStatus(
      a,
      (s) =>
        s.desiredMode === 'local' &&
        s.lastError === null &&
        (s.routes[0]?.inSync === true || s.routes[0]?.repairsSuspended != null),
      'the last mode taken in',
    ).catch(() => undefined);
    ovnkube.start('local');
    let endError = '';
    const last = await waitForStatus(
      a,
      (s) => s.phase === 'Converged' && s.desiredMode === 'local',
      'Converged at the end',
    ).catch((err: Error) => {
      endError = err.message.slice(0, 3000);
      return undefined;
    });
    await pause(2000);
    // The poller stops first: the last scrape is then the only connection, as the baseline's was.
    polling = false;
    await poller;
    const metrics = await get(scratch.socket, '/metrics').catch(() => ({ code: 0, body: '' }));
    const modeChanges = metric(metrics.body, 'ovn_gwmode_desired_mode_changes_total') ?? -1;
    const replaces = [
      ...metrics.body.matchAll(
        /^ovn_gwmode_route_replaces_total\{direction="to_(?:local|shared)",result="done"\} (\d+)$/gm,
      ),
    ].reduce((n, m) => n + Number(m[1]), 0);
    // The end's handles are those of the last scrape, made after the poller stopped.
    handleTypes = byType(metrics.body, 'nodejs_active_handles');
    resourceTypes = byType(metrics.body, 'nodejs_active_resources');
    // At rest again: an fd of the end's own work (the last scrape's connection, closed by
    // the client first; a watch being swapped) may still be open a moment; a leak
    // stays. Looks for up to 5 s (25 looks) for the count to come back to the warm one.
    for (let look = 0; look < 25 && warm !== undefined && fds(pid) > warm.fds; look++) await pause(200);
    const end = sample(o.flips);
    const fdsAtEnd = fdTargets(pid);
    return {
      flips: o.flips,
      flaps,
      seconds,
      requests,
      failedRequests,
      modeChanges,
      replaces,
      suspensionsSeen,
      samples,
      lagSeriesMs,
      start,
      warm: warm ?? samples[0]!,
      end,
      fdsAtEnd,
      alive: a.child.exitCode === null,
      outputTail: endError || a.output.slice(-3000),
      fatalLogged: a.output.includes('"level":60'),
      convergedRoute: last ? ns.routes('10.96.0.0/16') : [],
      finalPhase: last?.phase,
    };
  } finally {
    polling = false;
    await poller.catch(() => undefined);
    if (ip.exitCode === null) ip.kill();
    idle.kill();
    await agent?.stop();
    ovnkube.stop();
    ns.destroy();
    scratch.remove();
  }
}
