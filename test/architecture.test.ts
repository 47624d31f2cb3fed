// The shape of the code, checked on the TypeScript sources (type-only imports
// included): no import cycle anywhere, and the pure core imports only itself and
// the address helpers. `npm run imports` shows the cycle check by hand.
import { strict as assert } from 'node:assert';
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
