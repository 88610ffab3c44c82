/**
 * The load generator, run as its own process (forked by load.ts) so sending requests never shares an
 * event loop with the server under test or with the harness. Reads a LoadSpec file named by argv[2],
 * sends the presigned requests it names, and answers with one LoadResult over IPC.
 */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { Pool } from 'undici';
import type { LoadResult, LoadSpec, LoadWindow, WireRequest } from './load-protocol';
import { round3, summarize } from './stats';

async function saturate(spec: Extract<LoadSpec, { mode: 'saturate' }>, requests: WireRequest[]): Promise<LoadResult> {
  // One shared cursor across all connections: every request is sent once (autocannon's own request
  // list would start each connection at the first request, replaying nonces).
  let next = 0;
  const latencies: number[] = [];
  // The run spans the first request built to the last answer. autocannon acts on reaching `amount`
  // only at its next sampling tick (every second), so the time until it resolves would round every
  // run up to whole seconds: a run of 4.1 s counted as 5 s, and rates fell on a few discrete levels.
  let firstSentAt: number | undefined;
  let lastAnswerAt = 0;
  const result = await autocannon({
    url: spec.url,
    connections: spec.connections,
    amount: spec.amount,
    timeout: spec.timeoutSec,
    requests: [
      {
        method: 'POST',
        setupRequest: (req) => {
          firstSentAt ??= performance.now();
          const r = requests[next++];
          if (!r) throw new Error(`ran out of presigned requests after ${requests.length}`);
          return { ...req, method: 'POST', path: r.path, headers: r.headers, body: r.body };
        },
      },
    ],
    setupClient: (client) => {
      // autocannon's histogram keeps whole milliseconds; keep the exact figures for p50/p99.
      client.on('response', (_status: number, _bytes: number, responseTime: number) => {
        latencies.push(responseTime);
        lastAnswerAt = performance.now();
      });
    },
  });
  const durationSec = Math.max(0.001, (lastAnswerAt - (firstSentAt ?? lastAnswerAt)) / 1000);
  return {
    type: 'result',
    mode: 'saturate',
    sent: result.requests.sent,
    ok: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    durationSec: round3(durationSec),
    okPerSec: round3(result['2xx'] / durationSec),
    ack: summarize(latencies),
    cpuMs: 0,
  };
}

async function paced(spec: Extract<LoadSpec, { mode: 'paced' }>, requests: WireRequest[]): Promise<LoadResult> {
  const url = new URL(spec.url);
  const pool = new Pool(url.origin, { connections: spec.connections, pipelining: 1, keepAliveTimeout: 30_000 });
  const n = requests.length;
  const sentAt = new Float64Array(n);
  const latency = new Float64Array(n).fill(Number.NaN);
  const status = new Array<number>(n).fill(0);
  const lags = new Float64Array(n);
  const intervalMs = 1000 / spec.rate;
  const timeoutMs = spec.timeoutSec * 1000;
  let pending = 0;
  let sent = 0;
  let lastAnswer = 0;
  let drained: () => void = () => undefined;
  const allAnswered = new Promise<void>((resolve) => (drained = resolve));

  const send = (i: number, now: number, dueAt: number) => {
    const r = requests[i] as WireRequest;
    sentAt[i] = performance.timeOrigin + now;
    lags[i] = now - dueAt;
    pending++;
    pool
      .request({
        path: r.path,
        method: 'POST',
        headers: r.headers,
        body: r.body,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      })
      .then(async (res) => {
        await res.body.dump();
        lastAnswer = performance.now();
        latency[i] = lastAnswer - now;
        status[i] = res.statusCode;
      })
      .catch(() => undefined) // counted below: a request without an answer is an error
      .finally(() => {
        if (--pending === 0 && sent === n) drained();
      });
  };

  const t0 = performance.now() + 20;
  const deadline = t0 + n * intervalMs + timeoutMs;
  while (sent < n && performance.now() < deadline) {
    const now = performance.now();
    const due = Math.min(n, Math.floor((now - t0) / intervalMs) + 1);
    for (; sent < due; sent++) send(sent, performance.now(), t0 + sent * intervalMs);
    const wait = t0 + sent * intervalMs - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.floor(wait))));
  }
  if (pending === 0) drained();
  await Promise.race([allAnswered, new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
  await pool.destroy();

  const ok = status.filter((s) => s >= 200 && s < 300).length;
  const answered = status.filter((s) => s > 0).length;
  const durationSec = Math.max(0.001, (lastAnswer - t0) / 1000);
  const windows: LoadWindow[] = [];
  const perWindow = Math.max(1, Math.round(spec.windowSec * spec.rate));
  for (let from = 0; from < n; from += perWindow) {
    windows.push({
      fromSec: round3(from / spec.rate),
      ack: summarize(latency.subarray(from, Math.min(n, from + perWindow))),
    });
  }
  const lagSummary = summarize(lags.subarray(0, sent));
  return {
    type: 'result',
    mode: 'paced',
    sent,
    ok,
    non2xx: answered - ok,
    errors: sent - answered,
    durationSec: round3(durationSec),
    okPerSec: round3(ok / durationSec),
    ack: summarize(latency),
    cpuMs: 0,
    lagMs: { p99: lagSummary.p99, max: lagSummary.max },
    sentAtMs: Array.from(sentAt),
    status,
    windows,
  };
}

async function main(): Promise<void> {
  const specFile = process.argv[2];
  if (!specFile) throw new Error('usage: load-child <spec.json>');
  const spec = JSON.parse(readFileSync(specFile, 'utf8')) as LoadSpec;
  const requests = JSON.parse(readFileSync(spec.requestsFile, 'utf8')) as WireRequest[];
  const cpuBefore = process.cpuUsage();
  const result = spec.mode === 'saturate' ? await saturate(spec, requests) : await paced(spec, requests);
  const cpu = process.cpuUsage(cpuBefore);
  result.cpuMs = Math.round((cpu.user + cpu.system) / 1000);
  await new Promise<void>((resolve, reject) =>
    process.send?.(result, undefined, undefined, (err) => (err ? reject(err) : resolve())),
  );
  process.disconnect?.();
}

main().catch((err: Error) => {
  process.stderr.write(`load generator failed: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
