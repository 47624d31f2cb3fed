// A real Prometheus server (Debian's `prometheus` package) inside a test namespace,
// listening on that namespace's loopback only, with its storage in a scratch
// directory. It scrapes the given targets every second; queries go over its HTTP API
// with curl run in the same namespace. Stopped by its own pid, also when a test fails.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { TestContext } from 'node:test';
import type { Netns } from './netns.js';
import { tool } from './tools.js';
import { within } from './wait.js';

const prometheus = tool('prometheus', 'apt-get install prometheus');
export const skipWithoutPrometheus = (t: TestContext): boolean => prometheus.skipWithout(t);

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LISTEN = '127.0.0.1:9090';

export interface Sample {
  metric: Record<string, string>;
  value: number;
}

export class PrometheusServer {
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  output = '';

  constructor(
    private readonly ns: Netns,
    dir: string,
    targets: string[],
  ) {
    const data = path.join(dir, 'prometheus');
    mkdirSync(data, { recursive: true });
    const config = path.join(dir, 'prometheus.yml');
    writeFileSync(
      config,
      JSON.stringify({
        global: { scrape_interval: '1s', scrape_timeout: '900ms', evaluation_interval: '1s' },
        scrape_configs: [{ job_name: 'ovn-gwmode-agent', static_configs: [{ targets }] }],
      }),
    );
    this.child = spawn(
      'ip',
      [
        'netns',
        'exec',
        ns.name,
        'prometheus',
        `--config.file=${config}`,
        `--storage.tsdb.path=${data}`,
        `--web.listen-address=${LISTEN}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.child.stdout!.on('data', (d: Buffer) => (this.output += d.toString()));
    this.child.stderr!.on('data', (d: Buffer) => (this.output += d.toString()));
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => resolve(code)));
  }

  private get(urlPath: string, params: Record<string, string> = {}): { code: number; body: string } {
    const args = [
      'netns',
      'exec',
      this.ns.name,
      'curl',
      '-s',
      '--max-time',
      '5',
      '-w',
      '\n%{http_code}',
      '-G',
      `http://${LISTEN}${urlPath}`,
    ];
    for (const [k, v] of Object.entries(params)) args.push('--data-urlencode', `${k}=${v}`);
    const r = spawnSync('ip', args, { encoding: 'utf8' });
    const lines = (r.stdout ?? '').trimEnd().split('\n');
    const code = Number(lines.pop());
    return { code, body: lines.join('\n') };
  }

  /** An instant query: the samples of its vector result. */
  query(promql: string): Sample[] {
    const r = this.get('/api/v1/query', { query: promql });
    if (r.code !== 200) throw new Error(`query ${promql}: HTTP ${r.code}: ${r.body}`);
    const body = JSON.parse(r.body) as {
      data: { resultType: string; result: Array<{ metric: Record<string, string>; value: [number, string] }> };
    };
    return body.data.result.map((s) => ({ metric: s.metric, value: Number(s.value[1]) }));
  }

  /** Waits (bounded) until Prometheus answers ready. */
  async ready(): Promise<void> {
    for (let i = 0; i < 240; i++) {
      if (this.child.exitCode !== null) break;
      if (this.get('/-/ready').code === 200) return;
      await pause(250);
    }
    throw new Error(`prometheus never became ready:\n${this.output.slice(-4000)}`);
  }

  /** Polls an instant query until pred holds on its samples (bounded: a safety net, not a speed assertion). */
  async until(promql: string, pred: (s: Sample[]) => boolean, what: string): Promise<Sample[]> {
    let last: Sample[] = [];
    for (let i = 0; i < 240; i++) {
      last = this.query(promql);
      if (pred(last)) return last;
      await pause(250);
    }
    throw new Error(
      `Prometheus never showed ${what}; ${promql} gave ${JSON.stringify(last)}\nprometheus output:\n${this.output.slice(-2000)}`,
    );
  }

  async stop(): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGTERM');
    await within(this.exited, 20_000, 'prometheus stops on SIGTERM').catch(async () => {
      this.child.kill('SIGKILL');
      await this.exited;
    });
  }
}
