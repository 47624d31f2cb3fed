// The README stays short and points into docs/, and every link of the README and docs/ leads
// somewhere: a file that exists and, for `#anchor` links, a heading of that file. The README's
// quick-start commands are the ones the tested pages hold (docs/operate.md is run by
// test/guide.test.ts), and its commands for the CLI from a clone work as written.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (rel: string) => readFileSync(path.join(ROOT, rel), 'utf8');
const README = read('README.md');
const PAGES = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** Markdown outside fenced code blocks: a `# comment` in a shell block is no heading, a `](` in one no link. */
const prose = (md: string) => md.replace(/^```[\s\S]*?^```/gm, '');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

const anchors = (md: string) => new Set([...prose(md).matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));

/** The relative links of a page: [text](target), resolved from the page's directory. */
function links(page: string): Array<{ target: string; file: string; anchor: string | undefined }> {
  return [...prose(read(page)).matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1]!)
    .filter((t) => !/^[a-z]+:/.test(t))
    .map((t) => {
      const [file, anchor] = t.split('#') as [string, string | undefined];
      return {
        target: t,
        file: file === '' ? page : path.posix.normalize(path.posix.join(path.posix.dirname(page), file)),
        anchor,
      };
    });
}

/** The lines of the first fenced block after `marker`, comments and blank lines dropped. */
function blockAfter(md: string, marker: string): string[] {
  const at = md.indexOf(marker);
  assert.ok(at >= 0, `"${marker}" is there`);
  const block = /```\w*\n([\s\S]*?)```/.exec(md.slice(at))![1]!;
  return block
    .split('\n')
    .map((l) => l.replace(/\s+#.*$/, '').trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

const flat = (s: string) => s.replace(/\s+/g, ' ');

test('the README is at most 250 lines', () => {
  const lines = README.split('\n').length - (README.endsWith('\n') ? 1 : 0);
  assert.ok(lines <= 250, `README.md has ${lines} lines`);
});

test('every docs page the README links to exists (but the two pages written elsewhere)', () => {
  const linked = [
    ...new Set(
      links('README.md')
        .map((l) => l.file)
        .filter((f) => f.startsWith('docs/')),
    ),
  ];
  for (const page of [
    'docs/README.md',
    'docs/install.md',
    'docs/operate.md',
    'docs/status.md',
    'docs/metrics.md',
    'docs/failure-modes.md',
    'docs/benchmarks.md',
    'docs/cli.md',
    'docs/design.md',
  ]) {
    assert.ok(linked.includes(page), `the README links to ${page}`);
  }
  assert.deepEqual(
    linked.filter((f) => !existsSync(path.join(ROOT, f))),
    [],
  );
});

test('every relative link of the README and docs/ leads to a file that exists, and an anchor to a heading of it', () => {
  assert.ok(PAGES.length > 5, `the pages: ${PAGES.join(', ')}`);
  const broken: string[] = [];
  for (const page of PAGES) {
    for (const l of links(page)) {
      if (!existsSync(path.join(ROOT, l.file))) broken.push(`${page}: ${l.target} (no ${l.file})`);
      else if (l.anchor !== undefined && (!l.file.endsWith('.md') || !anchors(read(l.file)).has(l.anchor)))
        broken.push(`${page}: ${l.target} (no heading #${l.anchor})`);
    }
  }
  assert.deepEqual(broken, []);
});

test('the link check itself sees a missing page and a missing heading', () => {
  assert.equal(slug('By hand on one node: plan, apply, rollback'), 'by-hand-on-one-node-plan-apply-rollback');
  assert.equal(slug('The upgrade to 4.10, and removing the agent'), 'the-upgrade-to-410-and-removing-the-agent');
  assert.ok(!anchors('# A\n```sh\n# not a heading\n```\n').has('not-a-heading'));
  assert.deepEqual(links('docs/README.md').filter((l) => l.file === 'docs/status.md').length, 1);
});

/** The src/ and test/ paths a page names (not dist/src/..., native/src/...), trailing punctuation dropped. */
const namedPaths = (md: string): string[] =>
  [...md.matchAll(/(?<![\w./-])(?:src|test)\/[\w./-]*/g)].map((m) => m[0].replace(/[.,:]+$/, ''));

test('every src/ and test/ path the README and docs/ name exists', () => {
  const missing = PAGES.flatMap((page) =>
    namedPaths(read(page))
      .filter((p) => !existsSync(path.join(ROOT, p)))
      .map((p) => `${page}: ${p}`),
  );
  assert.deepEqual(missing, []);
  // The check itself: a path gone is seen, a built or native one is no source path.
  assert.deepEqual(
    namedPaths('see `src/agent/recorder.ts`, test/x.test.ts. Run dist/src/cli/main.js, native/src/memory.c'),
    ['src/agent/recorder.ts', 'test/x.test.ts'],
  );
  assert.equal(existsSync(path.join(ROOT, 'src/agent/recorder.ts')), false);
});

test('every test docs/design.md quotes for a race is a test of the file it names', () => {
  // The titles follow their file in parentheses, on the same line or the next.
  const quoted = [...read('docs/design.md').matchAll(/`(test\/[\w./-]+\.test\.ts)`\s+\(([^)]*)\)/g)];
  assert.ok(quoted.length >= 10, `${quoted.length} files with quoted tests`);
  const flatSource = (file: string) => flat(read(file).replace(/\\'/g, "'"));
  const missing = quoted.flatMap(([, file, titles]) =>
    [...titles!.matchAll(/"([^"]+)"/g)]
      .map((m) => flat(m[1]!))
      .filter((title) => !flatSource(file!).includes(title))
      .map((title) => `${file}: ${title}`),
  );
  assert.deepEqual(missing, []);
});

test('the README and docs/ name no work item ("issue 24", "#31"): their history is in git', () => {
  const workItem = /\bissue \d+|#\d{2}\b/i;
  const named = PAGES.flatMap((page) =>
    read(page)
      .split('\n')
      .map((line, i) => ({ line, at: `${page}:${i + 1}` }))
      .filter(({ line }) => workItem.test(line))
      .map(({ line, at }) => `${at}: ${line.trim()}`),
  );
  assert.deepEqual(named, []);
  // The check itself: a work item is seen, an anchor or a figure is not.
  assert.ok(workItem.test('as issue 24 asked') && workItem.test('see #31'));
  assert.ok(!workItem.test('[the rules](design.md#the-rules) hold 3 of 4 issues'));
});

test("the README's quick start gives the commands of each way to run it within its first 100 lines", () => {
  const head = README.split('\n').slice(0, 100).join('\n');
  for (const command of [
    'kubectl apply -k my-agent', // the OpenShift overlay
    'kubectl apply -k packaging/kubernetes', // the DaemonSet
    'systemctl daemon-reload && systemctl enable --now ovn-gwmode-agent', // the unit
    'dpkg -i dist/deb/', // the Debian package
    'npm install -g ./ovn-gwmode-agent-', // npm
  ]) {
    assert.ok(head.includes(command), command);
  }
});

test("the README's quick-start commands are those of the pages that are tested, with this version's file names", () => {
  const operate = flat(read('docs/operate.md'));
  const install = flat(read('docs/install.md'));
  // OpenShift: every command is the guide's (test/guide.test.ts runs those).
  for (const l of [
    ...blockAfter(README, '**OpenShift 4.8/4.9.**'),
    ...blockAfter(README, 'arm the agents and switch the cluster'),
  ]) {
    assert.ok(operate.includes(l), `docs/operate.md holds ${l}`);
  }
  // The DaemonSet and the unit: as docs/install.md gives them.
  for (const l of [
    ...blockAfter(README, '**A DaemonSet on Kubernetes**'),
    ...blockAfter(README, '**A systemd unit**'),
  ]) {
    assert.ok(install.includes(l), `docs/install.md holds ${l}`);
  }
  // The unit's quick start copies files that exist to where the unit expects the agent.
  const unit = read('systemd/ovn-gwmode-agent.service');
  for (const l of blockAfter(README, '**A systemd unit**').filter((x) => x.startsWith('cp '))) {
    const [, from] = l.split(' ');
    const inRepo = from!.replace('/usr/lib/node_modules/ovn-gwmode-agent/', '');
    assert.ok(existsSync(path.join(ROOT, inRepo)), inRepo);
    assert.match(
      unit,
      /^ExecStart=\/usr\/bin\/node .*\/usr\/lib\/node_modules\/ovn-gwmode-agent\/dist\/src\/cli\/main\.js run$/m,
    );
  }
  const { version } = JSON.parse(read('package.json')) as { version: string };
  assert.ok(README.includes(`dpkg -i dist/deb/ovn-gwmode-agent_${version}_amd64.deb`));
  assert.ok(README.includes(`npm install -g ./ovn-gwmode-agent-${version}.tgz`));
  assert.ok(README.includes(`docker://registry.example.com/ovn-gwmode-agent:${version}`));
});

test("the README's phase table names the phases of docs/status.md's, in the same order", () => {
  const phases = (md: string) =>
    [...prose(md).matchAll(/^\| `(\w+)` \|/gm)]
      .map((m) => m[1]!)
      .filter((c) => /^(Converged|Waiting|Progressing|Degraded)$/.test(c));
  const status = read('docs/status.md');
  const table = status.slice(status.indexOf('## Phases'), status.indexOf('## Reason codes'));
  assert.deepEqual(phases(README), phases(table));
  assert.equal(phases(table).length, 4);
});

test("the DaemonSet's command for switching the mode makes the base's ConfigMap say local", (t: TestContext) => {
  const l = blockAfter(README, '**A DaemonSet on Kubernetes**').find((x) => x.includes('patch configmap'))!;
  const words = [...l.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
  assert.deepEqual(words.slice(0, 6), [
    'kubectl',
    '-n',
    'ovn-gwmode-agent',
    'patch',
    'configmap',
    'ovn-gwmode-agent-mode',
  ]);
  // The base's namespace and ConfigMap are those the command names.
  assert.match(read('packaging/kubernetes/kustomization.yaml'), /^namespace: ovn-gwmode-agent$/m);
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-docs-'));
  try {
    const file = path.join(dir, 'configmap.yaml');
    writeFileSync(file, read('packaging/kubernetes/configmap.yaml'));
    const r = spawnSync(
      'kubectl',
      ['patch', '--local', '-f', file, '--type', 'merge', '-p', words[words.indexOf('-p') + 1]!, '-o', 'yaml'],
      { encoding: 'utf8' },
    );
    if (r.error) {
      process.stderr.write(`SKIPPED (kubectl not installed): ${t.name}\n`);
      t.skip('kubectl not installed');
      return;
    }
    assert.equal(r.status, 0, r.stderr);
    // The agent reads the key `mode` of the mounted volume: exactly `local` is local.
    const made = parseYaml(r.stdout) as { metadata: { name: string }; data: Record<string, string> };
    assert.deepEqual([made.metadata.name, made.data], ['ovn-gwmode-agent-mode', { mode: 'local' }]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * A clone as `git clone` leaves it, in a temporary directory, with the checkout's node_modules
 * (what `npm ci` would install) linked in: no dist/, no native/build.
 */
function scratchClone(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-clone-'));
  const left = new Set(['.git', 'node_modules', 'dist', 'native/build']);
  cpSync(ROOT, dir, { recursive: true, filter: (from) => !left.has(path.relative(ROOT, from)) });
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  return dir;
}

test("the README's commands for the CLI from a clone run it, with no network; npx builds the clone it is run in, the first time only", () => {
  const lines = blockAfter(README, '## The CLI from a clone');
  assert.deepEqual(
    lines.map((l) => l.split(' ').slice(0, 2).join(' ')),
    ['node dist/src/cli/main.js', 'npx ovn-gwmode-agent'],
  );
  // npx links the clone into its cache and runs the package's install (node-gyp rebuild, which
  // deletes native/build first) and prepare (tsc) scripts in it: never in the checkout under
  // test, where the test file running beside this one loads the addon. In a clone of its own,
  // with a cache of its own, so the first run is a first run.
  const clone = scratchClone();
  try {
    const addon = path.join(clone, 'native/build/Release/gwmode_native.node');
    for (const [l, cwd] of [
      [lines[0]!, ROOT],
      [lines[1]!, clone],
      [lines[1]!, clone],
    ] as const) {
      const built = existsSync(addon) ? statSync(addon, { bigint: true }).mtimeNs : null;
      // As written, with --help for the command's arguments: the same program, no agent needed.
      const command = `${l.replace(/ status --brief$/, '').replace(/^npx /, 'npx --offline ')} --help`;
      const r = spawnSync('bash', ['-c', command], {
        cwd,
        encoding: 'utf8',
        timeout: 300_000,
        env: { ...process.env, npm_config_cache: path.join(clone, '.npm-cache') },
      });
      assert.equal(r.status, 0, `${command}: ${r.stderr}`);
      assert.match(r.stdout, /ovn-gwmode-agent status +ask a running agent how the node is/, command);
      if (built !== null) assert.equal(statSync(addon, { bigint: true }).mtimeNs, built, 'a later npx builds nothing');
    }
    assert.ok(existsSync(addon), 'the first npx built the addon in the clone');
  } finally {
    rmSync(clone, { recursive: true, force: true });
  }
});
