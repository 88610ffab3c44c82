import type { ChildProcess } from 'node:child_process';
import type { SinkCommand, SinkReply, SinkStats } from './sink-protocol';
import { forkBench, sleep, stopChild, waitForMessage } from './processes';

export interface DeliveryWait {
  stats: SinkStats;
  /** False when the wait ended on the time bound or on no progress, not on having every event. */
  complete: boolean;
}

/** The harness's handle on the sink process. */
export class Sink {
  private seq = 0;

  private constructor(
    private readonly child: ChildProcess,
    readonly url: string,
  ) {}

  static async start(): Promise<Sink> {
    const child = forkBench('harness/sink', [], {});
    const ready = await waitForMessage<{ type: 'ready'; port: number }>(child, 'ready', 20_000);
    return new Sink(child, `http://127.0.0.1:${ready.port}/hook`);
  }

  private async ask(command: SinkCommand['command']): Promise<SinkReply> {
    const seq = ++this.seq;
    const reply = waitForMessage<SinkReply>(this.child, 'reply', 30_000);
    this.child.send({ seq, command } satisfies SinkCommand);
    const answer = await reply;
    if (answer.seq !== seq) throw new Error(`sink answered ${answer.seq} to ${seq}`);
    return answer;
  }

  async stats(): Promise<SinkStats> {
    return (await this.ask('stats')).stats;
  }

  async reset(): Promise<void> {
    await this.ask('reset');
  }

  async arrivals(): Promise<Map<string, number>> {
    return new Map((await this.ask('arrivals')).arrivals ?? []);
  }

  /**
   * Polls until `expected` distinct events arrived, the time bound passes, or nothing new arrived for
   * `stallMs` (after at least one arrival, or from the start when `firstWithinMs` passes with none).
   */
  async waitForUnique(
    expected: number,
    opts: { timeoutMs: number; stallMs: number; firstWithinMs: number },
  ): Promise<DeliveryWait> {
    const started = Date.now();
    let last = await this.stats();
    let lastProgress = Date.now();
    while (last.unique < expected) {
      const now = Date.now();
      if (now - started > opts.timeoutMs) return { stats: last, complete: false };
      if (last.unique === 0 && now - started > opts.firstWithinMs) return { stats: last, complete: false };
      if (last.unique > 0 && now - lastProgress > opts.stallMs) return { stats: last, complete: false };
      await sleep(50);
      const next = await this.stats();
      if (next.unique > last.unique) lastProgress = Date.now();
      last = next;
    }
    return { stats: last, complete: true };
  }

  async stop(): Promise<void> {
    await stopChild(this.child, 2000);
  }
}
