// The command line is declared once (src/cli/options.ts), and --help is made from it;
// docs/cli.md and the manual page ovn-gwmode-agent(8) are kept by hand: both must name
// every command, flag, variable and exit code of it, and nothing it does not have; and
// the page renders cleanly.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CHOICES, resolveSettings, type RawRunOptions } from '../../src/config/settings.js';
import {
  COMMAND_OPTIONS,
  COMMAND_SPECS,
  COMMANDS,
  EXIT_STATUS,
  FLAGS,
  variableOf,
  type Command,
} from '../../src/cli/options.js';
import { CLI } from '../helpers/agent.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const MAN = path.join(ROOT, 'packaging/man/ovn-gwmode-agent.8');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
/** Text as a reader sees it wrapped anywhere: one space between words. */
const flat = (text: string) => text.replace(/\s+/g, ' ');

function help(...args: string[]): string {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('OVN_GWMODE_')));
  const r = spawnSync(process.execPath, [CLI, ...args, '--help'], { encoding: 'utf8', env });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

const BUILTIN_FLAGS = ['help', 'version'];
/** The variable of a flag: `run`'s flags have one, the others none. */
const variableFor = (flag: string) => (Object.hasOwn(COMMAND_OPTIONS.run, flag) ? variableOf(flag) : null);
const VARIABLES = Object.keys(COMMAND_OPTIONS.run).map(variableOf);

const helpFlags = (text: string) => [...text.matchAll(/^ {2}--([a-z-]+)/gm)].map((m) => m[1]!).sort();

const has = (t: TestContext, tool: string): boolean => {
  if (spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0) return true;
  process.stderr.write(`SKIPPED (${tool} is not installed): ${t.name}\n`);
  t.skip(`${tool} is not installed`);
  return false;
};

/** The manual page as text, no hyphenation or overstrikes: what `man` shows, for searching. */
function manText(): string {
  const r = spawnSync('groff', ['-man', '-Tascii', '-P-cbou', MAN], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

/** The part of a page from `start` to the next `end` (or its end). */
function section(text: string, start: RegExp, end: RegExp): string {
  const m = start.exec(text);
  assert.ok(m, `${start} is in the page`);
  const rest = text.slice(m.index + m[0].length);
  const to = rest.search(end);
  return to < 0 ? rest : rest.slice(0, to);
}

test("--help ends with where the manual is: `man ovn-gwmode-agent` once installed, and the page's path in a clone, which `man` opens there", (t) => {
  assert.deepEqual(help().trimEnd().split('\n').slice(-2), [
    'every command and flag: man ovn-gwmode-agent',
    'from a clone: man ./packaging/man/ovn-gwmode-agent.8 (or docs/cli.md)',
  ]);
  if (!has(t, 'man')) return;
  // man-db opens a path given with a slash as that file: the page as `man ovn-gwmode-agent` shows it.
  const r = spawnSync('man', ['./packaging/man/ovn-gwmode-agent.8'], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, MANPAGER: 'cat', PAGER: 'cat', MANWIDTH: '100' },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.match(flat(r.stdout), /ovn-gwmode-agent - move OVN-Kubernetes service routes/);
});

test('each command in --help, docs/cli.md and the manual page: its summary, exactly its flags, its conflicts and exactly its exit codes', (t) => {
  const top = flat(help());
  const md = read('docs/cli.md');
  const man = groffOk(t) ? section(manText(), /^COMMANDS$/m, /^[A-Z]/m) : null;
  assert.deepEqual(
    [...top.matchAll(/ovn-gwmode-agent ([a-z]+) /g)]
      .map((m) => m[1])
      .filter((c) => c !== undefined && (COMMANDS as readonly string[]).includes(c)),
    [...COMMANDS],
  );
  for (const [code, meaning] of Object.entries(EXIT_STATUS))
    assert.ok(top.includes(`${code} ${meaning}`), `top-level --help: exit ${code}`);
  for (const command of COMMANDS) {
    const spec = COMMAND_SPECS[command];
    const text = help(command);
    // The flags yargs declares for the command are the reference's, and its own two.
    assert.deepEqual(helpFlags(text), [...spec.flags, ...BUILTIN_FLAGS].sort(), `${command} --help`);
    assert.ok(top.includes(spec.summary), `${command}'s summary in the top-level --help`);
    const exits = Object.entries(spec.exits).map(([code, meaning]) => `${code} ${meaning}`);
    for (const e of exits) assert.ok(flat(text).includes(e), `${command} --help: exit ${e}`);

    const mdPart = section(md, new RegExp(`^### ${command}$`, 'm'), /^##/m);
    const manPart =
      man === null ? null : flat(section(man, new RegExp(`^ {7}${command}\\b`, 'm'), /^ {7}[a-z]+(\s|$)/m));
    for (const part of [mdPart, manPart]) {
      if (part === null) continue;
      const where = part === mdPart ? `docs/cli.md, ${command}` : `the manual page, ${command}`;
      assert.ok(flat(part).toLowerCase().includes(spec.summary.toLowerCase()), `${where}: summary`);
      const listed = /Flags: ([^.]*)\./.exec(flat(part))?.[1] ?? '';
      assert.deepEqual(
        [...listed.matchAll(/--([a-z-]+)/g)].map((m) => m[1]!).sort(),
        [...spec.flags].sort(),
        `${where}: its flags`,
      );
      const codes =
        part === mdPart
          ? [...mdPart.matchAll(/^\| (\d) \|/gm)].map((m) => m[1])
          : [...(/Exit status: (.*)$/.exec(flat(part))?.[1] ?? '').matchAll(/(?:^|; )(\d) /g)].map((m) => m[1]);
      assert.deepEqual(codes, Object.keys(spec.exits), `${where}: its exit codes`);
      for (const [a, b] of spec.conflicts ?? [])
        assert.match(
          flat(part),
          new RegExp(`--${a}\`? and \`?--${b}\`? exclude each other`, 'i'),
          `${where}: --${a} and --${b}`,
        );
      for (const [code, meaning] of Object.entries(spec.exits)) {
        assert.ok(
          part === mdPart
            ? mdPart.includes(`| ${code} | ${meaning.replaceAll('*', '\\*')} |`)
            : flat(part).includes(`${code} ${meaning}`),
          `${where}: exit ${code}`,
        );
      }
    }
  }
});

test("every flag's entry in docs/cli.md and the manual page: its value, default, variable and choices", (t) => {
  const md = read('docs/cli.md');
  const man = groffOk(t) ? flat(section(manText(), /^OPTIONS$/m, /^[A-Z]/m)) : null;
  for (const [flag, spec] of Object.entries(FLAGS) as Array<
    [string, { default?: unknown; defaultDescription?: string }]
  >) {
    const row = md.split('\n').find((l) => new RegExp(`^\\| \`--${flag}( [^\`]+)?\``).test(l));
    assert.ok(row, `docs/cli.md has a row for --${flag}`);
    const variable = variableFor(flag);
    assert.equal(row.includes(`\`${variable}\``), variable !== null, `--${flag}'s variable in docs/cli.md`);
    const choices = Object.keys((CHOICES as Record<string, object>)[flag] ?? {});
    for (const c of choices) assert.ok(row.includes(`\`${c}\``), `--${flag}'s choice ${c} in docs/cli.md`);
    const def = spec.defaultDescription ?? (spec.default === undefined ? undefined : String(spec.default));
    if (def !== undefined) assert.ok(row.includes(`| ${def} |`), `--${flag}'s default in docs/cli.md`);
    if (man === null) continue;
    const at = man.search(new RegExp(` --${flag}( [^ a-z][^ ]*)? [A-Za-z]`));
    assert.ok(at >= 0, `the manual page has an entry for --${flag}`);
    const entry = man.slice(at);
    const own = entry.slice(0, entry.indexOf(' Commands: '));
    if (variable !== null) assert.ok(own.includes(`Variable: ${variable}.`), `--${flag}'s variable in the manual page`);
    for (const c of choices) assert.ok(own.includes(` ${c}`), `--${flag}'s choice ${c} in the manual page`);
    if (def !== undefined) assert.ok(own.includes(`Default: ${def}.`), `--${flag}'s default in the manual page`);
  }
});

/** groff is there, or the test says loudly that it skips the manual page. */
function groffOk(t: TestContext): boolean {
  return has(t, 'groff');
}

test('the manual page renders without a warning (groff -ww, and man --warnings as `man -l` does)', (t) => {
  if (!groffOk(t)) return;
  const groff = spawnSync('groff', ['-man', '-ww', '-z', MAN], { encoding: 'utf8' });
  assert.deepEqual({ status: groff.status, stderr: groff.stderr }, { status: 0, stderr: '' });
  for (const section of [
    'NAME',
    'SYNOPSIS',
    'DESCRIPTION',
    'COMMANDS',
    'OPTIONS',
    'ENVIRONMENT',
    'EXIT STATUS',
    'FILES',
    'SEE ALSO',
  ]) {
    assert.match(manText(), new RegExp(`^${section}$`, 'm'), section);
  }
  if (!has(t, 'man')) return;
  // A narrow terminal too: a flag or path longer than its line would be a warning.
  for (const width of ['60', '80', '132']) {
    const man = spawnSync('man', ['--warnings', '-l', '-P', 'cat', MAN], {
      encoding: 'utf8',
      env: { ...process.env, MANWIDTH: width },
    });
    assert.deepEqual({ status: man.status, stderr: man.stderr }, { status: 0, stderr: '' }, `MANWIDTH=${width}`);
    assert.match(man.stdout, /^OVN-GWMODE-AGENT\(8\)/);
  }
});

test('the choices the reference lists are exactly the ones the settings accept', async () => {
  const camel = (f: string) => f.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
  const defaults = Object.fromEntries(
    Object.entries(COMMAND_OPTIONS.run).flatMap(([f, o]) => (o.default === undefined ? [] : [[camel(f), o.default]])),
  );
  const base = {
    ...defaults,
    modeFile: '/nonexistent/mode',
    serviceCidr: ['10.96.0.0/16'],
  } as unknown as RawRunOptions;
  assert.deepEqual(Object.keys(CHOICES), ['layout', 'ovnkube-mode-check', 'log-level', 'restart']);
  for (const [flag, choices] of Object.entries(CHOICES)) {
    assert.ok(Object.hasOwn(COMMAND_OPTIONS.run, flag), flag);
    await assert.rejects(resolveSettings({ ...base, [camel(flag)]: 'bogus' }), {
      message: `--${flag}: "bogus" is not one of ${Object.keys(choices).join(', ')}`,
    });
    for (const choice of Object.keys(choices)) await resolveSettings({ ...base, [camel(flag)]: choice });
  }
});

test('every declared flag belongs to some command', () => {
  const used = new Set<string>(COMMANDS.flatMap((c: Command) => COMMAND_SPECS[c].flags));
  assert.deepEqual(
    Object.keys(FLAGS).filter((f) => !used.has(f)),
    [],
  );
});

test('docs/cli.md and the manual page name no command, flag or variable the CLI does not have, and list every variable', (t) => {
  const md = read('docs/cli.md');
  const pages: Array<[string, string]> = [['docs/cli.md', md]];
  if (groffOk(t)) pages.push(['the manual page', manText()]);
  const flags = new Set([...Object.keys(FLAGS), ...BUILTIN_FLAGS]);
  for (const [where, text] of pages) {
    // `--flag=WORD` is how a boolean takes a value, for any of them.
    for (const [, flag] of flat(text).matchAll(/(?<![\w-])--([a-z][a-z-]*)/g))
      assert.ok(flags.has(flag!) || flag === 'flag', `${where}: --${flag} is no flag`);
    // OVN_GWMODE_* and OVN_GWMODE_<FLAG...> stand for all of them.
    for (const [variable] of text.matchAll(/OVN_GWMODE_[A-Z][A-Z_]*/g))
      assert.ok(VARIABLES.includes(variable), `${where}: ${variable} is no variable`);
  }
  assert.deepEqual(
    [...md.matchAll(/^### ([a-z]+)$/gm)].map((m) => m[1]),
    [...COMMANDS],
    'docs/cli.md: a section per command, and only those',
  );
  assert.deepEqual(
    [...section(md, /^## Flags$/m, /^## /m).matchAll(/^\| `--([a-z-]+)/gm)].map((m) => m[1]).sort(),
    [...flags].sort(),
    'docs/cli.md: a row per flag, and only those',
  );
  assert.deepEqual(
    [...section(md, /^## Exit status$/m, /^## /m).matchAll(/^\| (\d) \| (.*) \|$/gm)].map((m) => [m[1], m[2]]),
    Object.entries(EXIT_STATUS),
    'docs/cli.md: the exit codes',
  );
  if (pages.length < 2) return;
  const man = manText();
  assert.deepEqual(
    [...section(man, /^ENVIRONMENT$/m, /^[A-Z]/m).matchAll(/^ {7}(OVN_GWMODE_[A-Z_]+) \(--/gm)].map((m) => m[1]),
    VARIABLES,
    "the manual page's ENVIRONMENT: every variable, and only those",
  );
  assert.deepEqual(
    [...section(man, /^EXIT STATUS$/m, /^[A-Z]/m).matchAll(/^ {7}(\d)\s+(.*)$/gm)].map((m) => m[1]),
    Object.keys(EXIT_STATUS),
    "the manual page's EXIT STATUS",
  );
  assert.deepEqual(
    [...section(man, /^COMMANDS$/m, /^[A-Z]/m).matchAll(/^ {7}([a-z]+)\b/gm)].map((m) => m[1]),
    [...COMMANDS],
    "the manual page's COMMANDS: every command, and only those",
  );
});
