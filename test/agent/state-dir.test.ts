// The state directory full or read-only (a 16 KiB tmpfs mounted on it for the test):
// the agent stays up, starts no migration and requests no restart (what it must journal
// first; a repair under the migration on record goes on), says so with the
// reason JournalUnwritable, and carries the change out once the journal can be
// written again. An agent started on a read-only state directory runs all the same.
// `apply` on a state directory that takes no writes changes nothing and says why; a
// second agent beside one that took the lock read-only names the real holder.
import { strict as assert } from 'node:assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { AgentProcess, cli, FakeOvnkube, Scratch, waitForStatus } from '../helpers/agent.js';
import { seedNode, skipWithoutKernel, type Netns } from '../helpers/netns.js';

const LOCAL_V4 = '10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0';
const SHARED_V4 = '10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400';
const ARGS = [
  '--service-cidr',
  '10.96.0.0/16',
  '--mtu',
  '1400',
  '--restart-min-interval',
  '0',
  '--restart-max-per-hour',
  '100',
];

/** Fills the file system of dir until it refuses another byte. */
function fill(dir: string): string {
  const filler = path.join(dir, 'filler');
  try {
    writeFileSync(filler, Buffer.alloc(1 << 20));
    assert.fail('a 16 KiB tmpfs took 1 MiB');
  } catch (err) {
    assert.equal((err as NodeJS.ErrnoException).code, 'ENOSPC');
  }
  return filler;
}

interface SmallStateDir {
  ns: Netns;
  scratch: Scratch;
  ovnkube: FakeOvnkube;
  /** Starts an agent on the node and the small state directory; every one is stopped at the end. */
  startAgent(): AgentProcess;
}

/** The seed's node, a stand-in ovnkube-node and a 16 KiB tmpfs as the state directory; all torn down after fn. */
async function withSmallStateDir(fn: (c: SmallStateDir) => Promise<void>): Promise<void> {
  const ns = seedNode({ gw0: true });
  const scratch = new Scratch();
  const ovnkube = new FakeOvnkube(ns, scratch.dir);
  mkdirSync(scratch.stateDir);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16k,mode=0750', 'tmpfs', scratch.stateDir]);
  const agents: AgentProcess[] = [];
  const startAgent = () => {
    const agent = new AgentProcess(ns, scratch, ARGS);
    agents.push(agent);
    return agent;
  };
  try {
    await fn({ ns, scratch, ovnkube, startAgent });
  } finally {
    for (const a of agents) await a.stop();
    ovnkube.stop();
    spawnSync('umount', ['-l', scratch.stateDir]);
    ns.destroy();
    scratch.remove();
  }
}

test('a full, then read-only state directory: no change that cannot be journaled, the reason in the status, and it recovers', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withSmallStateDir(async ({ ns, scratch, ovnkube, startAgent }) => {
    const remount = (how: 'ro' | 'rw') => execFileSync('mount', ['-o', `remount,${how}`, scratch.stateDir]);
    ovnkube.start('local', { respawn: true });
    const a = startAgent();
    await waitForStatus(a, (s) => s.lastReconcile !== null && s.reasonCodes[0] === 'ModeNotRead', 'the first pass');

    // Full: the migration to local is never started.
    const filler = fill(scratch.stateDir);
    scratch.writeMode('local');
    let s = await waitForStatus(
      a,
      (s) => s.reasonCodes[0] === 'JournalUnwritable' && /attempt [2-9]/.test(s.lastError ?? ''),
      'JournalUnwritable, twice',
    );
    assert.equal(s.phase, 'Degraded');
    assert.match(
      s.reasons[0]!,
      /^refusing to change routes or restart ovnkube-node: the change cannot be journaled \(attempt \d+, retrying in \d+ ms\): cannot write the journal .*migration-journal\.json: ENOSPC/,
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4], 'no route changed');
    assert.equal(ovnkube.starts, 1, 'ovnkube-node not restarted');
    assert.equal(s.restart?.count, 0);
    assert.equal(a.child.exitCode, null, 'still running');
    assert.equal(
      existsSync(path.join(scratch.stateDir, 'migration-journal.json.tmp')),
      false,
      'no partial journal left holding the space',
    );

    rmSync(filler);
    s = await waitForStatus(a, (s) => s.phase === 'Converged', 'Converged once there is room');
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);
    assert.equal(s.restart?.count, 1);

    // Full again: a route set back from outside is repaired under the migration on
    // record (a repair is not journaled: the record says where the route belongs); no
    // new migration, no restart.
    const again = fill(scratch.stateDir);
    execFileSync('ip', ['-n', ns.name, 'route', 'replace', ...SHARED_V4.split(' ')]);
    s = await waitForStatus(
      a,
      (s) => s.phase === 'Converged' && s.routes[0]?.inSync === true && ns.routes('10.96.0.0/16')[0] === LOCAL_V4,
      'repaired while full',
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4]);
    assert.equal(s.restart?.count, 1, 'no restart requested for a repair');
    assert.equal(ovnkube.starts, 2, 'ovnkube-node not restarted again');
    rmSync(again);

    // Read-only (the kernel refuses to remount a file system some process writes to,
    // so the agent is stopped first, as after a crash): a new agent starts on it, and says
    // the journal lags behind the record it cannot write (back to shared, the local
    // migration owes nothing: the record moves on). Shared is ovnkube-node's: no route changes.
    await a.stop();
    assert.equal(a.child.exitCode, 0);
    remount('ro');
    ovnkube.start('shared', { respawn: true });
    scratch.writeMode('shared');
    const b = startAgent();
    s = await waitForStatus(
      b,
      (s) => s.reasonCodes[0] === 'JournalUnwritable',
      'an agent on a read-only directory runs and reports it',
    );
    assert.match(s.reasons[0]!, /EROFS/);
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL_V4], 'no route changed');
    assert.equal(s.restart?.count, 1, 'no restart requested');

    // `ip netns exec` gave the agent a mount namespace of its own, whose copy of the
    // mount was made read-only: it is made writable there too.
    remount('rw');
    execFileSync('nsenter', ['-t', String(b.child.pid), '-m', 'mount', '-o', 'remount,rw', scratch.stateDir]);
    s = await waitForStatus(b, (s) => s.phase === 'Converged' && s.desiredMode === 'shared', 'Converged once writable');
    assert.deepEqual([s.reasonCodes[0], s.restart?.count, s.restart?.required], ['OvnkubeFallbackRoute', 1, false]);
    assert.deepEqual(
      ns.routes('10.96.0.0/16'),
      [LOCAL_V4],
      'ovnkube-node moves it at its shared-mode start, not the agent',
    );
  });
});

test('apply on a full, then read-only state directory changes nothing and says why; beside an agent holding the lock read-only, the refusals name that agent, not the stale pid in the file', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withSmallStateDir(async ({ ns, scratch, ovnkube, startAgent }) => {
    const applyArgs = ['apply', '--mode-file', scratch.modeFile, ...ARGS.slice(0, 4), '--state-dir', scratch.stateDir];
    const lockPath = path.join(scratch.stateDir, 'lock');
    scratch.writeMode('local');
    // Full: apply refuses, one line, exit 2, the route untouched.
    const filler = fill(scratch.stateDir);
    let r = cli(ns, applyArgs);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      new RegExp(
        `^ovn-gwmode-agent: apply: the state directory ${scratch.stateDir} is not writable \\(ENOSPC: no space left\\), so nothing can be journaled; refusing to change routes\n$`,
      ),
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4], 'no route changed');
    rmSync(filler);

    // An agent writes its pid into the lock file, and stops; the directory turns read-only.
    ovnkube.start('shared', { respawn: true });
    scratch.writeMode('shared');
    const first = startAgent();
    await waitForStatus(first, (s) => s.phase === 'Converged', 'the first agent converged');
    await first.stop();
    execFileSync('mount', ['-o', 'remount,ro', scratch.stateDir]);
    assert.equal(readFileSync(lockPath, 'utf8').trim(), String(first.child.pid), 'the file names the first agent');

    // The next agent takes the lock read-only: the file still names the first.
    ovnkube.start('local', { respawn: true });
    scratch.writeMode('local');
    const holder = startAgent();
    await waitForStatus(holder, (s) => s.reasonCodes[0] === 'JournalUnwritable', 'an agent on the read-only directory');
    const second = startAgent();
    assert.equal(await second.exited, 1);
    assert.equal(
      second.output,
      `ovn-gwmode-agent: another agent (pid ${holder.child.pid}) holds ${lockPath}; not starting a second agent\n`,
    );
    r = cli(ns, applyArgs);
    assert.equal(r.code, 1);
    assert.equal(
      r.stderr,
      `ovn-gwmode-agent: another agent (pid ${holder.child.pid}) holds ${lockPath}; apply does not act beside a running agent: stop it, or leave the work to it\n`,
    );

    // Alone on the read-only directory, apply takes the lock read-only and refuses all the same.
    await holder.stop();
    r = cli(ns, applyArgs);
    assert.equal(r.code, 2, r.stderr);
    assert.equal(r.stdout, '');
    assert.match(
      r.stderr,
      new RegExp(
        `^ovn-gwmode-agent: apply: the state directory ${scratch.stateDir} is not writable \\(EROFS: read-only file system\\), so nothing can be journaled; refusing to change routes\n$`,
      ),
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [SHARED_V4], 'no route changed');
  });
});
