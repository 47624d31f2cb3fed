// The chaos run, shared by its short form in `npm test` and its long form under bench/:
// the real agent on the seed's node, restarting ovnkube-node through a real containerd
// (the run plays kubelet, and the operator's rollouts), SIGKILLed at seeded random
// points of migrations local -> shared -> local ..., restarted after each kill.
//
// Each migration: the operator rolls ovnkube-node out in the new mode ("kubelet" stops
// its container and starts the next attempt in the new mode) and the mode file
// says the new mode; then the agent is killed `killsPerMigration` times (the first
// within 100 ms of the mode file's write, the others at seeded points), and finally
// left to finish. Every container that exits
// and was not stopped by the run was stopped by the agent: the restarts it requested.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { AgentProcess, Scratch, status, waitForStatus } from './agent.js';
import { Containerd, ovnkubeCommand, type Pod } from './containerd.js';
import { seedNode } from './netns.js';
import { int, pick, prng } from './prng.js';

export const CHAOS_ROUTES = {
  local: '10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0',
  shared: '10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400',
} as const;
type Mode = keyof typeof CHAOS_ROUTES;

export interface ChaosOptions {
  seed: number;
  migrations: number;
  killsPerMigration: number;
  /** A kill at the 'start' stage comes uniformly within [0, maxDelayMs) of the agent's start. */
  maxDelayMs?: number;
  log?: (line: string) => void;
}

export interface ChaosResult {
  kills: number;
  /** Where each kill found the migration: the journal's restart state, or "not journaled". */
  killedAt: Record<string, number>;
  /** Per migration, the ovnkube-node containers the agent stopped. */
  stopsPerMigration: number[];
  finalRoutes: string[];
  expectedRoute: string;
  journal: { mode: string | null; restart: string | null; tmpLeft: boolean };
  finalPhase: string | undefined;
  seconds: number;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function chaos(o: ChaosOptions): Promise<ChaosResult> {
  const log = o.log ?? (() => undefined);
  const rng = prng(o.seed);
  const maxDelay = o.maxDelayMs ?? 800;
  const started = Date.now();
  const ns = seedNode({ gw0: true });
  const scratch = new Scratch();
  let cd: Containerd | undefined;
  const pods: Pod[] = [];
  const live: { agent?: AgentProcess } = {};
  let kubeletRunning = true;
  let kubelet: Promise<void> = Promise.resolve();
  try {
    cd = await Containerd.start(ns, path.join(scratch.dir, 'containerd'));
    const c = cd;
    const pod = await c.runPod('openshift-ovn-kubernetes', 'ovnkube-node-chaos');
    pods.push(pod);
    let mode: Mode = 'shared';
    // The pod spec's mode: what kubelet starts the next attempt in. Only kubelet changes it, in a rollout.
    let spec: Mode = mode;
    let attempt = 0;
    let current = await c.startContainer(pod, 'ovnkube-node', attempt, ovnkubeCommand(spec));
    const stoppedByRun = new Set<string>();
    const stopsPerMigration: number[] = [];
    let migration = -1;
    // kubelet, the one owner of the pod's container: a container that exited is followed
    // by the next attempt, in the spec's mode; and the operator's rollout (the new spec,
    // the container replaced) is carried out between two of those steps, never while a
    // start is under way. A rollout that took `current` while kubelet was still starting
    // the container that follows an exit (the agent's restart), from the old spec, would
    // stop the one that had exited, and leave the one being started in the old mode.
    let rollout: { to: Mode; done: () => void; failed: (err: Error) => void } | undefined;
    let kubeletFailed: Error | undefined;
    const followExit = async () => {
      if ((await c.state(current)) !== 'CONTAINER_EXITED') return;
      if (!stoppedByRun.has(current) && migration >= 0)
        stopsPerMigration[migration] = (stopsPerMigration[migration] ?? 0) + 1;
      current = await c.startContainer(pod, 'ovnkube-node', ++attempt, ovnkubeCommand(spec));
    };
    kubelet = (async () => {
      while (kubeletRunning) {
        await followExit();
        const r = rollout;
        if (r) {
          spec = r.to;
          const old = current;
          stoppedByRun.add(old);
          await c.call('StopContainer', { containerId: old, timeout: '5' });
          while (current === old) {
            await followExit();
            if (current === old) await pause(20);
          }
          rollout = undefined;
          r.done();
        }
        await pause(50);
      }
    })().catch((err: unknown) => {
      kubeletFailed = new Error(`kubelet failed: ${(err as Error).message}`, { cause: err });
      rollout?.failed(kubeletFailed);
    });
    /** The operator's rollout of `to`: resolves once kubelet has replaced the container by one in `to`. */
    const rollOut = (to: Mode) =>
      new Promise<void>((done, failed) => {
        if (kubeletFailed) failed(kubeletFailed);
        else rollout = { to, done, failed };
      });

    scratch.writeMode(mode);
    const args = [
      '--service-cidr',
      '10.96.0.0/16',
      '--mtu',
      '1400',
      '--log-level',
      'info',
      '--restart',
      'cri',
      '--cri-endpoint',
      c.socket,
      '--restart-grace',
      '5',
      '--restart-timeout',
      '3',
      '--restart-min-interval',
      '0',
      '--restart-max-per-hour',
      '100000',
    ];
    const start = () => (live.agent = new AgentProcess(ns, scratch, args));
    const journalFile = path.join(scratch.stateDir, 'migration-journal.json');
    const journal = () => {
      try {
        return JSON.parse(readFileSync(journalFile, 'utf8')) as { migration: { mode: string; restart: string } | null };
      } catch {
        return { migration: null };
      }
    };
    let a = start();
    await waitForStatus(
      a,
      (s) => s.phase === 'Converged' && s.desiredMode === 'shared',
      'shared Converged at the start',
    );

    const killedAt: Record<string, number> = {};
    let kills = 0;
    for (migration = 0; migration < o.migrations; migration++) {
      mode = mode === 'shared' ? 'local' : 'shared';
      stopsPerMigration[migration] = 0;
      // The operator's rollout of the new mode, then the mode file. A shared-mode ovnkube-node
      // drops its mp0 route and adds the br-ex one at its start (the stand-in does not): the
      // test plays that part; the agent writes nothing towards shared.
      await rollOut(mode);
      if (mode === 'shared') ns.ip(`route replace ${CHAOS_ROUTES.shared}`);
      scratch.writeMode(mode);
      for (let k = 0; k < o.killsPerMigration; k++) {
        // A seeded point: a delay from the start, or a moment after the agent says it
        // starts carrying out the plan (journal, replace), that the migration is journaled
        // (the restart then owed, the replaces under way), or that it requests the restart.
        // A line that never comes (the migration was done by an earlier agent) kills at its bound.
        // The first kill of each migration comes within 100 ms of the mode file's write:
        // before the agent can have journaled it (a plain file is taken only once it has
        // been left alone for 200 ms, src/mode/settled.ts), so each migration also has a
        // kill with nothing on record.
        const stage = k === 0 ? 'mode' : pick(rng, ['start', 'plan', 'journaled', 'restart'] as const);
        if (stage === 'mode') await pause(int(rng, 100));
        else if (stage === 'start') await pause(int(rng, maxDelay));
        else {
          const line =
            stage === 'plan'
              ? '"carrying out plan"'
              : stage === 'journaled'
                ? '"migration journaled: replacing the routes"'
                : 'restarting ovnkube-node';
          for (let waited = 0; waited < 1200 && !a.output.includes(line); waited += 2) await pause(2);
          await pause(int(rng, stage === 'plan' ? 10 : stage === 'journaled' ? 3 : 40));
        }
        const j = journal().migration;
        const where = j === null || j.mode !== mode ? 'not journaled' : `restart ${j.restart}`;
        killedAt[where] = (killedAt[where] ?? 0) + 1;
        a.child.kill('SIGKILL');
        await a.exited;
        kills++;
        a = start();
      }
      const want = mode;
      await waitForStatus(
        a,
        (s) => s.phase === 'Converged' && s.desiredMode === want && s.ovnkubeMode === want,
        `${want} Converged after migration ${migration + 1}`,
      );
      log(
        `migration ${migration + 1} to ${mode}: ${o.killsPerMigration} kills, ${stopsPerMigration[migration]} restart(s) by the agent`,
      );
    }
    // A last look after the agent's restarts could have trailed: nothing more is stopped.
    await pause(500);
    const j = journal().migration;
    return {
      kills,
      killedAt,
      stopsPerMigration,
      finalRoutes: ns.routes('10.96.0.0/16'),
      expectedRoute: CHAOS_ROUTES[mode],
      journal: { mode: j?.mode ?? null, restart: j?.restart ?? null, tmpLeft: existsSync(`${journalFile}.tmp`) },
      finalPhase: status(scratch.socket)?.phase,
      seconds: (Date.now() - started) / 1000,
    };
  } finally {
    kubeletRunning = false;
    await kubelet.catch(() => undefined);
    await live.agent?.stop();
    await cd?.stop(pods);
    ns.destroy();
    scratch.remove();
  }
}
