// What `npm pack` ships: the agent, its native sources and its manifests; not the
// demo (it makes throwaway namespaces and a stand-in ovnkube-node) and not the tests.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';

test('the package holds the agent and its native sources, and neither the demo nor test code', () => {
  // --ignore-scripts: the build is not what is under test, and `prepare` would rerun tsc.
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const files = (JSON.parse(r.stdout) as Array<{ files: Array<{ path: string }> }>)[0]!.files.map((f) => f.path);
  for (const shipped of ['dist/src/cli/main.js', 'dist/src/cli/lock.js', 'native/binding.gyp', 'native/src/lock.c', 'src/cri/runtime.proto', 'packaging/kubernetes/daemonset.yaml']) {
    assert.ok(files.includes(shipped), `${shipped} is shipped`);
  }
  const unwanted = files.filter((f) => f.startsWith('dist/src/demo/') || f.startsWith('dist/test/') || f.startsWith('test/') || f.startsWith('dist/bench/'));
  assert.deepEqual(unwanted, []);
});
