// `rollback` on a real kernel: the journal of a real agent's migration, put back only
// with --yes, only under the node lock, refused where the rules say the old route
// would now be wrong, and never over a route someone changed since.
import { strict as assert } from 'node:assert';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { cli, Scratch, waitForStatus, withAgent } from '../helpers/agent.js';
import { seedNode, skipWithoutKernel } from '../helpers/netns.js';
import { StandinOvnkube } from '../helpers/ovnkube-standin.js';

const STALE = '10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400';
const LOCAL = '10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0';

test('rollback puts back the shared-mode route a real migration replaced: plan without --yes, refusals with their reason, then done', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local' }, async ({ ns, scratch, agent, ovnkube }) => {
    await waitForStatus(agent, (s) => s.phase === 'Converged', 'the migration to local');
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL]);
    let check: string[] = [];
    const rollback = (...extra: string[]) =>
      cli(ns, ['rollback', '--state-dir', scratch.stateDir, '--service-cidr', '10.96.0.0/16', ...check, ...extra]);

    // While the agent runs, the lock says no.
    const beside = rollback('--yes');
    assert.equal(beside.code, 1, beside.stderr);
    assert.match(
      beside.stderr,
      /^ovn-gwmode-agent: another agent \(pid \d+\) holds .*\/lock; rollback does not act beside a running agent: stop it first\n$/,
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL]);
    await agent.stop();

    // Under the local ovnkube-node the migration's restart brought: refused, as every door waits
    // on an ovnkube-node of the other mode; the old route would be the stale one it cannot replace.
    const underLocal = rollback('--yes');
    assert.equal(underLocal.code, 1, underLocal.stderr);
    assert.match(
      underLocal.stdout,
      /refused:\n {2}- ovnkube-node \(pid \d+\) runs --gateway-mode local, the mode the migration moved to: .* \[OvnkubeOtherMode\]\n$/,
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL]);
    // ovnkube-node gone (down, or its pod deleted): its mode unknown, refused as every door waits
    // (the next one may run local again); the operator who knows says so, and what follows acts.
    ovnkube.stop();
    const unknown = rollback('--yes');
    assert.equal(unknown.code, 1, unknown.stderr);
    assert.match(
      unknown.stdout,
      /refused:\n {2}- ovnkube-node's gateway mode is unknown: .*: with ovnkube-node stopped, --ovnkube-mode-check off puts the routes back \[OvnkubeModeUnknown\]\n$/,
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL]);
    check = ['--ovnkube-mode-check', 'off'];

    const dry = rollback();
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(
      dry.stdout,
      /^migration: to local, started \S+, 1 route\(s\) replaced\nactions:\n {2}replace 10\.96\.0\.0\/16: via 10\.244\.1\.1 dev ovn-k8s-mp0 -> via 172\.18\.0\.1 dev br-ex mtu 1400\nnothing changed: run again with --yes to carry it out\n$/,
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL], 'without --yes nothing changes');

    // Another --service-cidr than the migration's: a bad flag, said as such (not "no route").
    const other = cli(ns, ['rollback', '--state-dir', scratch.stateDir, '--service-cidr', '10.97.0.0/16', '--yes']);
    assert.equal(other.code, 2, other.stdout);
    assert.equal(
      other.stderr,
      "ovn-gwmode-agent: rollback: the journal's migration replaced 10.96.0.0/16, which --service-cidr (10.97.0.0/16) does not name: give the service CIDRs it was made with\n",
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL]);
    // The same with the CIDRs read from --ovnkube-config: the message names where they came from.
    const conf = path.join(scratch.dir, 'ovnkube.conf');
    writeFileSync(conf, '[default]\nmtu="1400"\n[kubernetes]\nservice-cidrs="10.97.0.0/16"\n');
    const fromConf = cli(ns, ['rollback', '--state-dir', scratch.stateDir, '--ovnkube-config', conf, '--yes']);
    assert.equal(fromConf.code, 2, fromConf.stdout);
    assert.equal(
      fromConf.stderr,
      "ovn-gwmode-agent: rollback: the journal's migration replaced 10.96.0.0/16, which --ovnkube-config's service-cidrs (10.97.0.0/16) does not name: give the service CIDRs it was made with\n",
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL]);

    // Someone changed the route since: not put back over their change.
    ns.ip('route replace 10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0 mtu 1300');
    const changed = rollback('--yes');
    assert.equal(changed.code, 1);
    assert.match(
      changed.stdout,
      /refused:\n {2}- 10\.96\.0\.0\/16 is via 10\.244\.1\.1 dev ovn-k8s-mp0 mtu 1300 metric 0; the migration left it via 10\.244\.1\.1 dev ovn-k8s-mp0 metric 0: changed since, not putting back over it \[RouteNotAsLeft\]\n$/,
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0 mtu 1300']);

    // A routing-via-host node: a br-ex route via the masquerade next hop is right in both modes.
    ns.ip('addr add 169.254.169.2/29 dev br-ex');
    ns.ip('route replace 10.96.0.0/16 via 169.254.169.4 dev br-ex mtu 1400');
    const rvh = rollback('--yes');
    assert.equal(rvh.code, 1);
    assert.match(rvh.stdout, /\[RoutingViaHostLayout\]\n$/);
    assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 169.254.169.4 dev br-ex mtu 1400']);

    ns.ip('route replace 10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0');
    ns.ip('addr del 169.254.169.2/29 dev br-ex');
    const done = rollback('--yes');
    assert.equal(done.code, 0, done.stderr + done.stdout);
    assert.match(
      done.stdout,
      /\nput back: 1 route\(s\)\nnext: ovnkube-node must run shared gateway mode, and the mode file say so, or the agent moves them again \(rollback restarts nothing\)\n$/,
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [STALE]);
    // Its log says what happened: the rollback, not a migration owing a restart.
    assert.match(done.stderr, /"journal the rollback of the migration to local"/);
    assert.match(done.stderr, /"msg":"rollback journaled: putting the routes back"/);
    assert.doesNotMatch(done.stderr, /migration journaled|restart owed|watching the routes settle/);

    // Done once: the routes stay on record, marked rolled back; a second run finds them put
    // back already: nothing to do, exit 0 (a fleet script counts it as done, not failed).
    const again = rollback('--yes');
    assert.equal(again.code, 0, again.stderr);
    assert.match(
      again.stdout,
      /^migration: to local, started \S+, 1 route\(s\) replaced; rolled back at \S+\nnothing to roll back:\n {2}- the routes the local migration replaced are as they were before it \[NothingToRollBack\]\n$/,
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [STALE]);

    // Moved again since (as an agent whose mode file still says local does, a repair within the
    // migration on record): a rollback puts it back again, not NothingToRollBack.
    ns.ip('route replace 10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0');
    const third = rollback('--yes');
    assert.equal(third.code, 0, third.stderr + third.stdout);
    assert.match(third.stdout, /\nput back: 1 route\(s\)\n/);
    assert.deepEqual(ns.routes('10.96.0.0/16'), [STALE]);
  });
});

test('rollback with no migration on record has nothing to do: it says so, exit 0', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local', ovnkube: null }, async ({ ns, scratch, agent }) => {
    await agent.stop();
    const r = cli(ns, ['rollback', '--state-dir', scratch.stateDir, '--service-cidr', '10.96.0.0/16', '--yes']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      'migration: none on record\nnothing to roll back:\n  - the journal records no migration [NothingToRollBack]\n',
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [STALE]);
  });
});

test('rollback --yes of a journal (of an older agent) that records a /0 refuses, saying why: the default route is never put back', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local', ovnkube: null }, async ({ ns, scratch, agent }) => {
    await agent.stop();
    ns.ip('route replace 10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0');
    const hop = (dev: string, gateway: string, mtu: number | null) => ({ dev, oif: null, gateway, mtu });
    const key = (prefix: string) => ({ prefix, family: 4, table: 254, priority: 0 });
    const migration = {
      mode: 'local',
      startedAt: Date.now(),
      routes: [
        {
          key: key('10.96.0.0/16'),
          from: hop('br-ex', '172.18.0.1', 1400),
          to: hop('ovn-k8s-mp0', '10.244.1.1', null),
        },
        { key: key('0.0.0.0/0'), from: hop('ovn-k8s-mp0', '10.244.1.1', null), to: hop('br-ex', '172.18.0.1', null) },
      ],
      identity: 'process',
      ovnkubeBefore: null,
      attempts: 0,
      last: null,
      rollback: null,
      restart: 'owed',
    };
    mkdirSync(scratch.stateDir, { recursive: true });
    const file = path.join(scratch.stateDir, 'migration-journal.json');
    writeFileSync(file, JSON.stringify({ version: 3, migration, restarts: [] }));
    const r = cli(ns, ['rollback', '--state-dir', scratch.stateDir, '--service-cidr', '10.96.0.0/16', '--yes']);
    assert.equal(r.code, 1, r.stderr);
    assert.match(
      r.stdout,
      /refused:\n {2}- 0\.0\.0\.0\/0 is a default route, never a service route: .* \[NotOurRoute\]\n$/,
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL]);
    assert.deepEqual(ns.routes('0.0.0.0/0'), ['default via 172.18.0.1 dev br-ex']);
  });
});

test("rollback --yes on a 4.9 host whose ovnkube-node runs 4.10's command line (mid-upgrade) refuses: RoutingViaHostLayout, exit 1, route untouched", async (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ gw0: true });
  const scratch = new Scratch();
  const old = new StandinOvnkube(ns, path.join(scratch.dir, '4.9'), '4.9');
  // 4.10's ovnkube-node in the 4.9 -> 4.10 upgrade window routes services via ovn-k8s-mp0 itself.
  const next = new StandinOvnkube(ns, path.join(scratch.dir, '4.10'), '4.10', { topology: 'old' });
  try {
    // The bug on a 4.9 node, migrated by apply (the host's os-release says 4.9: cli's default).
    old.start('shared');
    await old.ready();
    old.start('local');
    await old.ready(2);
    scratch.writeMode('local');
    const args = ['--service-cidr', '10.96.0.0/16', '--state-dir', scratch.stateDir];
    const applied = cli(ns, ['apply', '--mode-file', scratch.modeFile, ...args]);
    assert.equal(applied.code, 0, applied.stderr + applied.stdout);
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL]);
    // CNO rolls out 4.10's ovnkube-node before the node reboots into 4.10's RHCOS.
    old.stop();
    next.start('local');
    await next.ready();
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL]);
    const plan = cli(ns, ['plan', '--mode-file', scratch.modeFile, '--service-cidr', '10.96.0.0/16', '--json']);
    assert.deepEqual((JSON.parse(plan.stdout) as { reasonCodes: string[] }).reasonCodes, ['RoutingViaHostLayout']);
    for (const extra of [[], ['--yes']]) {
      const r = cli(ns, ['rollback', ...args, ...extra]);
      assert.equal(r.code, 1, r.stderr + r.stdout);
      assert.match(
        r.stdout,
        /\nrefused:\n {2}- routing-via-host layout \(ovnkube-node's command line has --export-ovs-metrics \(pid \d+\), rendered by the 4\.10\+ network operator only\): .* \[RoutingViaHostLayout\]\n$/,
      );
      assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL], 'the route is untouched');
    }
  } finally {
    old.stop();
    next.stop();
    ns.destroy();
    scratch.remove();
  }
});

test('rollback --yes on a node of unknown release refuses with LayoutUnknown, as plan and run wait; --layout legacy states it', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local' }, async ({ ns, scratch, agent, ovnkube }) => {
    await waitForStatus(agent, (s) => s.phase === 'Converged', 'the migration to local');
    await agent.stop();
    ovnkube.stop();
    const osRelease = path.join(scratch.dir, 'os-release');
    writeFileSync(osRelease, 'NAME="Fedora Linux"\nID=fedora\nVERSION_ID=39\n');
    const env = { OVN_GWMODE_OS_RELEASE: osRelease };
    const args = ['rollback', '--state-dir', scratch.stateDir, '--service-cidr', '10.96.0.0/16', '--yes'];
    const refused = cli(ns, args, env);
    assert.equal(refused.code, 1, refused.stderr + refused.stdout);
    assert.match(refused.stdout, /\nrefused:\n {2}- cannot tell the OpenShift release \(.*\[LayoutUnknown\]\n$/);
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL], 'the route is untouched');
    const stated = cli(ns, [...args, '--layout', 'legacy', '--ovnkube-mode-check', 'off'], env);
    assert.equal(stated.code, 0, stated.stderr + stated.stdout);
    assert.match(stated.stdout, /\nput back: 1 route\(s\)\n/);
    assert.deepEqual(ns.routes('10.96.0.0/16'), [STALE]);
  });
});
