// Freed memory given back to the kernel: the addon's malloc_trim (native/src/memory.c),
// and the daemon calling it once per periodic resync, after the pass it woke.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { waitForStatus, withAgent } from '../helpers/agent.js';
import { skipWithoutKernel } from '../helpers/netns.js';

const ADDON = fileURLToPath(new URL('../../src/native/addon.js', import.meta.url));

test("malloc_trim gives the kernel back what malloc's arenas hold free: 40,000 small buffers freed but for one in 16", () => {
  // Buffer.alloc's memory comes from malloc; freed, it stays in the arena, fragmented by the kept ones.
  const script = `
    import { readFileSync } from 'node:fs';
    const { addon } = await import(${JSON.stringify(ADDON)});
    const anon = () => Number(/^RssAnon:\\s+(\\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))[1]);
    const fragment = () => { const all = []; for (let i = 0; i < 40000; i++) all.push(Buffer.alloc(2048, 1)); return all.filter((_, i) => i % 16 === 0); };
    const kept = fragment();
    for (let i = 0; i < 3; i++) { globalThis.gc(); await new Promise((r) => setTimeout(r, 50)); }
    const freed = anon();
    const released = await addon.mallocTrim();
    console.log(JSON.stringify({ freed, trimmed: anon(), released, kept: kept.length }));
  `;
  const r = spawnSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const { freed, trimmed, released } = JSON.parse(r.stdout) as { freed: number; trimmed: number; released: boolean };
  assert.equal(released, true, 'glibc released memory');
  // About 75 MB were freed (15 of every 16 2-KiB buffers of 80 MB): most of it goes back.
  assert.ok(freed - trimmed > 40 * 1024, `RssAnon ${freed} kB before the trim, ${trimmed} kB after`);
});

test("the daemon trims once per periodic resync, after the pass it woke: never after the start's, the migration's or the restart's passes", async (t) => {
  if (skipWithoutKernel(t)) return;
  await withAgent({ mode: 'local', args: ['--service-cidr', '10.96.0.0/16', '--mtu', '1400'] }, async ({ agent }) => {
    await waitForStatus(agent, (s) => s.phase === 'Converged', 'Converged');
    const trims = () => agent.logs().filter((l) => l.msg === 'malloc arenas trimmed');
    // Three trims (periodic resyncs every 2 s here); the bound is a safety net.
    for (let i = 0; i < 300 && trims().length < 3; i++) await new Promise((r) => setTimeout(r, 50));
    const lines = agent.logs();
    assert.ok(trims().length >= 3, agent.output.slice(-3000));
    // Each trim follows a periodic resync that no earlier trim followed: none after the
    // start's, the migration's or the restart's passes, however close together those came.
    let resyncs = 0;
    for (const l of lines) {
      if (l.msg === 'periodic resync') resyncs++;
      if (l.msg !== 'malloc arenas trimmed') continue;
      assert.ok(resyncs > 0, `a trim with no periodic resync before it: ${JSON.stringify(l)}`);
      resyncs = 0;
    }
    // glibc here (a null would not be logged): released at least once (freed memory was there).
    assert.ok(
      trims().every((l) => l.released === true || l.released === false),
      JSON.stringify(trims()),
    );
    assert.ok(
      trims().some((l) => l.released === true),
      JSON.stringify(trims()),
    );
  });
});
