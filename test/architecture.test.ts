// The shape of the code, checked on the TypeScript sources (type-only imports
// included): no import cycle anywhere, the pure core imports only itself and the
// address helpers, no file is over 400 lines, and only the entries end the process.
// `npm run imports` shows the cycle check by hand.
import { strict as assert } from 'node:assert';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import madge from 'madge';
import ts from 'typescript';

const root = fileURLToPath(new URL('../../', import.meta.url));

test('the import graph of src/ has no cycle, and src/core imports nothing but src/core and src/net', async () => {
  const graph = await madge(`${root}src`, { fileExtensions: ['ts'], tsConfig: `${root}tsconfig.json` });
  assert.deepEqual(graph.circular(), []);
  const core = Object.entries(graph.obj()).filter(([file]) => file.startsWith('core/'));
  assert.ok(core.length >= 5, `core modules found: ${core.map(([f]) => f).join(', ')}`);
  for (const [file, deps] of core) {
    assert.deepEqual(
      deps.filter((d) => !d.startsWith('core/') && !d.startsWith('net/')),
      [],
      `${file} reaches outside the core`,
    );
  }
});

// Imports that cost the daemon and each probe RSS for life (docs/benchmarks.md): a CommonJS
// package (on Node 20, the first such import sets up Node's export lexer; src/require.ts
// loads them) and node:http (on Node 24, its namespace loads undici; process.getBuiltinModule
// takes it).
test('src/ imports no CommonJS package and not node:http (type-only imports aside)', () => {
  const files = readdirSync(`${root}src`, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  assert.ok(files.length > 50, `${files.length} modules`);
  const offenders: string[] = [];
  for (const file of files) {
    const text = readFileSync(`${root}src/${file}`, 'utf8');
    // Static imports and re-exports (not type-only), bare imports, and dynamic import(), either quote.
    const specs = [
      ...text.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^;]*?\sfrom\s+(['"])([^'"]+)\1/gms),
      ...text.matchAll(/^\s*import\s+(['"])([^'"]+)\1/gm),
      // import() in a type (typeof import(...), import(...).Name, a `type` alias) loads nothing.
      ...text
        .split('\n')
        .filter((line) => !/^\s*(?:export\s+)?type\s/.test(line))
        .join('\n')
        .matchAll(/(?<!typeof\s+)\bimport\(\s*(['"])([^'"]+)\1\s*\)(?!\.)/g),
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

/** Every TypeScript file under src/, by its path below src/. */
function sourceFiles(): Array<{ file: string; text: string }> {
  return readdirSync(`${root}src`, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((file) => ({ file, text: readFileSync(`${root}src/${file}`, 'utf8') }));
}

/** Known offenders, each to leave this list with the change that ends its offence (issue 24). */
const OVERSIZE_EXCEPTIONS = new Set<string>([]);

const MAX_LINES = 400;

test(`no file under src/ is over ${MAX_LINES} lines (a file is read in one sitting; issue 24 aims at about 300)`, () => {
  const lines = (text: string) => text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  const over = sourceFiles()
    .filter((f) => lines(f.text) > MAX_LINES)
    .map((f) => `${f.file} (${lines(f.text)})`);
  assert.deepEqual(
    over.filter((f) => !OVERSIZE_EXCEPTIONS.has(f.split(' ')[0]!)),
    [],
  );
  const stale = [...OVERSIZE_EXCEPTIONS].filter((e) => !over.some((f) => f.startsWith(`${e} `)));
  assert.deepEqual(stale, [], 'known exceptions that no longer offend: take them off OVERSIZE_EXCEPTIONS');
});

// The process ends in its entry only: a module that exits cannot be tested, composed or
// cleaned up after (issue 24, item 3). The demo's entry is an entry too: `npm run demo`
// runs dist/src/demo/demo.js as a program, and it is left out of the package; the demo's
// other modules are libraries and may not exit.
const EXIT_ALLOWED = new Set(['cli/main.ts', 'demo/demo.ts']);
/** Known offenders: none left since the CLI's commands return their result (src/cli/exit-codes.ts). */
const EXIT_EXCEPTIONS = new Set<string>([]);

test("process.exit stands only in the entries, src/cli/main.ts and the demo's src/demo/demo.ts", () => {
  // A call, a reference (`exit: process.exit`), an index or a destructuring of process; not exitCode.
  const exits = /\bprocess\s*(?:\.\s*exit\b(?!Code)|\[\s*['"`]exit['"`]\s*\])|\{[^}]*\bexit\b[^}]*\}\s*=\s*process\b/;
  const offenders = sourceFiles()
    .filter((f) => !EXIT_ALLOWED.has(f.file) && exits.test(f.text))
    .map((f) => f.file);
  assert.deepEqual(
    offenders.filter((f) => !EXIT_EXCEPTIONS.has(f)),
    [],
  );
  const stale = [...EXIT_EXCEPTIONS].filter((e) => !offenders.includes(e));
  assert.deepEqual(stale, [], 'known exceptions that no longer exit: take them off EXIT_EXCEPTIONS');
});

// issue 24: the owner loop is parts (src/agent/scheduler.ts, inputs.ts, journal-keeper.ts, engine.ts,
// execute.ts), each owning its state; the Agent keeps a few fields.
test('the Agent class keeps at most 15 fields (constructor parameter properties included)', () => {
  const file = `${root}src/agent/agent.ts`;
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const agent = source.statements.find(
    (s): s is ts.ClassDeclaration => ts.isClassDeclaration(s) && s.name?.text === 'Agent',
  );
  assert.ok(agent, 'class Agent in src/agent/agent.ts');
  const fields = agent.members.filter(ts.isPropertyDeclaration).map((m) => m.name.getText(source));
  const ctor = agent.members.find(ts.isConstructorDeclaration);
  const params = (ctor?.parameters ?? [])
    .filter((p) => (ts.getModifiers(p) ?? []).length > 0)
    .map((p) => p.name.getText(source));
  const all = [...fields, ...params];
  assert.ok(all.length >= 5, `fields found: ${all.join(', ')}`);
  assert.ok(all.length <= 15, `${all.length} fields: ${all.join(', ')}`);
});

test('src/metrics and src/events import nothing from src/agent: they depend on src/core/recorder.ts, below the agent', async () => {
  const graph = await madge(`${root}src`, { fileExtensions: ['ts'], tsConfig: `${root}tsconfig.json` });
  const views = Object.entries(graph.obj()).filter(
    ([file]) => file.startsWith('metrics/') || file.startsWith('events/'),
  );
  assert.ok(views.length >= 4, `modules found: ${views.map(([f]) => f).join(', ')}`);
  const upward = views.flatMap(([file, deps]) =>
    deps.filter((d) => d.startsWith('agent/')).map((d) => `${file} -> ${d}`),
  );
  assert.deepEqual(upward, []);
});
