// The CRI socket gone, refusing, or hanging (a listener that accepts and never
// answers): every call ends by its deadline with the reason; the agent puts that
// reason in its status, starts no migration it could not finish, keeps answering on
// its socket and stops on SIGTERM. A runtime that lists ovnkube-node but never
// answers StopContainer holds no pass: the loop stays live for systemd's watchdog and
// the liveness probe while the stop waits out its deadline.
import { strict as assert } from 'node:assert';
import { spawnSync } from 'node:child_process';
import { linkSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it, test } from 'node:test';
import { CriClient } from '../../src/cri/client.js';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { fileURLToPath } from 'node:url';
import { CriRestart, criDeadlineMs } from '../../src/restart/strategy.js';
import { curl, waitForStatus, withAgent } from '../helpers/agent.js';
import { NotifyReceiver } from '../helpers/notify-receiver.js';
import { skipWithoutKernel } from '../helpers/netns.js';
import { within } from '../helpers/wait.js';

const LABELS = {
  'io.kubernetes.pod.namespace': 'openshift-ovn-kubernetes',
  'io.kubernetes.container.name': 'ovnkube-node',
};

/** A listener that accepts every connection and never says a word; close() drops them all. */
async function hanging(socket: string): Promise<{ close: () => void }> {
  const held: net.Socket[] = [];
  const server = net.createServer((c) => void held.push(c));
  await new Promise<void>((resolve) => server.listen(socket, () => resolve()));
  return {
    close: () => {
      server.close();
      for (const c of held) c.destroy();
    },
  };
}

/** A socket file nobody listens on: connections to it are refused (ECONNREFUSED). */
async function refusing(socket: string): Promise<void> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(`${socket}.live`, () => resolve()));
  linkSync(`${socket}.live`, socket);
  await new Promise((resolve) => server.close(resolve));
}

test('CRI client: gone, refusing and hanging runtimes each end the call by its deadline, with the reason', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-cri-'));
  const servers: Array<{ close: () => void }> = [];
  try {
    const gone = path.join(dir, 'gone.sock');
    const refused = path.join(dir, 'refusing.sock');
    await refusing(refused);
    const hang = path.join(dir, 'hanging.sock');
    servers.push(await hanging(hang));
    // Something listens, but no gRPC answers: said as gRPC says it, not as a runtime that is not running.
    const closing = path.join(dir, 'closing.sock');
    const closer = net.createServer((c) => c.destroy());
    await new Promise<void>((resolve) => closer.listen(closing, () => resolve()));
    servers.push(closer);
    for (const [socket, expected] of [
      // gRPC's resolver text ("... Resolution note: ") is not passed on: the connect's errno is.
      [
        gone,
        /^CRI ListContainers on .*gone\.sock: cannot connect \(ENOENT\): is the container runtime running, with its socket there\?$/,
      ],
      [
        refused,
        /^CRI ListContainers on .*refusing\.sock: cannot connect \(ECONNREFUSED\): is the container runtime running, with its socket there\?$/,
      ],
      [hang, /^CRI ListContainers on .*hanging\.sock: Deadline exceeded/],
      [
        closing,
        /^CRI ListContainers on .*closing\.sock: unavailable: (?!.*(is the container runtime running|\d{4}-\d\d-\d\dT|Resolution note)).+$/,
      ],
    ] as const) {
      const client = new CriClient(socket, 300);
      try {
        // The bound only keeps a hang from hanging the suite; the client's own deadline must end it.
        await assert.rejects(
          within(client.runningContainers(LABELS), 30_000, `ListContainers on ${socket} ends`),
          (err: Error & { code?: string }) => {
            assert.equal(err.code, 'ERR_GWMODE_CRI');
            assert.match(err.message, expected);
            return true;
          },
        );
      } finally {
        client.close();
      }
    }
    // StopContainer's deadline is the grace period on top: it too ends on a hanging runtime.
    const client = new CriClient(hang, 300);
    try {
      await assert.rejects(
        within(client.stopContainer('abc', 0), 30_000, 'StopContainer ends'),
        /^Error: CRI StopContainer on .*: Deadline exceeded/,
      );
    } finally {
      client.close();
    }
    // The strategy turns the failure into a reason, never a throw.
    const strategy = new CriRestart({
      endpoint: refused,
      namespace: LABELS['io.kubernetes.pod.namespace'],
      container: 'ovnkube-node',
      graceSeconds: 1,
      deadlineMs: 300,
    });
    const found = await strategy.find();
    strategy.close();
    assert.ok('error' in found && /^CRI ListContainers on /.test(found.error), JSON.stringify(found));
  } finally {
    for (const s of servers) s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('CRI deadlines: 10 s, or a quarter of the watchdog when shorter', () => {
  assert.equal(criDeadlineMs(120_000), 10_000);
  assert.equal(criDeadlineMs(30_000), 7_500);
  assert.equal(criDeadlineMs(2_000), 500);
});

test('agent: the CRI socket missing: Waiting on RestartPathBroken alone (no replace is made), lastError says why in words, and /metrics agrees', async (t) => {
  if (skipWithoutKernel(t)) return;
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-cri-'));
  const socket = path.join(dir, 'crio.sock');
  try {
    await withAgent(
      {
        mode: 'local',
        args: ['--service-cidr', '10.96.0.0/16', '--mtu', '1400', '--restart', 'cri', '--cri-endpoint', socket],
      },
      async ({ ns, ovnkube, agent }) => {
        const s = await waitForStatus(agent, (s) => s.reasonCodes[0] === 'RestartPathBroken', 'RestartPathBroken');
        const error = `CRI ListContainers on ${socket}: cannot connect (ENOENT): is the container runtime running, with its socket there?`;
        assert.deepEqual([s.phase, s.reasonCodes, s.lastError], ['Waiting', ['RestartPathBroken'], error]);
        assert.equal(
          s.reasons[0],
          `not starting the migration to local: ovnkube-node could not be restarted afterwards: ${error}`,
        );
        assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400']);
        assert.equal(ovnkube.starts, 1);
        const metrics = spawnSync('curl', ['-sf', '--unix-socket', agent.scratch.socket, 'http://localhost/metrics'], {
          encoding: 'utf8',
        }).stdout;
        const codes = [...metrics.matchAll(/^ovn_gwmode_status_reason\{code="(\w+)"\} 1$/gm)].map((m) => m[1]);
        assert.deepEqual(codes, ['RestartPathBroken']);
      },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// The agent's tests below wait out CRI deadlines (seconds each, the agent idle meanwhile), each
// on its own node, scratch directory and runtime socket: two at a time, the first (the longest)
// beside the other two in turn. Its runtime never answers, so the test process's synchronous
// curls cannot delay it; the other two's runtimes (in this process) answer ListContainers
// within 0.5 s, which only one other test's curl at a time can hold up.
describe('the agent beside a runtime that hangs', { concurrency: 2 }, () => {
  it('agent: a CRI runtime that accepts and never answers: the reason in the status, no migration, the socket answering, SIGTERM stopping it', async (t) => {
    if (skipWithoutKernel(t)) return;
    const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-cri-'));
    const socket = path.join(dir, 'hanging.sock');
    const server = await hanging(socket);
    try {
      await withAgent(
        {
          mode: 'local',
          args: ['--service-cidr', '10.96.0.0/16', '--mtu', '1400', '--restart', 'cri', '--cri-endpoint', socket],
        },
        async ({ ns, ovnkube, agent }) => {
          // While the first pass waits on the runtime the socket answers (the pass has not ended yet).
          await waitForStatus(
            agent,
            () => curl(agent.scratch.socket, '/healthz').code === 200,
            '/healthz while the pass waits on CRI',
          );
          const s = await waitForStatus(agent, (s) => s.reasonCodes[0] === 'RestartPathBroken', 'RestartPathBroken');
          assert.equal(s.phase, 'Waiting');
          assert.match(
            s.reasons[0]!,
            /^not starting the migration to local: ovnkube-node could not be restarted afterwards: CRI ListContainers on .*hanging\.sock: Deadline exceeded/,
          );
          assert.deepEqual(
            ns.routes('10.96.0.0/16'),
            ['10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400'],
            'no migration started',
          );
          assert.equal(ovnkube.starts, 1);
          // The next pass waits on the runtime again: /healthz and /status still answer, and SIGTERM stops it.
          assert.equal(curl(agent.scratch.socket, '/healthz').code, 200);
          assert.equal(curl(agent.scratch.socket, '/status').code, 200);
          agent.child.kill('SIGTERM');
          assert.equal(await within(agent.exited, 30_000, 'the agent stops on SIGTERM'), 0, agent.output.slice(-2000));
        },
      );
    } finally {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  /** A runtime that lists one running ovnkube-node and never answers StopContainer. */
  async function stopHanging(socket: string): Promise<{ stops: () => number; close: () => void }> {
    const proto = fileURLToPath(new URL('../../../src/cri/runtime.proto', import.meta.url));
    const pkg = grpc.loadPackageDefinition(
      protoLoader.loadSync(proto, { keepCase: false, longs: String, enums: String, defaults: true }),
    );
    const service = ((pkg.runtime as grpc.GrpcObject).v1 as grpc.GrpcObject).RuntimeService as unknown as {
      service: grpc.ServiceDefinition;
    };
    const server = new grpc.Server();
    let stops = 0;
    const container = {
      id: 'c0ffee0000000000000001',
      podSandboxId: 'p1',
      metadata: { name: 'ovnkube-node', attempt: 0 },
      state: 'CONTAINER_RUNNING',
      labels: { ...LABELS, 'io.kubernetes.pod.name': 'ovnkube-node-x' },
    };
    server.addService(service.service, {
      ListContainers: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { containers: [container] }),
      StopContainer: () => void stops++,
    });
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
    return { stops: () => stops, close: () => server.forceShutdown() };
  }

  /** A scratch directory and, on its runtime.sock, a runtime whose StopContainer never answers; both gone after fn. */
  async function withStopHanging(
    fn: (c: { dir: string; socket: string; runtime: { stops: () => number } }) => Promise<void>,
  ): Promise<void> {
    const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-cri-'));
    const socket = path.join(dir, 'runtime.sock');
    const runtime = await stopHanging(socket);
    try {
      await fn({ dir, socket, runtime });
    } finally {
      runtime.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }

  it('agent: a restart timeout shorter than a hanging StopContainer: the very container still runs past it, but no second request while the first is under way, and the status says so; SIGTERM then says the request, not a pass, is what it abandons', async (t) => {
    if (skipWithoutKernel(t)) return;
    await withStopHanging(async ({ socket, runtime }) => {
      // The rate limit allows a second request 1 s after the first; the restart timeout is
      // 1 s; the stop hangs 10 s plus the 3 s grace: from 1 s on, decide would ask again.
      await withAgent(
        {
          mode: 'local',
          args: [
            '--service-cidr',
            '10.96.0.0/16',
            '--restart',
            'cri',
            '--cri-endpoint',
            socket,
            '--restart-grace',
            '3',
            '--restart-timeout',
            '1s',
            '--restart-min-interval',
            '1s',
          ],
        },
        async ({ agent }) => {
          const held = await waitForStatus(
            agent,
            (s) => /^a restart request is under way/.test(s.reasons[0] ?? ''),
            'the request said to be under way past the restart timeout',
          );
          assert.equal(held.phase, 'Progressing');
          assert.equal(runtime.stops(), 1, 'no second request while the first is under way');
          assert.ok(
            !agent.logs().some((l) => l.msg === 'a restart request is still under way: not requesting another'),
            'decide never asked for a second one',
          );
          // SIGTERM during the stop: no pass runs, the request is what is still under way, and it is said.
          await agent.stop();
          const msgs = agent.logs().map((l) => String(l.msg));
          assert.ok(
            msgs.some((m) => m.startsWith('a restart request is still under way: exiting cancels the call')),
            msgs.slice(-5).join('\n'),
          );
          assert.ok(!msgs.includes('the pass under way did not finish: abandoning it'));
          assert.equal(
            JSON.parse(readFileSync(path.join(agent.scratch.stateDir, 'migration-journal.json'), 'utf8')).migration
              .restart,
            'requested',
          );
        },
      );
    });
  });

  it('agent: StopContainer never answered: the pass does not wait on it, so the watchdog keeps being pinged and /healthz answers; the stop ends by its deadline as RestartFailed', async (t) => {
    if (skipWithoutKernel(t)) return;
    await withStopHanging(async ({ dir, socket, runtime }) => {
      const receiver = new NotifyReceiver(path.join(dir, 'notify.sock'));
      try {
        await receiver.listening;
        // Watchdog 2 s: ListContainers gets 0.5 s; StopContainer 0.5 s plus the 3 s grace,
        // longer than the watchdog: awaited in the pass, it would withhold the pings.
        await withAgent(
          {
            mode: 'local',
            args: [
              '--service-cidr',
              '10.96.0.0/16',
              '--restart',
              'cri',
              '--cri-endpoint',
              socket,
              '--restart-grace',
              '3',
            ],
            env: { NOTIFY_SOCKET: receiver.address, WATCHDOG_USEC: '2000000' },
          },
          async ({ ns, agent }) => {
            const requested = await waitForStatus(
              agent,
              (s) => s.reasonCodes[0] === 'RestartAwaited' && /^restarted ovnkube-node/.test(s.reasons[0]!),
              'the restart requested',
            );
            assert.equal(requested.phase, 'Progressing');
            assert.equal(runtime.stops(), 1);
            assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 10.244.1.1 dev ovn-k8s-mp0']);
            const mark = receiver.messages.length;
            // While StopContainer hangs: the loop pings the watchdog and /healthz says alive.
            await receiver.waitFor((m) => m === 'WATCHDOG=1', mark, 'a watchdog ping while the stop hangs');
            assert.equal(curl(agent.scratch.socket, '/healthz').code, 200);
            const failed = await waitForStatus(
              agent,
              (s) => s.reasonCodes[0] === 'RestartFailed',
              'the stop ends by its deadline',
            );
            assert.match(failed.reasons[0]!, /CRI StopContainer on .*runtime\.sock: Deadline exceeded/);
            assert.match(failed.lastError ?? '', /^CRI StopContainer on .*runtime\.sock: Deadline exceeded/);
            assert.equal(runtime.stops(), 1, 'one request, failed by its deadline');
            assert.deepEqual(
              receiver.messages.filter((m) => /reconcile loop stuck/.test(m)),
              [],
              'never a stuck loop',
            );
            assert.ok(!agent.logs().some((l) => l.msg === 'reconcile loop stuck: withholding the watchdog ping'));
          },
        );
      } finally {
        receiver.close();
      }
    });
  });
});
