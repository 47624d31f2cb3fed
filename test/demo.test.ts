// `npm run demo` as the README says it: the seed's node in a throwaway namespace, the agent
// against a mode file saying local, ip route before and after, the status by curl and by
// `status --brief`, and everything torn down.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { skipWithoutKernel } from './helpers/netns.js';

const DEMO = fileURLToPath(new URL('../src/demo/demo.js', import.meta.url));

test('npm run demo: the stale br-ex route becomes the ovn-k8s-mp0 one, the status says so, and nothing is left behind', (t) => {
  if (skipWithoutKernel(t)) return;
  const r = spawnSync(process.execPath, [DEMO], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const out = r.stdout;
  const section = (title: string) => {
    const start = out.indexOf(`\n=== ${title}`);
    assert.ok(start >= 0, `a section "${title}": ${out}`);
    const end = out.indexOf('\n=== ', start + 1);
    return out.slice(start, end < 0 ? undefined : end);
  };
  assert.match(section('a node in namespace'), /^10\.96\.0\.0\/16 via 172\.18\.0\.1 dev br-ex mtu 1400 ?$/m);
  const after = section('ip route show, after');
  assert.match(after, /^10\.96\.0\.0\/16 via 10\.244\.1\.1 dev ovn-k8s-mp0 ?$/m);
  assert.doesNotMatch(after, /br-ex mtu 1400/);
  const curl = section('curl --unix-socket');
  const status = JSON.parse(curl.slice(curl.indexOf('{')));
  assert.equal(status.phase, 'Converged');
  assert.equal(status.restart.count, 1, 'ovnkube-node restarted once');
  assert.match(section('ovn-gwmode-agent status --brief'), /^Converged desired=local ovnkube=local layout=legacy routes=1\/1 in sync: /m);
  const torn = /^=== torn down: namespace (\S+) and (\S+) are gone$/m.exec(out);
  assert.ok(torn, out);
  assert.ok(!existsSync(`/run/netns/${torn[1]}`), 'the namespace is gone');
  assert.ok(!existsSync(torn[2]!), 'the scratch directory is gone');
});
