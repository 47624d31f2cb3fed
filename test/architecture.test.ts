// The shape of the code, checked on the TypeScript sources (type-only imports
// included): no import cycle anywhere, and the pure core imports only itself and
// the address helpers. `npm run imports` shows the cycle check by hand.
import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import madge from 'madge';

const root = fileURLToPath(new URL('../../', import.meta.url));

test('the import graph of src/ has no cycle, and src/core imports nothing but src/core and src/net', async () => {
  const graph = await madge(`${root}src`, { fileExtensions: ['ts'], tsConfig: `${root}tsconfig.json` });
  assert.deepEqual(graph.circular(), []);
  const core = Object.entries(graph.obj()).filter(([file]) => file.startsWith('core/'));
  assert.ok(core.length >= 5, `core modules found: ${core.map(([f]) => f).join(', ')}`);
  for (const [file, deps] of core) {
    assert.deepEqual(deps.filter((d) => !d.startsWith('core/') && !d.startsWith('net/')), [], `${file} reaches outside the core`);
  }
});

// src/require.ts: the daemon's CommonJS packages and node:http are loaded by require(),
// never by import (an import costs a daemon at rest: docs/benchmarks.md, idle RSS, section 7).
// test/cli/loading.test.ts sees what a started daemon loads; this checks every module the
// same way on every Node version, the paths no test starts included (a CRI restart, watch).
test('src/ imports no CommonJS package and not node:http (type-only imports aside): those go through src/require.ts', () => {
  const files = readdirSync(`${root}src`, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  assert.ok(files.length > 50, `${files.length} modules`);
  const offenders: string[] = [];
  for (const file of files) {
    const text = readFileSync(`${root}src/${file}`, 'utf8');
    // Static imports and re-exports (not type-only), bare imports, and dynamic import(), either quote.
    const specs = [
      ...text.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^;]*?\sfrom\s+(['"])([^'"]+)\1/gms),
      ...text.matchAll(/^\s*import\s+(['"])([^'"]+)\1/gm),
      // import() in a type (typeof import(...), a `type` alias) loads nothing.
      ...text
        .split('\n')
        .filter((line) => !/^\s*(?:export\s+)?type\s/.test(line))
        .join('\n')
        .matchAll(/(?<!typeof\s+)\bimport\(\s*(['"])([^'"]+)\1\s*\)/g),
    ].map((m) => m[2]!);
    for (const spec of specs) {
      if (spec === 'node:http') {
        offenders.push(`${file}: ${spec}`);
        continue;
      }
      if (spec.startsWith('.') || spec.startsWith('node:')) continue;
      const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!;
      const pkg = JSON.parse(readFileSync(`${root}node_modules/${name}/package.json`, 'utf8')) as { type?: string };
      if (pkg.type !== 'module') offenders.push(`${file}: ${spec} (CommonJS)`);
    }
  }
  assert.deepEqual(offenders, []);
});
