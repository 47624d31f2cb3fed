// One table: every command that decides about the node (plan, apply, rollback, rollback
// --yes, and run for one pass) against every node shape of the matrix, on the real kernel
// beside the faithful ovnkube-node stand-in, asserting the service route after and the
// reason code. The commands are one pipeline (src/agent/engine.ts, the agent's loop too): the
// same evidence gives the same refusals through every door.
//  - shapes: 4.8, 4.9, their fixed z-streams, 4.10, 4.11, 4.12 (each with its RHCOS
//    os-release), an unknown release (an os-release with no OpenShift version), the same
//    with --layout legacy, and mid-upgrade (4.10's ovnkube-node on a host still on 4.9's);
//  - commands: plan, apply, rollback, rollback --yes, the same with --ovnkube-mode-check off, run;
//  - states: shared (ovnkube-node runs shared over its route; the mode file says shared),
//    stale (ovnkube-node rolled out to local over it: the bug on 4.8/4.9; the mode file says
//    local), migrated (the route moved to ovn-k8s-mp0 and the journal records that migration,
//    its restart done), stopped (migrated, then ovnkube-node stopped).
// Each command starts from the state as it was made (route put back, a journal of its own).
import { strict as assert } from 'node:assert';
import { mkdirSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import type { CommandResult } from '../../src/cli/exit-codes.js';
import { AgentProcess, Scratch, waitForStatus } from '../helpers/agent.js';
import { commandLines } from '../helpers/command-lines.js';
import { kernelSkipReason, seedNode } from '../helpers/netns.js';
import { minorOf, osRelease, type Release } from '../helpers/ovnkube-releases.js';
import { StandinOvnkube } from '../helpers/ovnkube-standin.js';

const SVC = '10.96.0.0/16';
const MP0 = `${SVC} via 10.244.1.1 dev ovn-k8s-mp0`;

interface Shape {
  name: string;
  standin: Release;
  /** The host's RHCOS release; null: an os-release with no OpenShift version. */
  host: string | null;
  layout?: 'legacy';
}

const SHAPES: Shape[] = [
  ...(['4.8', '4.8-fixed', '4.9', '4.9-fixed', '4.10', '4.11', '4.12'] as const).map((r) => ({
    name: r,
    standin: r,
    host: minorOf(r),
  })),
  { name: 'unknown', standin: '4.9', host: null },
  { name: 'unknown --layout legacy', standin: '4.9', host: null, layout: 'legacy' },
  { name: 'mid-upgrade 4.10 on 4.9', standin: '4.10', host: '4.9' },
];
/** `stopped`: migrated, then ovnkube-node stopped (between rollout pods, or on purpose). */
const STATES = ['shared', 'stale', 'migrated', 'stopped'] as const;
type State = (typeof STATES)[number];
/** The last rollback: the operator's override for a stopped ovnkube-node (docs/operate.md's guide). */
const OFF = 'rollback --yes --ovnkube-mode-check off';
const COMMANDS = ['plan', 'apply', 'rollback', 'rollback --yes', OFF, 'run'] as const;
type Command = (typeof COMMANDS)[number];

/** What the route is after the command: as before it, moved to ovn-k8s-mp0, or put back to the journal's. */
type After = 'unchanged' | 'mp0' | 'put back';
interface Outcome {
  route: After;
  code: string;
}

/** The agreed semantics, one rule per line. */
function expected(shape: Shape, state: State, command: Command): Outcome {
  const viaHost = ['4.10', '4.11', '4.12'].includes(minorOf(shape.standin));
  const unknown = shape.host === null && shape.layout === undefined;
  const fixed = shape.standin.endsWith('-fixed');
  const same = (code: string): Outcome => ({ route: 'unchanged', code });
  if (state === 'stopped') {
    // No ovnkube-node, so none of its 4.10 flags: a mid-upgrade node's 4.9 os-release is all there is,
    // and every door waits on the ovnkube-node to come (rollback too, unless told otherwise).
    if (shape.host !== null && ['4.10', '4.11', '4.12'].includes(minorOf(shape.host as Release)))
      return same('RoutingViaHostLayout');
    // Of unknown release both refusals hold: every door names the release first.
    if (unknown) return same('LayoutUnknown');
    // The operator's `off` is the one way back. On the mid-upgrade node too: its route is as the migration
    // left it (a 4.10 ovnkube-node that ran puts it via br-ex: nothing to roll back), and ovnkube.conf's
    // 4.10 keys, the evidence left there, are not given here (--ovnkube-config).
    return command === OFF ? { route: 'put back', code: 'RollingBack' } : same('OvnkubeModeUnknown');
  }
  if (command.startsWith('rollback')) {
    if (state !== 'migrated') return same('NothingToRollBack');
    if (viaHost) return same('RoutingViaHostLayout');
    if (unknown) return same('LayoutUnknown');
    // The migrated node's ovnkube-node runs local, the migration's mode: the old route put back
    // under it would be the stale one, so rollback waits on it as every door does.
    return same('OvnkubeOtherMode');
  }
  if (viaHost) return same('RoutingViaHostLayout');
  if (state === 'shared') return same(unknown ? 'AlreadyShared' : 'InSync');
  if (unknown) return same('LayoutUnknown');
  // A fixed z-stream's start already moved the stale route to ovn-k8s-mp0.
  if (state === 'migrated' || fixed) return same('InSync');
  // The bug on a 4.8/4.9 node: plan says so, apply and run repair it (run leaves the restart: --restart none).
  if (command === 'plan') return same('Replacing');
  return { route: 'mp0', code: command === 'apply' ? 'InSync' : 'RestartAwaited' };
}

/** A mode file in place since a minute: taken at once (src/mode/settled.ts). */
function modeFile(dir: string, mode: string): string {
  const file = path.join(dir, `mode-${mode}`);
  writeFileSync(file, mode);
  const past = new Date(Date.now() - 60_000);
  utimesSync(file, past, past);
  return file;
}

/** The journal of an agent that migrated the route from `from` to ovn-k8s-mp0, its restart done. */
function writeMigration(stateDir: string, from: string): void {
  const m = /via (\S+) dev (\S+)(?: mtu (\d+))?/.exec(from)!;
  const now = Date.now();
  const journal = {
    version: 2,
    migration: {
      mode: 'local',
      startedAt: now,
      ovnkubeBefore: null,
      routes: [
        {
          key: { prefix: SVC, family: 4, table: 254, priority: 0 },
          from: { dev: m[2], oif: null, gateway: m[1], mtu: m[3] ? Number(m[3]) : null },
          to: { dev: 'ovn-k8s-mp0', oif: null, gateway: '10.244.1.1', mtu: null },
        },
      ],
      restart: 'done',
      identity: 'process',
      attempts: 1,
      lastAttemptAt: now,
      lastError: null,
      stopped: null,
      stoppedAs: null,
      outcome: 'stopped',
      doneAt: now,
    },
    restarts: [now],
  };
  mkdirSync(stateDir, { recursive: true });
  writeFileSync(path.join(stateDir, 'migration-journal.json'), JSON.stringify(journal));
}

const codeOf = (command: Command, r: CommandResult): string => {
  if (command === 'plan' || command === 'apply') {
    try {
      return (JSON.parse(r.stdout ?? '') as { reasonCodes: string[] }).reasonCodes[0] ?? '(none)';
    } catch {
      return `(no plan: ${r.stderr})`;
    }
  }
  // The first refusal, as the first reason code of the others.
  const refusal = /\n {2}- .*\[(\w+)\]\n/.exec(r.stdout ?? '');
  if (refusal) return refusal[1]!;
  return /\nactions:\n/.test(r.stdout ?? '') ? 'RollingBack' : `(exit ${r.code}: ${r.stdout}${r.stderr})`;
};

/** Every command in every state of one shape, on one node. */
async function runShape(shape: Shape, results: Map<string, Outcome>): Promise<void> {
  const ns = seedNode();
  const scratch = new Scratch();
  const standin = new StandinOvnkube(ns, scratch.dir, shape.standin, { healthPeriod: 3600 });
  const lines = commandLines(ns);
  try {
    const osReleasePath = path.join(scratch.dir, 'os-release');
    writeFileSync(
      osReleasePath,
      shape.host === null ? 'NAME="Fedora Linux"\nID=fedora\nVERSION_ID=39\n' : osRelease(shape.host as Release),
    );
    const common = [
      '--service-cidr',
      SVC,
      '--os-release',
      osReleasePath,
      ...(shape.layout ? ['--layout', 'legacy'] : []),
    ];
    let sharedRoute = '';
    for (const state of STATES) {
      if (state === 'shared' || state === 'stale') {
        standin.start(state === 'shared' ? 'shared' : 'local');
        await standin.ready();
      } else ns.ip(`route replace ${MP0}`);
      if (state === 'stopped') standin.stop();
      const route = ns.routes(SVC)[0]!;
      if (state === 'shared') sharedRoute = route;
      const mode = modeFile(scratch.dir, state === 'shared' ? 'shared' : 'local');
      for (const command of COMMANDS) {
        ns.ip(`route replace ${route}`);
        const stateDir = path.join(scratch.dir, `${state}-${command.replace(/\W+/g, '-')}`);
        if (state === 'migrated' || state === 'stopped') writeMigration(stateDir, sharedRoute);
        let code: string;
        if (command === 'run') {
          const run = new Scratch();
          writeFileSync(run.modeFile, state === 'shared' ? 'shared' : 'local');
          utimesSync(run.modeFile, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
          if (state === 'migrated' || state === 'stopped') writeMigration(run.stateDir, sharedRoute);
          const agent = new AgentProcess(ns, run, [...common, '--restart', 'none']);
          try {
            const s = await waitForStatus(agent, (s) => s.lastReconcile !== null, 'a first pass');
            code = s.reasonCodes[0] ?? '(none)';
          } finally {
            await agent.stop();
            run.remove();
          }
        } else {
          const args = command.startsWith('rollback')
            ? ['rollback', ...common, '--state-dir', stateDir, ...command.split(' ').slice(1)]
            : [command, ...common, '--mode-file', mode, '--json', '--state-dir', stateDir];
          code = codeOf(command, await lines.run(args));
        }
        const now = ns.routes(SVC);
        const after: After | string =
          now.length === 1 && now[0] === route
            ? 'unchanged'
            : now.length === 1 && now[0] === MP0
              ? 'mp0'
              : now.length === 1 && now[0] === sharedRoute
                ? 'put back'
                : `[${now.join('; ')}]`;
        results.set(`${shape.name}|${state}|${command}`, { route: after as After, code });
      }
    }
  } finally {
    lines.close();
    standin.stop();
    ns.destroy();
    scratch.remove();
  }
}

/** Runs the jobs, `width` at a time. */
async function pool(jobs: Array<() => Promise<void>>, width: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < jobs.length) await jobs[next++]!();
    }),
  );
}

test('every command x every node shape: the same evidence, the same refusals, the same route after', async (t: TestContext) => {
  if (kernelSkipReason) {
    process.stderr.write(`SKIPPED (${kernelSkipReason}): ${t.name}\n`);
    t.skip(kernelSkipReason);
    return;
  }
  const results = new Map<string, Outcome>();
  const failures: string[] = [];
  await pool(
    SHAPES.map(
      (shape) => () =>
        runShape(shape, results).catch((err: Error) => void failures.push(`${shape.name}: ${err.stack}`)),
    ),
    3,
  );
  const cell = (o: Outcome | undefined) => (o ? `${o.route} ${o.code}` : 'not run');
  const table = [`| shape | state | ${COMMANDS.join(' | ')} |`, `|${' --- |'.repeat(COMMANDS.length + 2)}`];
  for (const shape of SHAPES)
    for (const state of STATES) {
      const cells = COMMANDS.map((command) => {
        const got = results.get(`${shape.name}|${state}|${command}`);
        const want = expected(shape, state, command);
        if (got?.route !== want.route || got.code !== want.code)
          failures.push(`${shape.name}, ${state}, ${command}: got ${cell(got)}, expected ${cell(want)}`);
        return cell(got);
      });
      table.push(`| ${shape.name} | ${state} | ${cells.join(' | ')} |`);
    }
  for (const row of table) t.diagnostic(row);
  assert.deepEqual(failures, [], table.join('\n'));
});
