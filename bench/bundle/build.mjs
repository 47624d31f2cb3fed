// Experiment, not shipped (docs/benchmarks.md, "### 9."): the daemon bundled by esbuild.
// esbuild is not a dependency: `npm i --no-save esbuild@0.28.2`, `npm run build`, then
// node bench/bundle/build.mjs OUT [--minify] [--split] [--esm-only] [--stub-thread-stream]
// OUT gets dist/src/cli/main.js (the bundle, at the unbundled entry's place, so that paths
// computed from import.meta.url by addon.ts and cri/client.ts still resolve: both are three
// levels below the root), native/build/Release/gwmode_native.node, src/cri/runtime.proto and
// package.json (copied).
// --esm-only: the requireModule()/createRequire() calls are left alone, so the CommonJS
// packages stay outside the bundle (OUT/node_modules links to the worktree's).
// Default ("full"): requireModule('x') and metrics.ts/parse.ts's local createRequire
// become plain require('x'), which esbuild follows and bundles; Node's builtins stay
// external and are reached through a createRequire banner (esbuild's __require), so
// node:http is still taken by require(), not import (src/require.ts).
import { build } from 'esbuild';
import { cpSync, mkdirSync, readFileSync, symlinkSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
const out = path.resolve(process.argv[2]);
const minify = process.argv.includes('--minify');
const esmOnly = process.argv.includes('--esm-only');
// --split: esbuild's code splitting; each dynamic import() (dispatch, commands, ask, yargs,
// the CRI client) becomes a chunk beside main.js, loaded when it was before. yaml (required
// lazily by mode/parse.ts, for manifests only) stays in node_modules (OUT/node_modules links).
const split = process.argv.includes('--split');
// --stub-thread-stream: pino's transport worker (thread-stream) replaced by a stub that throws
// if used; the agent gives pino a destination stream and never starts a transport. Not shippable as is.
const stubThreadStream = process.argv.includes('--stub-thread-stream');
rmSync(out, { recursive: true, force: true });
mkdirSync(path.join(out, 'dist/src/cli'), { recursive: true });
mkdirSync(path.join(out, 'native/build/Release'), { recursive: true });
mkdirSync(path.join(out, 'src/cri'), { recursive: true });
cpSync(path.join(root, 'native/build/Release/gwmode_native.node'), path.join(out, 'native/build/Release/gwmode_native.node'));
cpSync(path.join(root, 'src/cri/runtime.proto'), path.join(out, 'src/cri/runtime.proto'));
cpSync(path.join(root, 'package.json'), path.join(out, 'package.json'));
if (esmOnly || split) symlinkSync(path.join(root, 'node_modules'), path.join(out, 'node_modules'));

const distSrc = path.join(root, 'dist/src') + path.sep;
const rewrite = {
  name: 'rewrite',
  setup(b) {
    b.onLoad({ filter: /\/dist\/src\/.*\.js$/ }, (args) => {
      let text = readFileSync(args.path, 'utf8');
      const rel = args.path.slice(distSrc.length);
      // version.ts reads ../../package.json from dist/src/; the bundle is one level deeper.
      if (rel === 'version.js') text = text.replace("'../../package.json'", "'../../../package.json'");
      if (!esmOnly) {
        text = text.replace(/\brequireModule\(/g, 'require(');
        if (rel === 'metrics/metrics.js' || rel === 'mode/parse.js') {
          text = text.replace(/^const require = createRequire\(import\.meta\.url\);$/m, '');
        }
      }
      return { contents: text, loader: 'js' };
    });
  },
};

const stub = {
  name: 'stub',
  setup(b) {
    b.onResolve({ filter: /^thread-stream$/ }, () => ({ path: 'thread-stream', namespace: 'stub' }));
    b.onLoad({ filter: /.*/, namespace: 'stub' }, () => ({ contents: "module.exports = class ThreadStream { constructor() { throw new Error('thread-stream is not in this bundle'); } };", loader: 'js' }));
  },
};
const result = await build({
  entryPoints: [path.join(root, 'dist/src/cli/main.js')],
  ...(split ? { outdir: path.join(out, 'dist/src/cli'), splitting: true, external: ['yaml'] } : { outfile: path.join(out, 'dist/src/cli/main.js') }),
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  minify,
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
  plugins: stubThreadStream ? [rewrite, stub] : [rewrite],
  banner: { js: "import { createRequire as __gwmodeCreateRequire } from 'node:module';\nconst require = __gwmodeCreateRequire(import.meta.url);" },
});
for (const [file, o] of Object.entries(result.metafile.outputs)) console.log(`  ${path.basename(file)} ${o.bytes} bytes, ${Object.keys(o.inputs).length} inputs`);
const inputs = Object.assign({}, ...Object.values(result.metafile.outputs).map((o) => o.inputs));
const byPkg = {};
for (const [file, { bytesInOutput }] of Object.entries(inputs)) {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file);
  const k = m ? m[1] : 'own';
  byPkg[k] = (byPkg[k] ?? 0) + bytesInOutput;
}
console.log(`${out}/dist/src/cli/main.js: ${statSync(path.join(out, 'dist/src/cli/main.js')).size} bytes, ${Object.keys(inputs).length} inputs`);
console.log(Object.entries(byPkg).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${(v / 1024).toFixed(0)}K`).join(', '));
