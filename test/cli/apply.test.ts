// `apply` says what it did and what is left to do, and nothing it did not do.
import { strict as assert } from 'node:assert';
import { test } from 'node:test';
import { cli, Scratch } from '../helpers/agent.js';
import { seedNode, skipWithoutKernel } from '../helpers/netns.js';

test('apply replaces the route and says ovnkube-node is still to be restarted, by someone else', (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ gw0: true });
  const scratch = new Scratch();
  try {
    scratch.writeMode('local');
    const r = cli(ns, ['apply', '--mode-file', scratch.modeFile, '--service-cidr', '10.96.0.0/16', '--ovnkube-mode-check', 'off', '--state-dir', scratch.stateDir]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0']);
    assert.match(r.stdout, /\napplied: 1 replace\(s\)\nnext: restart ovnkube-node \(apply does not\)\n$/);
    assert.doesNotMatch(r.stdout, /agent/);
  } finally {
    ns.destroy();
    scratch.remove();
  }
});
