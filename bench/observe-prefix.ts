// Benchmark (issue #2): observing one service prefix on a main table of 1,000,000
// routes, side by side with `ip route show <prefix>` and `ip -j route show`.
// Run as root: `npm run bench` (ROUTES=200000 for a smaller table).
// It builds a throwaway namespace, fills it with `ip -batch`, re-runs itself inside
// the namespace to time the agent's dataplane, and deletes the namespace at the end.
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { seedNode } from '../src/demo/netns.js';

const PREFIX = '10.96.0.0/16';
const ROUTES = Number(process.env.ROUTES ?? 1_000_000);
const RUNS = 10;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? NaN;
}

function timeCommand(ns: string, args: string[]): { ms: number; rssKb: number } {
  const times: number[] = [];
  let rss = 0;
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    const r = spawnSync('/usr/bin/time', ['-f', '%M', 'ip', 'netns', 'exec', ns, ...args], {
      encoding: 'utf8',
      maxBuffer: 1 << 30,
    });
    times.push(performance.now() - t0);
    rss = Math.max(rss, Number(r.stderr.trim().split('\n').pop()));
  }
  return { ms: median(times), rssKb: rss };
}

async function inside(): Promise<void> {
  const t0 = performance.now();
  const { KernelDataplane } = await import('../src/dataplane/kernel.js');
  const { parseCidr } = await import('../src/net/cidr.js');
  const dp = new KernelDataplane();
  const routesFor = async (p: ReturnType<typeof parseCidr>) => (await dp.routes([p], await dp.links())).get(p.text) ?? [];
  const prefix = parseCidr(PREFIX);
  const first = await routesFor(prefix);
  const coldMs = performance.now() - t0;
  const warm: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    await routesFor(prefix);
    warm.push(performance.now() - t);
  }
  const absentT = performance.now();
  const absent = await routesFor(parseCidr('10.97.0.0/16'));
  const fallbackMs = performance.now() - absentT;
  const rssMb = process.memoryUsage().rss / 2 ** 20;
  dp.close();
  process.stdout.write(
    JSON.stringify({ found: first.map((r) => `${r.key.prefix} via ${r.nextHop.gateway} dev ${r.nextHop.dev} mtu ${r.nextHop.mtu}`), absent: absent.length, coldMs, warmMedianMs: median(warm), fallbackMs, rssMb }),
  );
}

/** One observation in a new process: what `ovn-gwmode-agent plan` pays. */
async function once(): Promise<void> {
  const { KernelDataplane } = await import('../src/dataplane/kernel.js');
  const { parseCidr } = await import('../src/net/cidr.js');
  const dp = new KernelDataplane();
  await dp.routes([parseCidr(PREFIX)], await dp.links());
  dp.close();
}

function main(): void {
  if (process.argv[2] === '--inside') {
    void inside();
    return;
  }
  if (process.argv[2] === '--once') {
    void once();
    return;
  }
  const ns = seedNode();
  try {
    const t0 = performance.now();
    const lines: string[] = [];
    for (let i = 0; i < ROUTES; i++) {
      lines.push(`route add 100.${64 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}/32 via 172.18.0.1 dev br-ex`);
    }
    ns.batch(lines);
    const fillS = (performance.now() - t0) / 1000;
    const count = Number(execFileSync('sh', ['-c', `ip -n ${ns.name} route show | wc -l`], { encoding: 'utf8' }));
    const self = fileURLToPath(import.meta.url);
    const agentRuns: Array<Record<string, unknown>> = [];
    for (let i = 0; i < 3; i++) {
      const out = execFileSync('ip', ['netns', 'exec', ns.name, process.execPath, self, '--inside'], { encoding: 'utf8' });
      agentRuns.push(JSON.parse(out) as Record<string, unknown>);
    }
    const agentOnce = timeCommand(ns.name, [process.execPath, self, '--once']);
    const ipShow = timeCommand(ns.name, ['ip', 'route', 'show', PREFIX]);
    const ipJson = timeCommand(ns.name, ['ip', '-j', 'route', 'show']);
    const fibmatch = timeCommand(ns.name, ['ip', 'route', 'get', 'fibmatch', '10.96.0.0']);
    const pick = (k: string) => median(agentRuns.map((r) => Number(r[k])));
    const result = {
      routesInMainTable: count,
      fillSeconds: Number(fillS.toFixed(1)),
      found: agentRuns[0]?.found,
      agent: {
        inProcessMedianMs: Number(pick('warmMedianMs').toFixed(3)),
        firstCallIncludingLoadMs: Number(pick('coldMs').toFixed(1)),
        wholeProcessMs: Number(agentOnce.ms.toFixed(1)),
        wholeProcessMaxRssMb: Number((agentOnce.rssKb / 1024).toFixed(1)),
        absentPrefixFallbackDumpMs: Number(pick('fallbackMs').toFixed(1)),
        maxRssMb: Number(Math.max(...agentRuns.map((r) => Number(r.rssMb))).toFixed(1)),
      },
      ipRouteShowPrefix: { wholeProcessMs: Number(ipShow.ms.toFixed(1)), maxRssMb: Number((ipShow.rssKb / 1024).toFixed(1)) },
      ipJsonRouteShow: { wholeProcessMs: Number(ipJson.ms.toFixed(1)), maxRssMb: Number((ipJson.rssKb / 1024).toFixed(1)) },
      ipRouteGetFibmatch: { wholeProcessMs: Number(fibmatch.ms.toFixed(1)) },
    };
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    const speedupInProcess = ipShow.ms / result.agent.inProcessMedianMs;
    const speedupWhole = ipShow.ms / result.agent.wholeProcessMs;
    process.stdout.write(
      `speed-up over "ip route show ${PREFIX}": ${speedupInProcess.toFixed(0)}x in the running agent, ` +
        `${speedupWhole.toFixed(1)}x for a whole new process; agent RSS ${result.agent.maxRssMb} MB\n`,
    );
  } finally {
    ns.destroy();
  }
}

main();
