// The CRI socket gone, refusing, or hanging (a listener that accepts and never
// answers): every call ends by its deadline with the reason; the agent puts that
// reason in its status, starts no migration it could not finish, keeps answering on
// its socket and stops on SIGTERM.
import { strict as assert } from 'node:assert';
import { linkSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { CriClient } from '../../src/cri/client.js';
import { CriRestart } from '../../src/restart/strategy.js';
import { curl, waitForStatus, withAgent } from '../helpers/agent.js';
import { skipWithoutKernel } from '../helpers/netns.js';
import { within } from '../helpers/wait.js';

const LABELS = { 'io.kubernetes.pod.namespace': 'openshift-ovn-kubernetes', 'io.kubernetes.container.name': 'ovnkube-node' };

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
    for (const [socket, expected] of [
      [gone, /^CRI ListContainers on .*gone\.sock: /],
      [refused, /^CRI ListContainers on .*refusing\.sock: /],
      [hang, /^CRI ListContainers on .*hanging\.sock: Deadline exceeded/],
    ] as const) {
      const client = new CriClient(socket, 300);
      try {
        // The bound only keeps a hang from hanging the suite; the client's own deadline must end it.
        await assert.rejects(within(client.runningContainers(LABELS), 30_000, `ListContainers on ${socket} ends`), (err: Error & { code?: string }) => {
          assert.equal(err.code, 'ERR_GWMODE_CRI');
          assert.match(err.message, expected);
          return true;
        });
      } finally {
        client.close();
      }
    }
    // StopContainer's deadline is the grace period on top: it too ends on a hanging runtime.
    const client = new CriClient(hang, 300);
    try {
      await assert.rejects(within(client.stopContainer('abc', 0), 30_000, 'StopContainer ends'), /^Error: CRI StopContainer on .*: Deadline exceeded/);
    } finally {
      client.close();
    }
    // The strategy turns the failure into a reason, never a throw.
    const strategy = new CriRestart({ endpoint: refused, namespace: LABELS['io.kubernetes.pod.namespace'], container: 'ovnkube-node', graceSeconds: 1 });
    const found = await strategy.find();
    strategy.close();
    assert.ok('error' in found && /^CRI ListContainers on /.test(found.error), JSON.stringify(found));
  } finally {
    for (const s of servers) s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('agent: a CRI runtime that accepts and never answers: the reason in the status, no migration, the socket answering, SIGTERM stopping it', async (t) => {
  if (skipWithoutKernel(t)) return;
  const dir = mkdtempSync(path.join(tmpdir(), 'gwmode-cri-'));
  const socket = path.join(dir, 'hanging.sock');
  const server = await hanging(socket);
  try {
    await withAgent(
      { mode: 'local', args: ['--service-cidr', '10.96.0.0/16', '--mtu', '1400', '--restart', 'cri', '--cri-endpoint', socket] },
      async ({ ns, ovnkube, agent }) => {
        // While the first pass waits on the runtime the socket answers (the pass has not ended yet).
        await waitForStatus(agent, () => curl(agent.scratch.socket, '/healthz').code === 200, '/healthz while the pass waits on CRI');
        const s = await waitForStatus(agent, (s) => s.reasonCodes[0] === 'RestartPathBroken', 'RestartPathBroken');
        assert.equal(s.phase, 'Waiting');
        assert.match(s.reasons[0]!, /^not starting the migration to local: ovnkube-node could not be restarted afterwards: CRI ListContainers on .*hanging\.sock: Deadline exceeded/);
        assert.deepEqual(ns.routes('10.96.0.0/16'), ['10.96.0.0/16 via 172.18.0.1 dev br-ex mtu 1400'], 'no migration started');
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
