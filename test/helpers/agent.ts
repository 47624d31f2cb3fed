// Runs the real agent (dist/src/cli/main.js) inside a test namespace, with a
// stand-in ovnkube-node process, and asks it for its status (curl() with real curl, waitForStatus through the CLI's client).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { FakeOvnkube as DemoOvnkube, type FakeOptions } from '../../src/demo/fake-ovnkube.js';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { StatusReport } from '../../src/status/report.js';
import { fetchPath } from '../../src/status/client.js';
import { seedNode, type Netns, type SeedNodeOptions } from './netns.js';

export const CLI = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
/**
 * The host's os-release of an RHCOS 4.9 node: every agent and one-shot command the helpers
 * start is given it (--os-release, OVN_GWMODE_OS_RELEASE), so that the seed node is a node
 * the agent knows to be 4.8/4.9. A test about detection passes its own.
 */
export const RHCOS_49_OS_RELEASE = fileURLToPath(
  new URL('../../../test/fixtures/os-release-rhcos-4.9', import.meta.url),
);
/** The agent with faults wrapped around its parts (GWMODE_FAULT); see the fixture. */
export const FAULTY = fileURLToPath(new URL('../fixtures/agent-with-faults.js', import.meta.url));

/** Root without CAP_SYS_PTRACE: /proc/PID/ns/net of a process with more capabilities is refused (EACCES). */
export const DROP_PTRACE = ['setpriv', '--bounding-set=-sys_ptrace', '--inh-caps=-sys_ptrace', '--'];

let noPidfdBinary: string | undefined;

/** The launcher under which pidfd_open fails ENOSYS (test/fixtures/no-pidfd.c), built on first use. */
export function noPidfd(): string[] {
  if (!noPidfdBinary) {
    const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-no-pidfd-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const binary = path.join(dir, 'no-pidfd');
    const src = fileURLToPath(new URL('../../../test/fixtures/no-pidfd.c', import.meta.url));
    const cc = spawnSync('cc', ['-O2', '-Wall', '-Wextra', '-Werror', '-o', binary, src], { encoding: 'utf8' });
    if (cc.status !== 0) throw new Error(`building no-pidfd failed: ${cc.stderr}`);
    noPidfdBinary = binary;
  }
  return [noPidfdBinary];
}

/** The demo's ovnkube-node stand-in, counting its starts. */
export class FakeOvnkube extends DemoOvnkube {
  /** How many processes were started. */
  starts = 0;

  override start(mode: string, options: FakeOptions = {}): void {
    this.starts++;
    super.start(mode, options);
  }
}

/** A scratch directory for one test: mode file, socket, state dir. */
export class Scratch {
  readonly dir = mkdtempSync(path.join(tmpdir(), 'gwmode-test-'));
  readonly modeFile = path.join(this.dir, 'mode');
  readonly socket = path.join(this.dir, 'run', 'agent.sock');
  readonly stateDir = path.join(this.dir, 'state');

  /** Set once an AgentProcess runs on this scratch directory. */
  agentStarted = false;

  /**
   * Writes the mode file. Before any agent started here, the file is written as one put in
   * place beforehand and left alone: its mtime a minute back, so the agent takes it at once
   * instead of waiting the 200 ms a plain file must stay untouched (src/mode/settled.ts).
   * Once an agent runs, a write is an admin's edit under its watch and keeps its mtime: the
   * agent's own rule applies (and it reads the file again once settled, so a second write
   * soon after the first, which the file watch may not report, is read all the same).
   */
  writeMode(content: string): void {
    writeFileSync(this.modeFile, content);
    if (this.agentStarted) return;
    const past = new Date(Date.now() - 60_000);
    utimesSync(this.modeFile, past, past);
  }

  remove(): void {
    rmSync(this.dir, { recursive: true, force: true });
  }
}

export class AgentProcess {
  readonly child: ChildProcess;
  output = '';
  exited: Promise<number | null>;

  constructor(
    ns: Netns,
    readonly scratch: Scratch,
    args: string[],
    env: NodeJS.ProcessEnv = {},
    entry = CLI,
    /** A command the agent runs under (e.g. noPidfd()'s launcher). */
    launcher: string[] = [],
  ) {
    scratch.agentStarted = true;
    this.child = spawn(
      'ip',
      [
        'netns',
        'exec',
        ns.name,
        ...launcher,
        process.execPath,
        entry,
        'run',
        '--mode-file',
        scratch.modeFile,
        '--socket',
        scratch.socket,
        '--state-dir',
        scratch.stateDir,
        '--resync-interval',
        '2',
        '--log-level',
        'debug',
        ...(args.includes('--restart') ? [] : ['--restart', 'signal']),
        ...(args.includes('--settle') ? [] : ['--settle', '0']),
        ...(args.includes('--os-release') ? [] : ['--os-release', RHCOS_49_OS_RELEASE]),
        ...args,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } },
    );
    this.child.stdout!.on('data', (d: Buffer) => (this.output += d.toString()));
    this.child.stderr!.on('data', (d: Buffer) => (this.output += d.toString()));
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
  }

  /** JSON log lines the agent wrote. */
  logs(): Array<Record<string, unknown>> {
    return this.output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null) this.child.kill('SIGTERM');
    await this.exited;
  }
}

/** GET a path on the agent's socket with curl; returns the HTTP code and the parsed body. */
export function curl(socket: string, urlPath: string, method = 'GET'): { code: number; body: unknown } {
  const r = spawnSync(
    'curl',
    ['-s', '-X', method, '-w', '\n%{http_code}', '--unix-socket', socket, `http://localhost${urlPath}`],
    { encoding: 'utf8' },
  );
  const lines = r.stdout.trimEnd().split('\n');
  const code = Number(lines.pop());
  const text = lines.join('\n');
  return { code, body: text ? (JSON.parse(text) as unknown) : null };
}

export function status(socket: string): StatusReport | undefined {
  const r = curl(socket, '/status');
  return r.code === 200 ? (r.body as StatusReport) : undefined;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls the status until pred holds. The bound is a safety net against a hung test,
 * not a speed assertion: the agent reacts to events, and resyncs every 2 s here.
 */
export async function waitForStatus(
  agent: AgentProcess,
  pred: (s: StatusReport) => boolean,
  what: string,
): Promise<StatusReport> {
  let last: StatusReport | undefined;
  let lastError = '';
  // Looks every 20 ms for the first second, then every 50 ms, for up to 40 s (a safety net, not a
  // speed assertion). Through the CLI's own client (node:http in this process), not curl: a curl
  // process per look was a tenth of the CPU of a test that waits on many agents. The tests of what
  // curl gets keep curl. Not there yet (no socket, nobody listening, a full backlog) is waited out;
  // any other failure (a bad answer) is the test's.
  for (let i = 0, deadline = performance.now() + 40_000; performance.now() < deadline; i++) {
    try {
      const r = await fetchPath(agent.scratch.socket, '/status');
      last = r.code === 200 ? (r.body as StatusReport) : undefined;
      lastError = r.code === 200 ? '' : `HTTP ${r.code}: ${JSON.stringify(r.body)}`;
    } catch (err) {
      const message = (err as Error).message;
      if (!/\((ENOENT|ECONNREFUSED|EAGAIN)\)/.test(message))
        throw new Error(`waiting for ${what}: ${message}\nagent output:\n${agent.output.slice(-4000)}`, { cause: err });
      last = undefined;
      lastError = message;
    }
    if (last && pred(last)) return last;
    if (agent.child.exitCode !== null) break;
    await pause(i < 50 ? 20 : 50);
  }
  throw new Error(
    `never saw ${what}; last status: ${lastError || JSON.stringify(last, null, 2)}\nagent output:\n${agent.output.slice(-4000)}`,
  );
}

/** Runs the CLI once (not as a daemon) in the namespace, on an RHCOS 4.9 node unless --os-release or env says otherwise. */
export function cli(
  ns: Netns,
  args: string[],
  env: NodeJS.ProcessEnv = {},
  /** A command the CLI runs under (e.g. DROP_PTRACE). */
  launcher: string[] = [],
): { code: number | null; stdout: string; stderr: string } {
  const full = { OVN_GWMODE_OS_RELEASE: RHCOS_49_OS_RELEASE, ...process.env, ...env };
  const r = spawnSync('ip', ['netns', 'exec', ns.name, ...launcher, process.execPath, CLI, ...args], {
    encoding: 'utf8',
    env: full,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

export interface AgentCtx {
  ns: Netns;
  scratch: Scratch;
  ovnkube: FakeOvnkube;
  agent: AgentProcess;
}

export interface NodeCtx {
  ns: Netns;
  scratch: Scratch;
  ovnkube: FakeOvnkube;
  /** Starts an agent on this node; every agent started is stopped at the end. */
  startAgent(args: string[], env?: NodeJS.ProcessEnv, entry?: string): AgentProcess;
}

/**
 * A seed node, a scratch directory and a stand-in ovnkube-node (not started), with the
 * agents fn starts on them; all torn down after fn, agents first.
 */
export async function withNode(node: SeedNodeOptions, fn: (c: NodeCtx) => Promise<void>): Promise<void> {
  const ns = seedNode(node);
  const scratch = new Scratch();
  const ovnkube = new FakeOvnkube(ns, scratch.dir);
  const agents: AgentProcess[] = [];
  try {
    await fn({
      ns,
      scratch,
      ovnkube,
      startAgent: (args, env, entry) => {
        const agent = new AgentProcess(ns, scratch, args, env, entry);
        agents.push(agent);
        return agent;
      },
    });
  } finally {
    for (const agent of agents) await agent.stop();
    ovnkube.stop();
    ns.destroy();
    scratch.remove();
  }
}

/** A seed node, a stand-in ovnkube-node, a mode file and the agent; all torn down after fn. */
export async function withAgent(
  opts: {
    node?: SeedNodeOptions;
    mode?: string;
    ovnkube?: string | null;
    fake?: FakeOptions;
    args?: string[];
    env?: NodeJS.ProcessEnv;
    setup?: (ns: Netns, scratch: Scratch) => void;
  },
  fn: (c: AgentCtx) => Promise<void>,
): Promise<void> {
  await withNode(opts.node ?? { gw0: true }, async ({ ns, scratch, ovnkube, startAgent }) => {
    opts.setup?.(ns, scratch);
    if (opts.mode !== undefined) scratch.writeMode(opts.mode);
    // The stand-in plays kubelet by default: the agent's SIGTERM is followed by a new ovnkube-node.
    if (opts.ovnkube !== null) ovnkube.start(opts.ovnkube ?? 'local', opts.fake ?? { respawn: true });
    const agent = startAgent(opts.args ?? ['--service-cidr', '10.96.0.0/16', '--mtu', '1400'], opts.env);
    await fn({ ns, scratch, ovnkube, agent });
  });
}
