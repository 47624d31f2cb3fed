// `rollback` on a real kernel: the journal of a real agent's migration, put back only
// with --yes, only under the node lock, refused where the rules say the old route
// would now be wrong, and never over a route someone changed since.
import { strict as assert } from 'node:assert';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { cli, waitForStatus, withAgent } from '../helpers/agent.js';
import { skipWithoutKernel } from '../helpers/netns.js';

const STALE = '10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400';
const LOCAL = '10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0';

test('rollback puts back the shared-mode route a real migration replaced: plan without --yes, refusals with their reason, then done', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local' }, async ({ ns, scratch, agent }) => {
    await waitForStatus(agent, (s) => s.phase === 'Converged', 'the migration to local');
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL]);
    const rollback = (...extra: string[]) =>
      cli(ns, ['rollback', '--state-dir', scratch.stateDir, '--service-cidr', '10.96.0.0/16', ...extra]);

    // While the agent runs, the lock says no.
    const beside = rollback('--yes');
    assert.equal(beside.code, 1, beside.stderr);
    assert.match(
      beside.stderr,
      /^ovn-gwmode-agent: another agent \(pid \d+\) holds .*\/lock; rollback does not act beside a running agent: stop it first\n$/,
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [LOCAL]);
    await agent.stop();

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

    // Done once: the routes stay on record, marked rolled back; a second run finds them put back already.
    const again = rollback('--yes');
    assert.equal(again.code, 1);
    assert.match(
      again.stdout,
      /^migration: to local, started \S+, 1 route\(s\) replaced; rolled back at \S+\nrefused:\n {2}- the routes the local migration replaced are as they were before it \[NothingToRollBack\]\n$/,
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

test('rollback with no migration on record refuses, and says so', async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local', ovnkube: null }, async ({ ns, scratch, agent }) => {
    await agent.stop();
    const r = cli(ns, ['rollback', '--state-dir', scratch.stateDir, '--service-cidr', '10.96.0.0/16', '--yes']);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(
      r.stdout,
      'migration: none on record\nrefused:\n  - the journal records no migration [NothingToRollBack]\n',
    );
    assert.deepEqual(ns.routes('10.96.0.0/16'), [STALE]);
  });
});
