// Benchmark: observing the service routes on a main table of 1,000,000 routes, side by
// side with `ip route show table main exact <prefix>` and `ip -j route show`.
// Run as root: `npm run bench` (ROUTES=200000 for a smaller table).
// It builds a throwaway namespace with the seed's node, fills the main table with
// `ip -batch`, re-runs itself inside the namespace to time the agent's dataplane, and
// deletes the namespace at the end. What is timed:
//  - the running agent: the first pass after subscribing (it seeds the route cache
//    with one dump of the main table), then steady-state passes (links, addresses,
//    routes() of the IPv4 service CIDR and 0.0.0.0/0), counting the route dumps they send;
//  - a new process that observes once with no subscription, as `ovn-gwmode-agent plan`
//    does (one header-filtered dump), whole process, with its peak RSS;
//  - `ovn-gwmode-agent plan` itself, whole process (and that of another build beside it
//    when BEFORE_ROOT names one: a directory holding its dist/, native/build and
//    node_modules), on the seed's node with a mode file saying local;
//  - beside them: `ip route show table main exact <prefix>`, `ip -j route show`, plain
//    `ip route show` (the whole table as text, to /dev/null), and the kernel's floor
//    (bench/dump-floor.c, compiled here with cc: the same dump as the agent's, read and
//    counted, nothing decoded), each a whole process.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { seedNode } from '../src/demo/netns.js';

const PREFIXES = ['10.96.0.0/16', '0.0.0.0/0'];
const LINKS = ['br-ex', 'ovn-k8s-mp0'];
const ROUTES = Number(process.env.ROUTES ?? 1_000_000);
const PROCESS_RUNS = 5;
const PASSES = 200;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

function timeCommand(ns: string, args: string[], okStatus = [0]): { ms: number; rssMb: number } {
  const times: number[] = [];
  let rssKb = 0;
  for (let i = 0; i < PROCESS_RUNS; i++) {
    const t0 = performance.now();
    const r = spawnSync('/usr/bin/time', ['-f', '%M', 'ip', 'netns', 'exec', ns, ...args], {
      encoding: 'utf8',
      maxBuffer: 1 << 30,
    });
    times.push(performance.now() - t0);
    if (!okStatus.includes(r.status ?? -1)) throw new Error(`${args.join(' ')} failed: ${r.stderr}`);
    rssKb = Math.max(rssKb, Number(r.stderr.trim().split('\n').pop()));
  }
  return { ms: median(times), rssMb: rssKb / 1024 };
}

async function load() {
  const { KernelDataplane } = await import('../src/dataplane/kernel.js');
  const { countingTransport } = await import('../test/helpers/counting-transport.js');
  const { parseCidr } = await import('../src/net/cidr.js');
  const counting = countingTransport();
  const dp = new KernelDataplane({ transport: counting.transport });
  return { dp, prefixes: PREFIXES.map(parseCidr), dumps: counting.routeDumps };
}

/** The running agent: a seeding pass, then steady-state passes. */
async function inside(): Promise<void> {
  const { dp, prefixes, dumps } = await load();
  const subscription = dp.subscribe({ prefixes, links: LINKS }, () => undefined);
  const pass = async () => {
    const links = await dp.links();
    await dp.addresses();
    return dp.routes(prefixes, links);
  };
  let t = performance.now();
  const first = await pass();
  const seedMs = performance.now() - t;
  const seedDumps = dumps();
  const times: number[] = [];
  for (let i = 0; i < PASSES; i++) {
    t = performance.now();
    await pass();
    times.push(performance.now() - t);
  }
  const found = [...first]
    .map(([p, rs]) =>
      rs.map((r) => `${p} via ${r.nextHop.gateway} dev ${r.nextHop.dev} mtu ${r.nextHop.mtu} metric ${r.key.priority}`),
    )
    .flat();
  const result = {
    found,
    seedMs,
    seedDumps,
    passMedianMs: median(times),
    steadyDumps: dumps() - seedDumps,
    rssMb: process.memoryUsage().rss / 2 ** 20,
  };
  subscription.close();
  dp.close();
  process.stdout.write(JSON.stringify(result));
}

/** One observation in a new process, no subscription: what `ovn-gwmode-agent plan` pays. */
async function once(): Promise<void> {
  const { dp, prefixes, dumps } = await load();
  const links = await dp.links();
  await dp.addresses();
  await dp.routes(prefixes, links);
  dp.close();
  if (dumps() !== 1) throw new Error(`a one-shot observation sent ${dumps()} route dumps, not 1`);
}

function main(): void {
  if (process.argv[2] === '--inside') return void inside();
  if (process.argv[2] === '--once') return void once();
  // Compiled first: a machine without cc fails before the table is filled.
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-bench-'));
  const floorBin = path.join(dir, 'dump-floor');
  try {
    execFileSync('cc', ['-O2', '-o', floorBin, fileURLToPath(new URL('../../bench/dump-floor.c', import.meta.url))]);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const ns = seedNode();
  try {
    let t0 = performance.now();
    const lines: string[] = [];
    for (let i = 0; i < ROUTES; i++)
      lines.push(`route add 100.${64 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32 via 172.18.0.1 dev br-ex`);
    ns.batch(lines);
    const fillS = (performance.now() - t0) / 1000;
    const count = Number(execFileSync('sh', ['-c', `ip -n ${ns.name} route show | wc -l`], { encoding: 'utf8' }));
    const self = fileURLToPath(import.meta.url);
    const agentRuns: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 3; i++) {
      t0 = performance.now();
      const out = execFileSync('ip', ['netns', 'exec', ns.name, process.execPath, self, '--inside'], {
        encoding: 'utf8',
        maxBuffer: 1 << 26,
      });
      agentRuns.push(JSON.parse(out) as Record<string, unknown>);
    }
    const oneShot = timeCommand(ns.name, [process.execPath, self, '--once']);
    const ipExact = timeCommand(ns.name, ['ip', 'route', 'show', 'table', 'main', 'exact', PREFIXES[0] as string]);
    const ipJson = timeCommand(ns.name, ['ip', '-j', 'route', 'show']);
    const ipShow = timeCommand(ns.name, ['sh', '-c', 'ip route show > /dev/null']);
    const floorRoutes = Number(execFileSync('ip', ['netns', 'exec', ns.name, floorBin], { encoding: 'utf8' }));
    if (floorRoutes < ROUTES)
      throw new Error(`the floor's dump read ${floorRoutes} routes, fewer than the ${ROUTES} added`);
    const floor = timeCommand(ns.name, [floorBin]);
    writeFileSync(path.join(dir, 'mode'), 'local\n');
    // plan exits 1 when it would not act (here: no ovnkube-node), after the same observation.
    const planOf = (root: string) =>
      timeCommand(
        ns.name,
        [
          process.execPath,
          path.join(root, 'dist', 'src', 'cli', 'main.js'),
          'plan',
          '--mode-file',
          path.join(dir, 'mode'),
          '--service-cidr',
          PREFIXES[0] as string,
          '--mtu',
          '1400',
        ],
        [0, 1],
      );
    const plan = planOf(fileURLToPath(new URL('../..', import.meta.url)));
    const planBefore = process.env.BEFORE_ROOT ? planOf(process.env.BEFORE_ROOT) : undefined;
    const pick = (k: string) => median(agentRuns.map((r) => Number(r[k])));
    const round = (x: number, digits = 1) => Number(x.toFixed(digits));
    const result = {
      routesInMainTable: count,
      fillSeconds: round(fillS),
      found: agentRuns[0]?.found,
      runningAgent: {
        steadyPassMedianMs: round(pick('passMedianMs'), 3),
        routeDumpsIn200SteadyPasses: Math.max(...agentRuns.map((r) => Number(r.steadyDumps))),
        seedingPassMs: round(pick('seedMs')),
        seedingRouteDumps: pick('seedDumps'),
        rssMb: round(Math.max(...agentRuns.map((r) => Number(r.rssMb)))),
      },
      oneShotProcess: { wholeProcessMs: round(oneShot.ms), maxRssMb: round(oneShot.rssMb) },
      ipRouteShowExact: { wholeProcessMs: round(ipExact.ms), maxRssMb: round(ipExact.rssMb) },
      ipJsonRouteShow: { wholeProcessMs: round(ipJson.ms), maxRssMb: round(ipJson.rssMb) },
      ipRouteShowToDevNull: { wholeProcessMs: round(ipShow.ms), maxRssMb: round(ipShow.rssMb) },
      kernelDumpFloor: {
        wholeProcessMs: round(floor.ms),
        maxRssMb: round(floor.rssMb),
        routes: floorRoutes,
        timesIpRouteShow: round(floor.ms / ipShow.ms, 2),
      },
      planCommand: {
        wholeProcessMs: round(plan.ms),
        maxRssMb: round(plan.rssMb),
        timesIpRouteShow: round(plan.ms / ipShow.ms, 2),
        timesIpRouteShowExact: round(plan.ms / ipExact.ms, 2),
      },
      ...(planBefore && {
        planCommandBefore: {
          root: process.env.BEFORE_ROOT,
          wholeProcessMs: round(planBefore.ms),
          maxRssMb: round(planBefore.rssMb),
          timesIpRouteShow: round(planBefore.ms / ipShow.ms, 2),
          timesIpRouteShowExact: round(planBefore.ms / ipExact.ms, 2),
        },
      }),
    };
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } finally {
    ns.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

main();
