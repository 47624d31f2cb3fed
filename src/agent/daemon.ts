// `ovn-gwmode-agent run`: the shell around the owner loop (kernel, mode file, /proc, status socket,
// systemd, signals). SIGTERM/SIGINT stop, waiting at most STOP_GRACE_MS for the pass under way and a
// restart request on its way; SIGHUP re-reads ovnkube.conf, os-release and the mode file.
import { readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { resolveSettings, type RawRunOptions, type Settings } from '../config/settings.js';
import { recorders } from '../core/recorder.js';
import type { PlannerConfig } from '../core/types.js';
import type { Dataplane } from '../dataplane/types.js';
import { EventHistory, serveEvents, WatchHub } from '../events/history.js';
import { parseListenAddress } from '../metrics/address.js';
import { AgentMetrics } from '../metrics/metrics.js';
import { MetricsListener, serveMetrics } from '../metrics/server.js';
import { ModeReader, watchModeSource } from '../mode/source.js';
import { Journal } from '../restart/journal.js';
import { readBootId } from '../restart/journal-time.js';
import { CriRestart, criDeadlineMs, NoRestart, SignalRestart, type RestartStrategy } from '../restart/strategy.js';
import type { StatusReport } from '../status/report.js';
import { StatusServer } from '../status/server.js';
import type { Notifier } from '../systemd/supervisor.js';
import { Supervisor } from '../systemd/supervisor.js';
import { VERSION } from '../version.js';
import { Agent, type AgentOptions } from './agent.js';
import type { OvnkubeProbe } from './engine.js';

function strategyFor(s: Settings, stuckAfterMs: number): RestartStrategy {
  if (s.restart === 'signal') return new SignalRestart();
  if (s.restart === 'none') return new NoRestart();
  return new CriRestart({
    endpoint: s.criEndpoint ?? undefined,
    namespace: s.ovnkubeNamespace,
    container: s.ovnkubeContainer,
    graceSeconds: Math.ceil(s.restartGraceMs / 1000),
    deadlineMs: criDeadlineMs(stuckAfterMs),
  });
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
  /** Tests wrap it to inject crashes. */
  journal?: (dir: string) => Journal;
  exit: (code: number) => void;
}

export async function runDaemon(raw: RawRunOptions, initial: Settings, deps: DaemonDeps): Promise<Agent> {
  const { log, dataplane, clock } = deps;
  let settings = initial;
  let probe = deps.probeFor(initial);
  // One reader per path: it remembers what it saw of a file being written (wall time against its mtime).
  const readerFor = (file: string) => new ModeReader(file, clock.wall.bind(clock), clock.now.bind(clock));
  let reader = readerFor(initial.modeFile);
  const supervisor = new Supervisor(deps.notifier, log.child({ component: 'systemd' }), deps.watchdogUsec, clock);
  const strategy = strategyFor(initial, supervisor.stuckAfterMs());
  const missing = await missingCapabilities();
  for (const m of missing) log.warn(m);
  const metrics = new AgentMetrics({ version: VERSION, strategy: strategy.name });
  const history = new EventHistory(clock, log.child({ component: 'events' }));
  const watch = new WatchHub(history, (): StatusReport => agent.status());
  // GET /status is serialised once per change: a pass or a reload.
  let served = 0;
  const agent: Agent = new Agent(
    {
      dataplane,
      strategy,
      journal: (deps.journal ?? ((dir) => new Journal(dir)))(initial.stateDir),
      probe: (hint) => probe(hint),
      log: log.child({ component: 'agent' }),
      readMode: () => {
        if (reader.source !== settings.modeFile) reader = readerFor(settings.modeFile);
        return reader.read();
      },
      watchMode: watchModeSource,
      clock,
      bootId: readBootId(),
      random: Math.random,
      missing,
      recorder: recorders([metrics, history], (err) => log.error({ err }, 'a recorder failed')),
    },
    agentOptions(initial, deps.plannerConfig),
  );
  await agent.init();
  agent.onStatus(() => served++);
  const server = await StatusServer.listen(
    initial.socket,
    {
      status: () => agent.status(),
      statusVersion: () => served,
      alive: () => !supervisor.isStuck(agent),
      ready: () => agent.isReady(),
      extra: {
        '/metrics': (req, res) => serveMetrics(metrics, req, res),
        '/v1/events': (req, res) => serveEvents(history, req, res),
        '/v1/watch': (req, res) => watch.serve(req, res),
      },
    },
    { group: initial.socketGroup },
  );
  // One view that throws must not silence the others, nor the loop.
  agent.onStatus((s) => {
    for (const view of [metrics, history, watch]) {
      try {
        view.onStatus(s);
      } catch (err) {
        log.error({ err }, 'a status view failed');
      }
    }
  });
  let metricsListener: MetricsListener | undefined;
  try {
    // /metrics over TCP when asked to (the `starting` line below names the address).
    if (initial.metricsAddress !== null)
      metricsListener = await MetricsListener.listen(parseListenAddress(initial.metricsAddress), metrics);
  } catch (err) {
    await server.close();
    throw err;
  }
  agent.onStatus((s) => supervisor.onStatus(s, agent.isReady()));
  log.info({ settings: { ...initial, serviceCidrs: initial.serviceCidrs.map((c) => c.text) } }, 'starting');
  agent.start();
  supervisor.start(agent);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    supervisor.stopping();
    // Not ref'd: the status server, closed below, keeps the process up meanwhile.
    const abandoned = await Promise.race([agent.stop().then(() => false), sleep(STOP_GRACE_MS, true, { ref: false })]);
    // A CRI stop waits out ovnkube-node's grace period (30 s): longer than this.
    const why =
      agent.waitingOn() === 'restart'
        ? 'a restart request is still under way: exiting cancels the call; the journal keeps it as requested, and the next agent waits up to --restart-timeout for a new ovnkube-node (asking again only if the same one still runs)'
        : 'the pass under way did not finish: abandoning it';
    if (abandoned) log.warn({ graceMs: STOP_GRACE_MS }, why);
    await server.close();
    await metricsListener?.close();
    strategy.close();
    dataplane.close();
    log.info('stopped');
    log.flush();
    deps.exit(0);
  };

  // The same flags (they change only with a restart); what ovnkube.conf and os-release give may change.
  const reload = async () => {
    supervisor.reloading();
    log.info('reloading configuration');
    try {
      settings = await resolveSettings(raw);
      probe = deps.probeFor(settings);
    } catch (err) {
      log.error({ err }, 'reload failed: keeping the running configuration');
    }
    await agent.reconfigure(agentOptions(settings, deps.plannerConfig));
    served++;
    supervisor.onStatus(agent.status(), true);
  };

  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // One after another; a failed one keeps the agent as it was.
  let reloads = Promise.resolve();
  process.on('SIGHUP', () => {
    reloads = reloads.then(reload).catch((err: unknown) => log.error({ err }, 'reload failed'));
  });
  return agent;
}

function agentOptions(s: Settings, plannerConfig: (s: Settings) => PlannerConfig): AgentOptions {
  return {
    config: plannerConfig(s),
    modePath: s.modeFile,
    resyncIntervalMs: s.resyncIntervalMs,
    restart: {
      strategy: s.restart,
      limit: { minIntervalMs: s.restartMinIntervalMs, maxPerHour: s.restartMaxPerHour },
      timeoutMs: s.restartTimeoutMs,
      settleMs: s.settleMs,
      retryBaseMs: 5000,
      retryMaxMs: s.restartMinIntervalMs,
      modeChecked: s.ovnkubeModeCheck === 'proc',
    },
  };
}

const CAP_NET_ADMIN = 12;

/**
 * What the process lacks, from /proc/self/status, so that the status says it before the first replace
 * fails. Only a warning: the replace's EPERM is the proof (a user namespace may grant it otherwise).
 */
export async function missingCapabilities(statusFile = '/proc/self/status'): Promise<string[]> {
  const text = await readFile(statusFile, 'utf8').catch(() => '');
  const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(text);
  if (!m || (BigInt(`0x${m[1]}`) >> BigInt(CAP_NET_ADMIN)) & 1n) return [];
  return [
    'CAP_NET_ADMIN is not in the effective capability set: the agent observes the routes but cannot replace them (grant NET_ADMIN: the DaemonSet or AmbientCapabilities=CAP_NET_ADMIN)',
  ];
}
