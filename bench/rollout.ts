// Service traffic after the operator's rollout, on the real OVN bed
// (test/helpers/ovn.ts): the agent already waits (desired local, ovnkube-node shared, the
// stale br-ex route), then the rollout stops ovnkube-node and, after a gap (kubelet making the
// new pod), starts it in local mode: its create-exclusive add hits EEXIST (the bug) and
// service traffic stays broken until the agent replaces the route. Measured per rollout:
// from the new ovnkube-node's start (just before its spawn) to the start of the first good
// probe (a new TCP connection to the ClusterIP every 20 ms, 0.5 s timeout), and the part of it
// after ovnkube-node put mp0's address back (its start-up flushes it first, as 4.8/4.9 does:
// test/helpers/ovn-standin.ts), before which no mp0 route can be put or kept. Beside it, the
// documented manual workaround on the same bed: `ip route del`, and ovnkube-node, restarted,
// re-adds the route via mp0 2 s later.
//
// Root. ROLLOUTS (default 20), WORKAROUNDS (default 3), AGENT_ROOT (another checkout, built,
// for a before/after), AGENT_LOG (a file for the agent's log), NO_PIDFD=1 (the agent under
// test/fixtures/no-pidfd.c: pidfd_open fails ENOSYS, as on a kernel before 5.3). A series
// during which ovs-vswitchd restarted is void and said so.
import { performance } from 'node:perf_hooks';
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AgentProcess, FakeOvnkube, noPidfd, Scratch, status } from '../test/helpers/agent.js';
import { BED, OvnBed, ovnSkipReason, standinWindows, type ServiceProbe } from '../test/helpers/ovn.js';
import { serviceRouteOf, startBody } from '../test/helpers/ovn-standin.js';

const ROOT = process.env.AGENT_ROOT ?? fileURLToPath(new URL('../..', import.meta.url));
const ROLLOUTS = Number(process.env.ROLLOUTS ?? 20);
const WORKAROUNDS = Number(process.env.WORKAROUNDS ?? 3);
const now = () => performance.timeOrigin + performance.now();
const NO_PIDFD = process.env.NO_PIDFD === '1';
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(pred: () => boolean, what: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`never: ${what}`);
    await pause(10);
  }
}

async function firstGood(probe: ServiceProbe, after: number): Promise<number> {
  const hit = await Promise.race([probe.until((r) => r.ok, after), pause(10_000).then(() => null)]);
  if (!hit) throw new Error('no good probe within 10 s');
  return hit.start - after;
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!;
const round = (x: number) => Math.round(x);

async function main(): Promise<void> {
  if (ovnSkipReason) throw new Error(`cannot run: ${ovnSkipReason}`);
  const bed = OvnBed.up();
  const scratch = new Scratch();
  const ovnkube = new FakeOvnkube(bed.node, scratch.dir);
  const marks = path.join(scratch.dir, 'marks');
  let agent: AgentProcess | undefined;
  const outages: number[] = [];
  /** From the spawn to the end of the stand-in's own start-up (flush, re-add, its EEXIST). */
  const startups: number[] = [];
  /** From mp0's address back (the stand-in's start-up) to the first good probe. */
  const afterAddress: number[] = [];
  /** From the spawn to the agent's log line of its replace (ms resolution). */
  const replaces: number[] = [];
  const workaround: Array<{ outage: number; failed: number }> = [];
  try {
    const restarts0 = bed.vswitchdRestarts();
    ovnkube.start('shared', { respawn: true, body: startBody('4.8', 'shared', marks) });
    scratch.writeMode('local');
    const args = [
      '--service-cidr',
      BED.svc,
      '--mtu',
      '1400',
      '--layout',
      'legacy',
      '--restart-min-interval',
      '1s',
      '--restart-max-per-hour',
      '100000',
    ];
    agent = new AgentProcess(
      bed.node,
      scratch,
      args,
      {},
      path.join(ROOT, 'dist', 'src', 'cli', 'main.js'),
      NO_PIDFD ? noPidfd() : [],
    );
    const waiting = () => {
      const s = status(scratch.socket);
      return s?.desiredMode === 'local' && s.ovnkubeMode === 'shared' && s.routes[0]?.observed?.dev === 'br-ex';
    };
    await until(waiting, 'the agent waiting on the shared ovnkube-node');
    const probe = bed.probe();
    for (let i = 0; i < ROLLOUTS; i++) {
      // The rollout's moment, uniform over the agent's periodic look; then the gap kubelet takes.
      await pause(Math.random() * 1000);
      ovnkube.stop();
      await pause(200 + Math.random() * 1300);
      const started = now();
      if (process.env.AGENT_LOG) console.error(`rollout ${i} start ${new Date(started).toISOString()}`);
      ovnkube.start('local', { respawn: true, body: startBody('4.8', 'local', marks) });
      outages.push(await firstGood(probe, started));
      await until(() => standinWindows(marks).some(([a]) => a >= started - 1), "the stand-in's start-up written");
      const [, end, address] = standinWindows(marks).find(([a]) => a >= started - 1)!;
      startups.push(end - started);
      afterAddress.push(started + outages.at(-1)! - address!);
      const replaced = agent
        .logs()
        .map((l) => ({ msg: String(l.msg), at: Date.parse(String(l.time)) }))
        .find((l) => l.msg.startsWith('replaced route') && l.at >= started - 1);
      if (replaced) replaces.push(replaced.at - started);
      await until(() => status(scratch.socket)?.phase === 'Converged', 'Converged after the rollout');
      // Back to the waiting state: a shared ovnkube-node flushes the mp0 route and adds the br-ex one.
      ovnkube.start('shared', { respawn: true, body: startBody('4.8', 'shared', marks) });
      await until(waiting, 'the agent waiting again');
    }
    await agent.stop();
    if (process.env.AGENT_LOG) writeFileSync(process.env.AGENT_LOG, agent.output);
    agent = undefined;
    // The manual workaround, on a node the agent does not run on.
    for (let i = 0; i < WORKAROUNDS; i++) {
      ovnkube.start('local', { respawn: true, body: startBody('4.8', 'local', marks) });
      bed.setServiceRoute(serviceRouteOf('4.8', 'shared'));
      await pause(300);
      const del = now();
      bed.node.ip(`route del ${BED.svc}`);
      await pause(2000);
      ovnkube.start('local', { respawn: true, body: startBody('4.8', 'local', marks) });
      const outage = await firstGood(probe, del);
      workaround.push({
        outage,
        failed: probe.results.filter((r) => !r.ok && r.start >= del && r.start < del + outage).length,
      });
    }
    await probe.stop();
    const crashes = bed.vswitchdRestarts() - restarts0;
    const out = {
      agent: ROOT,
      pidfd_open: NO_PIDFD ? 'ENOSYS (seccomp)' : 'works',
      machine: `${os.cpus().length} cores ${os.cpus()[0]?.model ?? ''}, Linux ${os.release()}, Node ${process.version}, load ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
      rollouts: outages.length,
      outage_ms: {
        p50: round(pct(outages, 50)),
        p99: round(pct(outages, 99)),
        min: round(Math.min(...outages)),
        max: round(Math.max(...outages)),
      },
      all_ms: outages.map(round),
      replace_ms: { p50: round(pct(replaces, 50)), p99: round(pct(replaces, 99)), n: replaces.length },
      standin_startup_ms: { p50: round(pct(startups, 50)), p99: round(pct(startups, 99)) },
      after_address_ms: {
        p50: round(pct(afterAddress, 50)),
        p99: round(pct(afterAddress, 99)),
        max: round(Math.max(...afterAddress)),
      },
      workaround: workaround.map((w) => ({ outage_ms: round(w.outage), failed_probes: w.failed })),
      ...(crashes > 0 ? { INVALID: `ovs-vswitchd restarted ${crashes} time(s) during the run: rerun it` } : {}),
    };
    console.log(JSON.stringify(out, null, 2));
  } finally {
    await agent?.stop();
    ovnkube.stop();
    bed.down();
    scratch.remove();
  }
}

await main();
