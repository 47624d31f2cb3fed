// Benchmark: observing the service routes on a main table of 1,000,000 routes, side by
// side with `ip route show table main exact <prefix>` (the guard rail: `plan` within 2.5x
// of it, peak RSS under 150 MB).
// Run as root: `npm run bench` (ROUTES=200000 for a smaller table).
// It builds a throwaway namespace with the seed's node, fills the main table with
// `ip -batch`, re-runs itself inside the namespace to time the agent's dataplane, and
// deletes the namespace at the end. What is timed:
//  - a new process that observes once (links, addresses, routes() of the IPv4 service
//    CIDR and 0.0.0.0/0: one dump of the main table), whole process, with its peak RSS;
//    every pass of the running agent is this same observation;
//  - `ovn-gwmode-agent plan` itself, whole process (and that of another build beside it
//    when BEFORE_ROOT names one: a directory holding its dist/, native/build and
//    node_modules), on the seed's node with a mode file saying local;
//  - beside them: `ip route show table main exact <prefix>` and the kernel's floor
//    (bench/dump-floor.c, compiled here with cc: the same dump as the agent's, read and
//    counted, nothing decoded), each a whole process.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { seedNode } from '../test/helpers/netns.js';

const PREFIXES = ['10.96.0.0/16', '0.0.0.0/0'];
const ROUTES = Number(process.env.ROUTES ?? 1_000_000);
const PROCESS_RUNS = 5;

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

/** One observation in a new process: what `ovn-gwmode-agent plan` and each pass of `run` pay. */
async function once(): Promise<void> {
  const { KernelDataplane } = await import('../src/dataplane/kernel.js');
  const { countingTransport } = await import('../test/helpers/counting-transport.js');
  const { parseCidr } = await import('../src/net/cidr.js');
  const counting = countingTransport();
  const dp = new KernelDataplane({ transport: counting.transport });
  const links = await dp.links(['br-ex', 'ovn-k8s-mp0']);
  await dp.addresses(links);
  const routes = await dp.routes(PREFIXES.map(parseCidr), links);
  dp.close();
  if (counting.routeDumps() !== 1) throw new Error(`an observation sent ${counting.routeDumps()} route dumps, not 1`);
  const found = [...routes].flatMap(([p, rs]) =>
    rs.map((r) => `${p} via ${r.nextHop.gateway} dev ${r.nextHop.dev} mtu ${r.nextHop.mtu} metric ${r.key.priority}`),
  );
  process.stdout.write(JSON.stringify({ found, rssMb: process.memoryUsage().rss / 2 ** 20 }));
}

function main(): void {
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
    const t0 = performance.now();
    const lines: string[] = [];
    for (let i = 0; i < ROUTES; i++)
      lines.push(`route add 100.${64 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32 via 172.18.0.1 dev br-ex`);
    ns.batch(lines);
    const fillS = (performance.now() - t0) / 1000;
    const count = Number(execFileSync('sh', ['-c', `ip -n ${ns.name} route show | wc -l`], { encoding: 'utf8' }));
    const self = fileURLToPath(import.meta.url);
    const observed = JSON.parse(
      execFileSync('ip', ['netns', 'exec', ns.name, process.execPath, self, '--once'], { encoding: 'utf8' }),
    ) as { found: string[] };
    const oneShot = timeCommand(ns.name, [process.execPath, self, '--once']);
    const ipExact = timeCommand(ns.name, ['ip', 'route', 'show', 'table', 'main', 'exact', PREFIXES[0] as string]);
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
    const round = (x: number, digits = 1) => Number(x.toFixed(digits));
    const result = {
      routesInMainTable: count,
      fillSeconds: round(fillS),
      found: observed.found,
      oneShotProcess: { wholeProcessMs: round(oneShot.ms), maxRssMb: round(oneShot.rssMb) },
      ipRouteShowExact: { wholeProcessMs: round(ipExact.ms), maxRssMb: round(ipExact.rssMb) },
      kernelDumpFloor: {
        wholeProcessMs: round(floor.ms),
        maxRssMb: round(floor.rssMb),
        routes: floorRoutes,
        timesIpRouteShowExact: round(floor.ms / ipExact.ms, 2),
      },
      planCommand: {
        wholeProcessMs: round(plan.ms),
        maxRssMb: round(plan.rssMb),
        timesIpRouteShowExact: round(plan.ms / ipExact.ms, 2),
      },
      ...(planBefore && {
        planCommandBefore: {
          root: process.env.BEFORE_ROOT,
          wholeProcessMs: round(planBefore.ms),
          maxRssMb: round(planBefore.rssMb),
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
