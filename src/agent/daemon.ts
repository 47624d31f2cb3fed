// `ovn-gwmode-agent run`: the imperative shell around the owner loop. It wires the
// kernel, the mode file, /proc, the status socket, systemd and the signals.
//
// Signals: SIGTERM/SIGINT stop (STOPPING=1, the pass under way and a restart request on
// its way are awaited for at most STOP_GRACE_MS and then abandoned, the socket removed,
// exit 0: a CRI stop, which waits out the grace period, is cancelled); SIGHUP re-reads
// ovnkube.conf, os-release and the mode file; flags and variables are the process's and
// change only with a restart.
import type { Logger } from 'pino';
import type { RawRunOptions, Settings } from '../config/settings.js';
import type { Dataplane } from '../dataplane/types.js';
import type { StatusReport } from '../status/report.js';
import { StatusServer } from '../status/server.js';
import { Supervisor } from '../systemd/supervisor.js';
import type { Notifier } from '../systemd/notify.js';
import { Agent } from './agent.js';
import { LiveSettings, Views } from './daemon-parts.js';
import { missingCapabilities } from './capabilities.js';
import type { OvnkubeProbe } from './observe.js';
import type { PlannerConfig } from '../core/types.js';
import type { Clock } from '../clock.js';
import { Journal } from '../restart/journal.js';
import { readBootId } from '../restart/journal-time.js';
import { CriRestart, criDeadlineMs, NoRestart, SignalRestart, type RestartStrategy } from '../restart/strategy.js';
import { recorders } from '../core/recorder.js';
import { serveEvents } from '../events/http.js';
import { parseListenAddress } from '../metrics/address.js';
import { MetricsListener, serveMetrics } from '../metrics/server.js';

function strategyFor(s: Settings, stuckAfterMs: number): RestartStrategy {
  switch (s.restart) {
    case 'cri':
      return new CriRestart({
        endpoint: s.criEndpoint ?? undefined,
        namespace: s.ovnkubeNamespace,
        container: s.ovnkubeContainer,
        graceSeconds: Math.ceil(s.restartGraceMs / 1000),
        deadlineMs: criDeadlineMs(stuckAfterMs),
      });
    case 'signal':
      return new SignalRestart();
    case 'none':
      return new NoRestart();
  }
}

/** Bounded so that a stop always ends well inside systemd's 10 s expectation. */
const STOP_GRACE_MS = 5000;

export interface DaemonDeps {
  log: Logger;
  dataplane: Dataplane;
  notifier: Notifier;
  watchdogUsec: number | undefined;
  plannerConfig: (s: Settings) => PlannerConfig;
  probeFor: (s: Settings) => OvnkubeProbe;
  clock: Clock;
  /** The journal in the state directory; tests wrap it to inject crashes. */
  journal?: (dir: string) => Journal;
  exit: (code: number) => void;
}

export async function runDaemon(raw: RawRunOptions, initial: Settings, deps: DaemonDeps): Promise<Agent> {
  const { log, dataplane } = deps;
  const live = new LiveSettings(initial, {
    log,
    clock: deps.clock,
    plannerConfig: deps.plannerConfig,
    probeFor: deps.probeFor,
  });
  const supervisor = new Supervisor(deps.notifier, log.child({ component: 'systemd' }), deps.watchdogUsec, deps.clock);
  const strategy = strategyFor(initial, supervisor.stuckAfterMs());
  const missing = await missingCapabilities();
  for (const m of missing) log.warn(m);
  const views: Views = new Views(strategy.name, deps.clock, (): StatusReport => agent.status(), log);
  const agent: Agent = new Agent(
    {
      dataplane,
      strategy,
      journal: (deps.journal ?? ((dir) => new Journal(dir)))(initial.stateDir),
      probe: live.probe,
      log: log.child({ component: 'agent' }),
      readMode: live.readMode,
      watchMode: live.watchMode(),
      clock: deps.clock,
      bootId: readBootId(),
      random: Math.random,
      missing,
      recorder: recorders([views.metrics, views.history], (err) => log.error({ err }, 'a recorder failed')),
    },
    live.agentOptions(),
  );
  await agent.init();
  agent.onStatus(views.changed);
  // Throws SocketInUseError before anything is touched when another agent is live.
  const server = await StatusServer.listen(
    initial.socket,
    {
      status: () => agent.status(),
      statusVersion: () => views.version,
      alive: () => !supervisor.isStuck(agent),
      ready: () => agent.isReady(),
      extra: {
        '/metrics': (req, res) => serveMetrics(views.metrics, req, res),
        '/v1/events': (req, res) => serveEvents(views.history, req, res),
        '/v1/watch': (req, res) => views.watch.serve(req, res),
      },
    },
    { group: initial.socketGroup },
  );
  agent.onStatus((s) => views.onStatus(s, log));
  const metricsListener = await listenMetrics(initial, views, server, log);
  agent.onStatus((s) => supervisor.onStatus(s, agent.isReady()));
  log.info({ settings: { ...initial, serviceCidrs: initial.serviceCidrs.map((c) => c.text) } }, 'starting');
  agent.start();
  supervisor.start(agent);

  const stop = once(async (signal: string) => {
    log.info({ signal }, 'stopping');
    supervisor.stopping();
    const abandoned = await stopWithin(agent, STOP_GRACE_MS);
    if (abandoned && agent.waitingOn() === 'restart') {
      // A CRI stop waits out ovnkube-node's grace period (30 s): longer than this.
      log.warn(
        { graceMs: STOP_GRACE_MS },
        'a restart request is still under way: exiting cancels the call; the journal keeps it as requested, and the next agent waits up to --restart-timeout for a new ovnkube-node (asking again only if the same one still runs)',
      );
    } else if (abandoned) {
      log.warn({ graceMs: STOP_GRACE_MS }, 'the pass under way did not finish: abandoning it');
    }
    await server.close();
    await metricsListener?.close();
    strategy.close();
    dataplane.close();
    log.info('stopped');
    log.flush();
    deps.exit(0);
  });

  const reload = async () => {
    supervisor.reloading();
    log.info('reloading configuration');
    await live.reload(raw);
    await agent.reconfigure(live.agentOptions(), live.watchMode());
    views.changed();
    supervisor.onStatus(agent.status(), true);
  };

  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // A reload that fails keeps the agent running as it was: never a fatal rejection; reloads run one after another.
  const reloads = serial(reload, (err) => log.error({ err }, 'reload failed'));
  process.on('SIGHUP', reloads);
  return agent;
}

/** Serves /metrics over TCP when asked to; a failure closes the socket server too. */
async function listenMetrics(
  s: Settings,
  views: Views,
  server: StatusServer,
  log: Logger,
): Promise<MetricsListener | undefined> {
  if (s.metricsAddress === null) return undefined;
  try {
    const listener = await MetricsListener.listen(parseListenAddress(s.metricsAddress), views.metrics);
    log.info({ address: s.metricsAddress }, 'serving /metrics over TCP');
    return listener;
  } catch (err) {
    await server.close();
    throw err;
  }
}

/** Stops the agent; true when it did not finish within graceMs and was abandoned. */
async function stopWithin(agent: Agent, graceMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const abandoned = await Promise.race([
    agent.stop().then(() => false),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(true), graceMs))),
  ]);
  clearTimeout(timer);
  return abandoned;
}

/** The first call runs fn; the others do nothing. */
function once<A extends unknown[]>(fn: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  let called = false;
  return async (...args) => {
    if (called) return;
    called = true;
    await fn(...args);
  };
}

/** Each call runs fn after the previous one has ended; a failure is reported, never thrown. */
function serial(fn: () => Promise<void>, onError: (err: unknown) => void): () => void {
  let last: Promise<void> = Promise.resolve();
  return () => {
    last = last.then(fn).catch(onError);
  };
}
