// The long form of the seeded fuzz runs: the mode file (120,000 files), ovnkube.conf,
// flags and environments (100,000 each), and netlink decoding (5,000,000 mutated kernel
// datagrams), as `npm test` runs them at 1/50th. Seeds as in the tests
// (GWMODE_MODE_SEED, GWMODE_CONFIG_SEED, GWMODE_NL_SEED); SCALE=<n> for another size.
// Run: `npm run build && node dist/bench/fuzz-long.js`. Each file's diagnostics print its counts.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const scale = process.env.SCALE ?? '50';
const files = ['mode/fuzz.test.js', 'config/fuzz.test.js', 'dataplane/decode-fuzz.test.js'].map((f) =>
  fileURLToPath(new URL(`../test/${f}`, import.meta.url)),
);
const started = Date.now();
const r = spawnSync(process.execPath, ['--test', '--test-reporter=spec', ...files], {
  stdio: 'inherit',
  env: { ...process.env, GWMODE_FUZZ_SCALE: scale },
});
process.stdout.write(`scale ${scale}: ${((Date.now() - started) / 1000).toFixed(0)} s, exit ${r.status}\n`);
process.exitCode = r.status ?? 1;
