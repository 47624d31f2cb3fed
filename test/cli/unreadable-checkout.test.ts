// `npm test` from a clone under a 0700 directory (root's home on Debian): the tests that
// run the CLI as nobody must not depend on nobody reaching the checkout by its own path.
// The checkout is seen under a new 0700 directory (a bind mount in a mount namespace of
// the test run's own: nothing is cloned, nothing left mounted) and the non-root CLI tests
// of test/cli/permissions.test.ts run from there, as from such a clone.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { skipWithoutKernel } from '../helpers/netns.js';
import { skipWithoutSetpriv } from '../helpers/nobody.js';

const CHECKOUT = fileURLToPath(new URL('../../../', import.meta.url)).replace(/\/$/, '');

test(
  'the tests that run the CLI as nobody pass from a checkout under a 0700 directory',
  { timeout: 5 * 60_000 },
  (t) => {
    if (skipWithoutKernel(t) || skipWithoutSetpriv(t)) return;
    const home = mkdtempSync(path.join(tmpdir(), 'gwmode-home-'));
    const clone = path.join(home, 'ovn-gwmode-agent');
    try {
      assert.equal(statSync(home).mode & 0o777, 0o700, 'a home nobody cannot enter');
      mkdirSync(clone, { mode: 0o755 });
      const script =
        'mount --bind "$1" "$2" && cd "$2" && exec "$3" --test --test-concurrency=1 --test-reporter=tap dist/test/cli/permissions.test.js';
      // A run of its own, not a subtest of this one (node:test marks its children by NODE_TEST_CONTEXT).
      const { NODE_TEST_CONTEXT: _, ...env } = process.env;
      const r = spawnSync(
        'unshare',
        ['--mount', '--propagation', 'private', 'sh', '-c', script, 'sh', CHECKOUT, clone, process.execPath],
        { encoding: 'utf8', env, timeout: 4 * 60_000 },
      );
      const report = `${r.stdout}\n${r.stderr}`;
      assert.equal(r.status, 0, report);
      assert.match(r.stdout, /^# pass [1-9]/m, report);
      assert.match(r.stdout, /^# fail 0$/m, report);
      assert.match(r.stdout, /^# skipped 0$/m, report);
    } finally {
      // Never recursive: were the mount ever seen here, that would remove the checkout.
      rmdirSync(clone);
      rmdirSync(home);
    }
  },
);
