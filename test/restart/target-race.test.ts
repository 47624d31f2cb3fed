// Rule 8 of src/core/decide.ts on real processes: kubelet replaces ovnkube-node between
// the pass's observation and the lookup of the restart's target. The agent runs in a
// namespace of its own (test/fixtures/target-race.ts), so that the /proc scan sees only
// its stand-ins.
import { strict as assert } from 'node:assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { seedNode, skipWithoutKernel } from '../helpers/netns.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/target-race.js', import.meta.url));

test('signal: the ovnkube-node kubelet started between the observation and the lookup is never signalled; it proves the migration, with no restart by the agent', (t) => {
  if (skipWithoutKernel(t)) return;
  const ns = seedNode({ gw0: true });
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-race-'));
  try {
    const out = JSON.parse(ns.exec(process.execPath, [FIXTURE, dir]).trim().split('\n').at(-1)!) as {
      finds: number;
      signalled: string[];
      bSignalled: boolean;
      bRunning: boolean;
      restarts: number;
      migration: { restart: string; ovnkubeBefore: string } | null;
      codes: string[];
    };
    assert.ok(out.finds >= 2, 'the race was played');
    assert.deepEqual(out.signalled, [], 'nothing signalled');
    assert.equal(out.bSignalled, false, 'B never got SIGTERM');
    assert.equal(out.bRunning, true, 'B still runs');
    assert.equal(out.restarts, 0, 'no restart requested: the kubelet restart is the one the migration owed');
    assert.equal(out.migration?.restart, 'done');
    assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0']);
  } finally {
    ns.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
});
